//go:build hookline_ceiling

package storagemodules

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/hookline/hookline/storage"
)

// TestCeilingStorage covers `storage ceiling` (only in a build with the
// tag hookline_ceiling: scripts/test runs it so).
func TestCeilingStorage(t *testing.T) {
	tests := []struct {
		input, wantPath, wantJournal, wantErr string
		unsynced                              bool
	}{
		{input: "ceiling", wantErr: "wrong argument count"},
		{input: "ceiling /tmp/x.db", wantPath: "/tmp/x.db"},
		{input: "ceiling /tmp/x.db /y", wantErr: "wrong argument count"},
		{input: "ceiling /x.db {\n\tjournal /j\n}", wantPath: "/x.db", wantJournal: "/j"},
		{input: "ceiling /x.db {\n\tjournal /j\n\tunsynced_outcomes\n}", wantPath: "/x.db", wantJournal: "/j", unsynced: true},
		{input: "ceiling /x.db {\n\tunsynced_outcomes\n}", wantErr: "needs a journal"},
		{input: "ceiling /x.db {\n\tjournal\n}", wantErr: "wrong argument count"},
		{input: "ceiling /x.db {\n\tsync\n}", wantErr: "unknown storage ceiling option"},
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
			if s.Path != tt.wantPath || s.Journal != tt.wantJournal || s.UnsyncedOutcomes != tt.unsynced {
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
}
