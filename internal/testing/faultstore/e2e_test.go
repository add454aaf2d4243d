package faultstore_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"

	_ "github.com/caddyserver/caddy/v2/modules/standard"
	_ "github.com/hookline/hookline"
	"github.com/hookline/hookline/internal/testing/caddyrun"
	"github.com/hookline/hookline/internal/testing/faultstore"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/storagetest"
)

// Ports of this package's Caddy, distinct from the other packages' (their
// tests may run at the same time).
const (
	adminPort = 2987
	httpPort  = 9087
)

// startCaddy runs Caddy on a faultstore (a fresh file) with the given
// webhooks options and site routes, and returns the store's fault switch.
func startCaddy(t *testing.T, options, routes string) *storagetest.Faulty {
	t.Helper()
	name := "e2e-" + t.Name()
	tester := caddytest.NewTester(t).WithDefaultOverrides(caddytest.Config{AdminPort: adminPort})
	tester.InitServer(fmt.Sprintf(`{
	admin localhost:%d
	http_port %d
	https_port 9487
	grace_period 1ns
	skip_install_trust
	webhooks {
		storage faultstore %s %s
		%s
	}
}
http://localhost:%d {
%s
}
`, adminPort, httpPort, name, filepath.Join(t.TempDir(), "events.db"), options, httpPort, routes), "caddyfile")
	caddyrun.UnloadAtEnd(t, adminPort)
	f, err := faultstore.Get(name, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestIngressWithFaultyStore drives the ingress through a real Caddy while
// the store fails, hangs and loses replies: every failure is a 503
// SERVICE_UNAVAILABLE JSON answer with Retry-After, a hung store is given
// up within the ingress's store timeout, and every 2xx is stored.
func TestIngressWithFaultyStore(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer up.Close()
	f := startCaddy(t, "lease 30s", fmt.Sprintf(`
	webhook_ingress /hooks/gen gen {
		verify none
		forward_to %s/in
		id_from header Idempotency-Key
	}`, up.URL))
	defer f.ClearAll()
	client := &http.Client{Timeout: time.Minute}
	post := func(id string) (status int, body map[string]any, hdr http.Header, took time.Duration) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("http://localhost:%d/hooks/gen", httpPort), bytes.NewReader([]byte(`{"n":1}`)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", id)
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		took = time.Since(start)
		raw, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Fatalf("answer %d is not JSON: %q", resp.StatusCode, raw)
		}
		// never a 2xx unless stored
		if resp.StatusCode/100 == 2 {
			if _, err := f.Inner().Lookup(t.Context(), "gen", id); err != nil {
				t.Fatalf("answered %d for %s, but it is not stored: %v", resp.StatusCode, id, err)
			}
		}
		return resp.StatusCode, body, resp.Header, took
	}
	want503 := func(what string, status int, body map[string]any, hdr http.Header) {
		t.Helper()
		if status != http.StatusServiceUnavailable || body["code"] != "SERVICE_UNAVAILABLE" || hdr.Get("Retry-After") == "" {
			t.Fatalf("%s: %d %v Retry-After %q, want 503 SERVICE_UNAVAILABLE with Retry-After", what, status, body, hdr.Get("Retry-After"))
		}
		if strings.Contains(fmt.Sprint(body), "injected") {
			t.Fatalf("%s: internals in the answer: %v", what, body)
		}
	}
	stored := func(id string) bool {
		t.Helper()
		_, err := f.Inner().Lookup(t.Context(), "gen", id)
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}

	if status, body, _, _ := post("evt_ok"); status != http.StatusAccepted {
		t.Fatalf("healthy store: %d %v", status, body)
	}

	t.Run("store error", func(t *testing.T) {
		f.Fail(storagetest.MethodEnqueue, nil)
		status, body, hdr, _ := post("evt_err")
		want503("store error", status, body, hdr)
		if stored("evt_err") {
			t.Fatal("stored although the store failed")
		}
		f.Clear(storagetest.MethodEnqueue)
		if status, body, _, _ := post("evt_err"); status != http.StatusAccepted {
			t.Fatalf("resend after recovery: %d %v", status, body)
		}
	})

	t.Run("store hangs", func(t *testing.T) {
		f.Stall(storagetest.MethodEnqueue)
		status, body, hdr, took := post("evt_stall")
		want503("store hangs", status, body, hdr)
		// the ingress gives the store 10s
		if took > 15*time.Second {
			t.Errorf("answered after %v, want within the store timeout", took)
		}
		if f.Stalled(storagetest.MethodEnqueue) != 0 {
			t.Error("the stalled call did not give up with its request")
		}
		f.Clear(storagetest.MethodEnqueue)
		if stored("evt_stall") {
			t.Fatal("stored although the call gave up before the store")
		}
		if status, body, _, _ := post("evt_stall"); status != http.StatusAccepted {
			t.Fatalf("resend after recovery: %d %v", status, body)
		}
	})

	t.Run("lost reply", func(t *testing.T) {
		f.Set(storagetest.MethodEnqueue, storagetest.Fault{LoseReply: true, Times: 1})
		status, body, hdr, _ := post("evt_lost")
		want503("lost reply", status, body, hdr)
		if !stored("evt_lost") {
			t.Fatal("the enqueue whose reply was lost did not run")
		}
		// the provider resends: a duplicate, answered as such (at least once)
		status, body, _, _ = post("evt_lost")
		if status != http.StatusOK || body["message"] != "Webhook already processed" {
			t.Fatalf("resend: %d %v, want the duplicate answer", status, body)
		}
	})
}
