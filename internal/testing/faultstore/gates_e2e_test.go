package faultstore_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

// TestDeliveryGatesThroughCaddy runs a real Caddy on a store that counts
// what the workers ask of it, and checks that waiting costs no store work:
// a rate-limited source is paced when leased (never leased and handed
// back, never holding back another source), a paused source's backlog is
// not leased until resume, and a lease shorter than the default timeout
// (lease 5s, no timeout) is accepted and delivers each event with one lease,
// and an upstream whose breaker is open is not leased for until it closes.
func TestDeliveryGatesThroughCaddy(t *testing.T) {
	var mu sync.Mutex
	arrived := map[string][]time.Time{}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		arrived[r.URL.Path] = append(arrived[r.URL.Path], time.Now())
		mu.Unlock()
	}))
	defer up.Close()
	// another host, failing until told otherwise: its breaker opens
	var downOK atomic.Bool
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		arrived[r.URL.Path] = append(arrived[r.URL.Path], time.Now())
		mu.Unlock()
		if !downOK.Load() {
			w.WriteHeader(http.StatusBadGateway)
		}
	}))
	defer down.Close()
	count := func(path string) int {
		mu.Lock()
		defer mu.Unlock()
		return len(arrived[path])
	}
	f := startCaddy(t, "lease 5s\n\t\tworkers 4", fmt.Sprintf(`
	webhook_ingress /hooks/paced paced {
		verify none
		forward_to %s/paced
		id_from header Idempotency-Key
		rate_limit 2/s
	}
	webhook_ingress /hooks/free free {
		verify none
		forward_to %s/free
		id_from header Idempotency-Key
	}
	webhook_ingress /hooks/held held {
		verify none
		forward_to %s/held
		id_from header Idempotency-Key
	}
	webhook_ingress /hooks/down down {
		verify none
		forward_to %s/down
		id_from header Idempotency-Key
		retry {
			max_attempts 100
			backoff 10ms 10ms jitter 0
		}
	}`, up.URL, up.URL, up.URL, down.URL))
	post := func(path, id string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("http://localhost:%d%s", httpPort, path), bytes.NewReader([]byte(`{"n":1}`)))
		req.Header.Set("Idempotency-Key", id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("POST %s %s: %d", path, id, resp.StatusCode)
		}
	}
	admin := func(path string) {
		t.Helper()
		resp, err := http.Post(fmt.Sprintf("http://localhost:%d%s", adminPort, path), "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("POST %s: %d", path, resp.StatusCode)
		}
	}
	waitFor := func(what string, within time.Duration, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(within)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("no %s within %v", what, within)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	// pacing at lease time
	start := time.Now()
	for i := range 5 {
		post("/hooks/paced", fmt.Sprintf("p-%d", i))
	}
	for i := range 10 {
		post("/hooks/free", fmt.Sprintf("f-%d", i))
	}
	waitFor("delivery of the unpaced source", 2*time.Second, func() bool { return count("/free") == 10 })
	if took := time.Since(start); took > 1500*time.Millisecond {
		t.Errorf("the unpaced source took %v behind a paced one", took)
	}
	waitFor("delivery of the paced source", 5*time.Second, func() bool { return count("/paced") == 5 })
	mu.Lock()
	paced := append([]time.Time(nil), arrived["/paced"]...)
	mu.Unlock()
	for i := 1; i < len(paced); i++ {
		if gap := paced[i].Sub(paced[i-1]); gap < 400*time.Millisecond {
			t.Errorf("paced deliveries %d and %d %v apart, want about 500ms (rate_limit 2/s)", i-1, i, gap)
		}
	}
	if n := f.Released("paced") + f.Released("free"); n != 0 {
		t.Errorf("%d jobs leased and handed back; pacing must not lease what it cannot send", n)
	}
	// lease 5s with no timeout: each event leased once, no lease/release loop
	if p, fr := f.Leased("paced"), f.Leased("free"); p != 5 || fr != 10 {
		t.Errorf("leases: paced %d, free %d; want each event leased once (5, 10)", p, fr)
	}

	// a paused source's backlog stays in the store, untouched
	admin("/webhooks/sources/held/pause")
	for i := range 20 {
		ev := &storage.Event{ID: fmt.Sprintf("held-%02d", i), EventID: fmt.Sprintf("h-%d", i), Dedupe: true,
			Source: "held", Upstream: up.URL + "/held", ReceivedAt: time.Now()}
		if _, err := f.Inner().Enqueue(t.Context(), ev, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(1500 * time.Millisecond) // the workers look at the store every second when idle
	if l, r := f.Leased("held"), f.Released("held"); l != 0 || r != 0 {
		t.Fatalf("paused source: %d jobs leased, %d released while paused; want none", l, r)
	}
	resumed := time.Now()
	admin("/webhooks/sources/held/resume")
	waitFor("the backlog after resume", 3*time.Second, func() bool { return count("/held") == 20 })
	if took := time.Since(resumed); took > 1500*time.Millisecond {
		t.Errorf("resume took %v to deliver the backlog", took)
	}

	// an open breaker: after the jobs in flight when it opened come back,
	// the source's backlog of 30 is not leased while it is open; its one
	// trial every 2s is the only store work and the only request
	for i := range 30 {
		post("/hooks/down", fmt.Sprintf("d-%d", i))
	}
	waitFor("the breaker to open", 3*time.Second, func() bool { return count("/down") >= 5 })
	time.Sleep(300 * time.Millisecond) // what was in flight comes back
	leased, released, tried := f.Leased("down"), f.Released("down"), count("/down")
	time.Sleep(3 * time.Second) // at most two trials (one every 2s), each failing
	if l, r, n := f.Leased("down")-leased, f.Released("down")-released, count("/down")-tried; l > 4 || r > 4 || n > 2 {
		t.Fatalf("breaker open: %d jobs leased, %d released, %d requests in 3s; want only the trials (at most 2 requests, a lane's cap of 1 each)", l, r, n)
	}
	downOK.Store(true)
	waitFor("the backlog delivered after the breaker closed", 15*time.Second, func() bool {
		for i := range 30 {
			info, err := f.Inner().Lookup(t.Context(), "down", fmt.Sprintf("d-%d", i))
			if err != nil || info.Status != storage.StatusDelivered {
				return false
			}
		}
		return true
	})
}
