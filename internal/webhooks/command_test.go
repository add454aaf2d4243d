package webhooks

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/pflag"

	"github.com/hookline/hookline/internal/operator"
)

// retryCmdFlags parses args as `caddy webhooks dlq retry` would.
func retryCmdFlags(t *testing.T, args ...string) caddycmd.Flags {
	t.Helper()
	return cmdFlags(t, retryFlags, args...)
}

// cmdFlags parses args as a subcommand with the flags of add would.
func cmdFlags(t *testing.T, add func(*pflag.FlagSet), args ...string) caddycmd.Flags {
	t.Helper()
	fs := pflag.NewFlagSet("cmd", pflag.ContinueOnError)
	fs.String("address", "", "")
	fs.String("config", "", "")
	fs.String("adapter", "", "")
	fs.Bool("json", false, "")
	add(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return caddycmd.Flags{FlagSet: fs}
}

// TestDLQRetryNeedsIDFilterOrAll: `caddy webhooks dlq retry` with neither
// an id nor a filter refuses (before calling the admin API) unless --all.
func TestDLQRetryNeedsIDFilterOrAll(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, r.Method+" "+r.URL.Path+" "+string(b))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(operator.BulkRetryAnswer{Retried: []string{}, SkippedDelivered: []string{}})
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")

	for _, args := range [][]string{{}, {"--limit", "10"}} {
		_, err := cmdDLQRetry(retryCmdFlags(t, append([]string{"--address", addr}, args...)...))
		if !errors.Is(err, errRetryNoFilter) {
			t.Fatalf("retry %v: err %v, want a refusal", args, err)
		}
		if !strings.Contains(err.Error(), "--all") {
			t.Errorf("the refusal does not say how to proceed: %v", err)
		}
	}
	mu.Lock()
	if len(bodies) != 0 {
		t.Fatalf("the admin API was called: %v", bodies)
	}
	mu.Unlock()

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--all"}, `"source":""`},
		{[]string{"--source", "stripe"}, `"source":"stripe"`},
		{[]string{"--status", "investigating"}, `"status":"investigating"`},
		{[]string{"--since", "1h"}, `"since":"1h"`},
		{[]string{"--dry-run"}, `"dry_run":true`},
	} {
		mu.Lock()
		bodies = nil
		mu.Unlock()
		if _, err := cmdDLQRetry(retryCmdFlags(t, append([]string{"--address", addr, "--json"}, tc.args...)...)); err != nil {
			t.Fatalf("retry %v: %v", tc.args, err)
		}
		mu.Lock()
		if len(bodies) != 1 || !strings.HasPrefix(bodies[0], "POST /webhooks/dlq/retry ") || !strings.Contains(bodies[0], tc.want) {
			t.Errorf("retry %v: admin calls %v, want one bulk retry with %s", tc.args, bodies, tc.want)
		}
		mu.Unlock()
	}
}

// TestReplayCommand: the flags of `caddy webhooks replay` become its
// request body, sent to the replay route.
func TestReplayCommand(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, r.Method+" "+r.URL.Path+" "+string(b))
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(operator.ReplayAnswer{Replayed: []operator.ReplayedEvent{}})
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	for _, tc := range []struct {
		args []string
		want operator.ReplayRequest
	}{
		{nil, operator.ReplayRequest{}},
		{[]string{"--source", "stripe"}, operator.ReplayRequest{Source: "stripe"}},
		{[]string{"--type", "charge.succeeded"}, operator.ReplayRequest{Type: "charge.succeeded"}},
		{[]string{"--since", "24h", "--until", "2026-01-02T03:04:05Z"}, operator.ReplayRequest{Since: "24h", Until: "2026-01-02T03:04:05Z"}},
		{[]string{"--limit", "7"}, operator.ReplayRequest{Limit: 7}},
		{[]string{"--dry-run"}, operator.ReplayRequest{DryRun: true}},
		{[]string{"--source", "s", "--type", "t", "--since", "1h", "--limit", "1000", "--dry-run"},
			operator.ReplayRequest{Source: "s", Type: "t", Since: "1h", Limit: 1000, DryRun: true}},
	} {
		got = nil
		if _, err := cmdReplay(cmdFlags(t, replayFlags, append([]string{"--address", addr, "--json"}, tc.args...)...)); err != nil {
			t.Fatalf("replay %v: %v", tc.args, err)
		}
		body, _ := json.Marshal(tc.want)
		if want := "POST /webhooks/events/replay " + string(body); len(got) != 1 || got[0] != want {
			t.Errorf("replay %v: admin calls %q, want %q", tc.args, got, want)
		}
	}
}
