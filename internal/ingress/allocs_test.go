package ingress

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddytest"

	"github.com/hookline/hookline/internal/testing/caddyrun"
	"github.com/hookline/hookline/storage"
)

// allocsSecret signs the requests of TestHotPathAllocs.
const allocsSecret = "allocs-secret"

// allocsWriter is a reusable http.ResponseWriter: the guard counts the
// handler's allocations, not a recorder's.
type allocsWriter struct {
	h      http.Header
	status int
	body   bytes.Buffer
}

func (w *allocsWriter) Header() http.Header         { return w.h }
func (w *allocsWriter) WriteHeader(status int)      { w.status = status }
func (w *allocsWriter) Write(p []byte) (int, error) { return w.body.Write(p) }

func (w *allocsWriter) reset() {
	clear(w.h)
	w.status = 0
	w.body.Reset()
}

// TestHotPathAllocs guards the allocations per request of the ingress's
// hot paths (issue 12): a signed 1 KiB event that is new (verified,
// claimed and stored durably on the embedded store), its duplicate
// answered from the L1 cache, and a request whose signature does not
// match. The handler is provisioned in a running Caddy (caddytest), with
// that Caddy's webhooks app and store, and its ServeHTTP is called
// directly with one reused request and writer, so what is counted is the
// handler's own work and the app's and store's under it: not net/http's
// nor Caddy's routing. The forward_to destination is paused (a hold) so
// no delivery runs in the background while counting.
//
// testing.AllocsPerRun counts every allocation of the process while it
// runs (the store's commit goroutine's too), averaged over the runs and
// rounded down; the bounds are what was measured (in each case's
// comment), a little above for the new event whose count the store makes
// vary, so an added allocation on the duplicate and signature paths fails
// the test (checked: one injected make([]byte, 8) in ServeHTTP made them
// 15 and 16).
func TestHotPathAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Caddy")
	}
	if raceEnabled {
		// the race detector allocates on its own (1-2 more per request
		// here); scripts/test runs this guard again without it
		t.Skip("allocation counts differ under the race detector: scripts/test runs this test without -race")
	}
	// ports of its own: the end-to-end suite (internal/testing/integration)
	// may run at the same time, on caddytest's
	const adminPort, httpPort = 2985, 9085
	tester := caddytest.NewTester(t).WithDefaultOverrides(caddytest.Config{AdminPort: adminPort})
	tester.InitServer(fmt.Sprintf(`{
	admin localhost:%d
	http_port %d
	https_port 9485
	grace_period 1ns
	skip_install_trust
	webhooks {
		storage embedded %s
	}
}
http://localhost:%d {
	respond "ok" 200
}
`, adminPort, httpPort, filepath.Join(t.TempDir(), "allocs.db"), httpPort), "caddyfile")
	caddyrun.UnloadAtEnd(t, adminPort)

	cctx := caddy.ActiveContext()
	raw, _ := json.Marshal(map[string]any{
		"source":         "allocs",
		"verify":         map[string]any{"scheme": "hmac", "secrets": []string{allocsSecret}, "header": "X-Signature", "prefix": "sha256="},
		"forward_to":     "http://127.0.0.1:1/in",
		"id_from":        []map[string]string{{"kind": "header", "arg": "Idempotency-Key"}},
		"block_failures": map[string]any{"failures": 1 << 30, "window": "1h"}, // counted, never blocking: one path
	})
	mod, err := cctx.LoadModuleByID("http.handlers.webhook_ingress", raw)
	if err != nil {
		t.Fatal(err)
	}
	h := mod.(*Ingress)
	t.Cleanup(func() { _ = h.Cleanup() })
	if err := h.app.SetPause(context.Background(), storage.Pause{Source: "allocs", Destination: storage.DefaultDestination, Accept: true}); err != nil {
		t.Fatal(err)
	}

	body := append(append([]byte(`{"d":"`), bytes.Repeat([]byte("x"), 1000)...), `"}`...)
	m := hmac.New(sha256.New, []byte(allocsSecret))
	m.Write(body)
	goodSig := "sha256=" + hex.EncodeToString(m.Sum(nil))
	badSig := "sha256=" + hex.EncodeToString(make([]byte, sha256.Size))

	const runs = 200
	// AllocsPerRun calls f runs+1 times, the bytes' loop runs times: one id
	// per call, made beforehand
	ids := make([]string, 2*runs+1)
	for i := range ids {
		ids[i] = "evt-allocs-" + strconv.Itoa(i)
	}

	rd := bytes.NewReader(body)
	repl := caddy.NewReplacer()
	req, err := http.NewRequestWithContext(context.WithValue(context.Background(), caddy.ReplacerCtxKey, repl),
		http.MethodPost, "http://localhost/hooks/allocs", io.NopCloser(rd))
	if err != nil {
		t.Fatal(err)
	}
	req.RemoteAddr = "192.0.2.1:1234"
	req.Header = http.Header{
		"Content-Type":    {"application/json"},
		"X-Signature":     {goodSig},
		"Idempotency-Key": {"evt-dup"},
	}
	w := &allocsWriter{h: http.Header{}}
	serve := func(sig, id string, want int) {
		rd.Reset(body)
		req.ContentLength = int64(len(body))
		req.Header["X-Signature"][0] = sig
		req.Header["Idempotency-Key"][0] = id
		w.reset()
		if err := h.ServeHTTP(w, req, nil); err != nil {
			t.Fatal(err)
		}
		if w.status != want {
			t.Fatalf("status %d, want %d: %s", w.status, want, w.body.Bytes())
		}
	}
	serve(goodSig, "evt-dup", http.StatusAccepted) // the duplicates' original
	h.app.Seen().Wait()                            // in the L1 cache before it is counted

	for _, c := range []struct {
		name string
		// max is the bound asserted; measured is what this change left, in
		// allocs/op (go test -run HotPathAllocs -v prints it)
		max  float64
		call func(i int)
	}{
		// measured 273-281 (the store's commit goroutine varies; 296-299
		// before the ingress answers were written directly), then 304-306
		// once the embedded store kept its counters in the enqueue's
		// transaction, then 313-316 once its append-mostly buckets split
		// at 90% (CI met 316 against a bound of 315), then 317-322 once a
		// lone delivery's payload got a record of its own (one more put,
		// the record encoded; the bytes fell from 79k to 73k a request,
		// the body no longer base64 in JSON), then 265-266 after the
		// issue-12 work on the embedded store (one claim key per event, leases in
		// memory) and audit fields allocated once: the bound comes down to
		// 290, the same room above it as before. On Pebble: 108-182 in
		// 9 runs (its commit pipeline and background goroutines vary it
		// more than bbolt's tree did): the bound comes down to 220. A
		// change that left this test's source ungated (its jobs leased
		// and handed back while held) made it 228-314, which 290 missed
		// half the time. An added allocation in the handler is caught by
		// the two exact bounds below.
		{"new event", 220, func(i int) { serve(goodSig, ids[i], http.StatusAccepted) }},
		// measured 14 in every run (29 before); AllocsPerRun rounds down
		// the average, so the bound at 14 still leaves under one per request
		// of slack for background noise, and one more allocation fails it
		{"duplicate from L1", 14, func(int) { serve(goodSig, "evt-dup", http.StatusOK) }},
		// measured 15 in every run (22 before), bound as above
		{"signature mismatch", 15, func(int) { serve(badSig, "evt-dup", http.StatusUnauthorized) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			i := 0
			got := testing.AllocsPerRun(runs, func() { c.call(i); i++ })
			// the bytes, for the record only (not asserted)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for j := range runs {
				c.call(runs + 1 + j)
			}
			runtime.ReadMemStats(&after)
			t.Logf("%s: %.0f allocs/op, %d B/op", c.name, got, (after.TotalAlloc-before.TotalAlloc)/runs)
			if got > c.max {
				t.Errorf("%s: %.0f allocations per request, want at most %.0f: something on the hot path allocates again", c.name, got, c.max)
			}
		})
	}
}
