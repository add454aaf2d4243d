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
	fs := pflag.NewFlagSet("retry", pflag.ContinueOnError)
	fs.String("address", "", "")
	fs.String("config", "", "")
	fs.String("adapter", "", "")
	fs.Bool("json", false, "")
	retryFlags(fs)
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
