package integration

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestReloadKeepsProtection: a reload keeps an upstream's open circuit
// breaker open and a source's delivery pace, instead of starting both
// afresh (the breakers and paces outlive the config, as the store does).
func TestReloadKeepsProtection(t *testing.T) {
	up := newUpstream(t)
	paced := newUpstream(t) // another host: the breaker of up's host does not hold it back
	up.setRespond(func(_ int, w http.ResponseWriter) { w.WriteHeader(http.StatusBadGateway) })
	storage := defaultStorage(t)
	load := func(timeout int) { // a config that differs: Caddy skips loading an unchanged one
		startCaddy(t, up, storage, fmt.Sprintf(`
	webhook_ingress /hooks/down down {
		verify none
		id_from header Idempotency-Key
		forward_to %s/in/down
		timeout 2s
		retry {
			max_attempts 50
			backoff 10ms 10ms jitter 0
		}
	}
	webhook_ingress /hooks/paced paced {
		verify none
		id_from header Idempotency-Key
		forward_to %s/in/paced
		rate_limit 1/s
		timeout %ds
	}`, up.URL, paced.URL, timeout))
	}
	load(10)
	body := []byte(`{"n":1}`)
	if resp, m := post(t, "/hooks/down", body, map[string]string{"Idempotency-Key": "d-1"}); resp.StatusCode != 202 {
		t.Fatalf("enqueue: %d %v", resp.StatusCode, m)
	}
	// five consecutive failures open the breaker (default: 5; a trial every 2s)
	for range 5 {
		up.next(t, 5*time.Second)
	}
	opened := time.Now()

	load(11) // a real reload
	if resp, m := post(t, "/hooks/down", body, map[string]string{"Idempotency-Key": "d-2"}); resp.StatusCode != 202 {
		t.Fatalf("enqueue after reload: %d %v", resp.StatusCode, m)
	}
	// the new config's dispatcher knows the breaker is open: no request
	// for either event before its trial, 2s after it opened
	select {
	case r := <-up.arrived:
		if time.Since(opened) < 1800*time.Millisecond {
			t.Fatalf("upstream called %v after the breaker opened (path %s): the reload closed it", time.Since(opened), r.Path)
		}
	case <-time.After(1500 * time.Millisecond):
	}

	// the pace: one delivery of the paced source, a reload, another
	// event: it waits for the next slot instead of going at once
	if resp, m := post(t, "/hooks/paced", body, map[string]string{"Idempotency-Key": "p-1"}); resp.StatusCode != 202 {
		t.Fatalf("paced: %d %v", resp.StatusCode, m)
	}
	first := waitPath(t, paced, "/in/paced", 5*time.Second)
	load(12)
	post(t, "/hooks/paced", body, map[string]string{"Idempotency-Key": "p-2"})
	second := waitPath(t, paced, "/in/paced", 5*time.Second)
	if gap := second.Sub(first); gap < 900*time.Millisecond {
		t.Fatalf("paced deliveries %v apart across a reload, want at least 1s (rate_limit 1/s)", gap)
	}
}

// waitPath waits for the next upstream request to path (others are
// skipped) and returns when it arrived.
func waitPath(t *testing.T, up *upstream, path string, within time.Duration) time.Time {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case r := <-up.arrived:
			if r.Path == path {
				return r.At
			}
		case <-deadline:
			t.Fatalf("no request to %s within %v", path, within)
			return time.Time{}
		}
	}
}
