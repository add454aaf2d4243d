//go:build hookline_ceiling

package storagemodules

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
)

// TestCeilingStorage covers `storage ceiling` (only in a build with the
// tag hookline_ceiling: scripts/test runs it so).
func TestCeilingStorage(t *testing.T) {
	tests := []struct {
		input, wantPath, wantJournal, wantRedis, wantErr string
		unsynced                                         bool
	}{
		{input: "ceiling", wantErr: "wrong argument count"},
		{input: "ceiling /tmp/x.db", wantPath: "/tmp/x.db"},
		{input: "ceiling /tmp/x.db /y", wantErr: "wrong argument count"},
		{input: "ceiling /x.db {\n\tjournal /j\n}", wantPath: "/x.db", wantJournal: "/j"},
		{input: "ceiling /x.db {\n\tjournal /j\n\tunsynced_outcomes\n}", wantPath: "/x.db", wantJournal: "/j", unsynced: true},
		{input: "ceiling /x.db {\n\tunsynced_outcomes\n}", wantErr: "needs a journal"},
		{input: "ceiling /x.db {\n\tjournal\n}", wantErr: "wrong argument count"},
		{input: "ceiling /x.db {\n\tsync\n}", wantErr: "unknown storage ceiling option"},
		{input: "ceiling /x.db {\n\tredis 127.0.0.1:6379\n}", wantPath: "/x.db", wantRedis: "127.0.0.1:6379"},
		{input: "ceiling /x.db {\n\tredis\n}", wantErr: "wrong argument count"},
		{input: "ceiling /x.db {\n\tredis a:1\n\tjournal /j\n}", wantErr: "takes no journal"},
	}
	for _, tt := range tests {
		t.Run(tt.input, func(t *testing.T) {
			s := new(CeilingStorage)
			err := s.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tt.input))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Path != tt.wantPath || s.Journal != tt.wantJournal || s.UnsyncedOutcomes != tt.unsynced || s.Redis != tt.wantRedis {
				t.Errorf("got %+v", s)
			}
		})
	}

	dir := t.TempDir()
	s := &CeilingStorage{Path: filepath.Join(dir, "events.db"), Journal: filepath.Join(dir, "journal")}
	if err := s.Provision(caddy.Context{}); err != nil {
		t.Fatal(err)
	}
	st, err := s.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ev := &storage.Event{ID: "a", EventID: "a", Dedupe: true, Source: "src", Upstream: "http://127.0.0.1:1/", ReceivedAt: time.Now()}
	if _, err := st.Enqueue(t.Context(), ev, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if c, err := st.Counts(t.Context()); err != nil || c.Queued != 1 {
		t.Fatalf("Counts = %+v, %v", c, err)
	}

	// the queue in Redis: the event is there, and Close closes the client
	srv := redistest.Start(t)
	r := &CeilingStorage{Path: filepath.Join(dir, "events-redis.db"), Redis: srv.Addr}
	if err := r.Provision(caddy.Context{}); err != nil {
		t.Fatal(err)
	}
	rst, err := r.Open()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rst.Enqueue(t.Context(), ev, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if c, err := rst.Counts(t.Context()); err != nil || c.Queued != 1 {
		t.Fatalf("Counts in Redis = %+v, %v", c, err)
	}
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rc.Close()
	if n, err := rc.Exists(t.Context(), "{ceiling}:q").Result(); err != nil || n != 1 {
		t.Errorf("the queue's key in Redis: %d, %v", n, err)
	}
	if err := rst.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rst.(ownedRedisQueue).c.Ping(t.Context()).Err(); !errors.Is(err, redis.ErrClosed) {
		t.Errorf("the client after Close: %v, want closed", err)
	}
}
