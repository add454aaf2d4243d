package webhooks

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/hookline/hookline/internal/operator"
	"github.com/hookline/hookline/storage"
)

// TestTenantEraseCommand: `caddy webhooks tenants erase <source> <tenant>`
// sends DELETE on the tenant's route (the tenant escaped, its pace in the
// body), --wait follows it with GET to its end, a failed one is the
// command's error, and `status` only reads.
func TestTenantEraseCommand(t *testing.T) {
	tenantPoll = time.Millisecond
	defer func() { tenantPoll = time.Second }()
	var got, bodies []string
	final := "done"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.EscapedPath())
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		w.Header().Set("Content-Type", "application/json")
		a := operator.TenantErasureAnswer{TenantErasure: storage.TenantErasure{Source: "shop", Tenant: "a b/c", State: "running", Erased: len(got)}}
		if len(got) >= 3 {
			a.State = final
			if final == "failed" {
				a.Error = "the store failed: start it again to resume it"
			}
		}
		if r.Method == "DELETE" {
			w.WriteHeader(http.StatusAccepted)
			a.Started = true
		}
		_ = json.NewEncoder(w).Encode(a)
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	flags := func(fs *pflag.FlagSet) {
		fs.Bool("wait", false, "")
		fs.Int("batch", 0, "")
		fs.Duration("pause", 0, "")
	}
	if _, err := cmdTenantErase("DELETE")(cmdFlags(t, flags, "--address", addr, "--wait", "shop", "a b/c")); err != nil {
		t.Fatalf("tenants erase --wait: %v", err)
	}
	if want := []string{"DELETE /webhooks/tenants/shop/a%20b%2Fc", "GET /webhooks/tenants/shop/a%20b%2Fc", "GET /webhooks/tenants/shop/a%20b%2Fc"}; !slices.Equal(got, want) {
		t.Errorf("admin calls %q, want %q", got, want)
	}
	if bodies[0] != "" {
		t.Errorf("an erasure without --batch or --pause sent %q, want no body", bodies[0])
	}
	got, bodies = nil, nil
	if _, err := cmdTenantErase("DELETE")(cmdFlags(t, flags, "--address", addr, "--batch", "20", "--pause", "250ms", "shop", "x")); err != nil {
		t.Fatal(err)
	}
	if len(bodies) != 1 || bodies[0] != `{"batch":20,"pause":"250ms"}` {
		t.Errorf("tenants erase --batch 20 --pause 250ms sent %q", bodies)
	}
	got, final = nil, "failed"
	if _, err := cmdTenantErase("DELETE")(cmdFlags(t, flags, "--address", addr, "--wait", "shop", "x")); err == nil || !strings.Contains(err.Error(), "start it again") {
		t.Errorf("a failed erasure: %v", err)
	}
	got = nil
	if _, err := cmdTenantErase("GET")(cmdFlags(t, flags, "--address", addr, "shop", "x")); err != nil || len(got) != 1 || got[0] != "GET /webhooks/tenants/shop/x" {
		t.Errorf("tenants status: %q, %v", got, err)
	}

	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 1, ' ', 0)
	printTenantErasure(tw, &operator.TenantErasureAnswer{TenantErasure: storage.TenantErasure{Source: "shop", Tenant: "alpha", State: "done", Erased: 12, Deliveries: 13, DLQEntries: 2}})
	tw.Flush()
	for _, w := range []string{"tenant         alpha", "state          done", "12 events (13 deliveries, 2 DLQ entries)"} {
		if !strings.Contains(buf.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, buf.String())
		}
	}
}

// TestTenantPauseCommand: `caddy webhooks tenants pause|resume <source>
// <tenant>` post on the tenant's routes (the tenant escaped), the pause
// with its mode, reason and end.
func TestTenantPauseCommand(t *testing.T) {
	var got, bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.EscapedPath())
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		w.Header().Set("Content-Type", "application/json")
		a := operator.PauseAnswer{Source: "shop", Tenant: "a b/c"}
		if strings.HasSuffix(r.URL.Path, "/pause") {
			a.Paused, a.Pause = true, &operator.PauseInfo{Source: "shop", Tenant: "a b/c", Mode: "hold", Accept: true}
		}
		_ = json.NewEncoder(w).Encode(a)
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	flags := func(fs *pflag.FlagSet) {
		fs.String("reason", "", "")
		fs.String("for", "", "")
		fs.Bool("accept", false, "")
	}
	if _, err := cmdPause("pause", true)(cmdFlags(t, flags, "--address", addr, "--accept", "--reason", "abuse", "--for", "2h", "shop", "a b/c")); err != nil {
		t.Fatalf("tenants pause: %v", err)
	}
	if _, err := cmdPause("resume", true)(cmdFlags(t, func(*pflag.FlagSet) {}, "--address", addr, "shop", "a b/c")); err != nil {
		t.Fatalf("tenants resume: %v", err)
	}
	if want := []string{"POST /webhooks/tenants/shop/a%20b%2Fc/pause", "POST /webhooks/tenants/shop/a%20b%2Fc/resume"}; !slices.Equal(got, want) {
		t.Errorf("admin calls %q, want %q", got, want)
	}
	if bodies[0] != `{"reason":"abuse","for":"2h","accept":true}` || bodies[1] != "" {
		t.Errorf("bodies %q", bodies)
	}
}
