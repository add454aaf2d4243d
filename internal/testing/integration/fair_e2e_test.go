package integration

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

// TestFairTenants (through Caddy, on both stores: TestEndToEndOnRedis runs
// it again on Redis): a backlog of 20,000 events of one shop, held by a
// pause, does not hold back another shop's event once resumed, that of a
// shop hashed to the same share neither. The shops' tenants take turns,
// and the busy shop's events wait in lanes of its own, so the other
// shops' events go within the first leases of the workers, not behind
// the backlog.
func TestFairTenants(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 20,000 events")
	}
	up := newUpstream(t)
	startCaddy(t, up, defaultStorage(t), shopIngress(up, ""))
	// quiet hashes to another share than noisy, neighbour to noisy's
	noisy, quiet, neighbour := "noisy.myshopify.com", "", ""
	for i := 0; quiet == "" || neighbour == ""; i++ {
		name := fmt.Sprintf("quiet-%d.myshopify.com", i)
		switch same := storage.TenantShare(name) == storage.TenantShare(noisy); {
		case !same && quiet == "":
			quiet = name
		case same && neighbour == "":
			neighbour = name
		}
	}
	if code, m := admin(t, "POST", "/webhooks/sources/shop/pause", `{"reason":"a backlog","accept":true}`); code != http.StatusOK {
		t.Fatalf("pause: %d %v", code, m)
	}

	const backlog = 20_000
	var next atomic.Int64
	var failed atomic.Int64
	var wg sync.WaitGroup
	began := time.Now()
	for range 8 {
		wg.Go(func() {
			for i := next.Add(1); i <= backlog; i = next.Add(1) {
				body := fmt.Sprintf(`{"n":%d}`, i)
				req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("http://localhost:%d/hooks/shop", httpPort), bytes.NewReader([]byte(body)))
				for k, v := range shopHeaders(fmt.Sprintf("n-%d", i), noisy, body) {
					req.Header.Set(k, v)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil || resp.StatusCode != http.StatusAccepted {
					failed.Add(1)
				}
				if resp != nil {
					resp.Body.Close()
				}
			}
		})
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d of the backlog's events were not accepted", n)
	}
	t.Logf("backlog of %d events of one shop accepted in %v", backlog, time.Since(began).Round(time.Millisecond))
	sendShop(t, "q-1", quiet, `{"quiet":1}`)
	sendShop(t, "q-2", neighbour, `{"quiet":2}`)

	if code, m := admin(t, "POST", "/webhooks/sources/shop/resume", ""); code != http.StatusOK {
		t.Fatalf("resume: %d %v", code, m)
	}
	// the quiet shops' events go within a few leases of the 16 workers,
	// the one of noisy's share too: noisy, busy, waits in lanes of its own
	const few = 3 * 16
	at := map[string]int{}
	waitFor(t, func() bool {
		up.mu.Lock()
		defer up.mu.Unlock()
		for i, r := range up.reqs {
			if tn := r.Header.Get("X-Webhook-Tenant"); (tn == quiet || tn == neighbour) && at[tn] == 0 {
				at[tn] = i + 1
			}
		}
		return len(at) == 2 || len(up.reqs) > few
	})
	for _, shop := range []string{quiet, neighbour} {
		if at[shop] == 0 || at[shop] > few {
			t.Errorf("the event of %s was not among the first %d deliveries after the resume (at %d) behind a backlog of %d", shop, few, at[shop], backlog)
		}
	}
	t.Logf("behind a resumed backlog of %d, the other shop's event was delivery %d, the event of a shop of the busy shop's share delivery %d",
		backlog, at[quiet], at[neighbour])
}

// TestTenantStats (both stores): /webhooks/stats lists a source's busiest
// tenants of the last hour and "(other)" for the rest; a tenant is
// counted apart from its third event on, and every event is counted once.
func TestTenantStats(t *testing.T) {
	up := newUpstream(t)
	startCaddy(t, up, defaultStorage(t), shopIngress(up, ""))
	for i := range 6 {
		sendShop(t, fmt.Sprintf("busy-%d", i), "busy.myshopify.com", fmt.Sprintf(`{"n":%d}`, i))
	}
	sendShop(t, "once-1", "once.myshopify.com", `{"n":1}`)
	for range 7 {
		up.next(t, 5*time.Second)
	}
	var tenants []any
	waitFor(t, func() bool {
		_, s := admin(t, "GET", "/webhooks/stats", "")
		src, _ := s["sources"].(map[string]any)["shop"].(map[string]any)
		tenants, _ = src["tenants"].([]any)
		delivered := 0.0
		for _, x := range tenants {
			delivered += x.(map[string]any)["delivered"].(float64)
		}
		return delivered == 7
	})
	got := map[string]map[string]any{}
	received := 0.0
	for _, x := range tenants {
		m := x.(map[string]any)
		got[m["tenant"].(string)] = m
		received += m["received"].(float64)
	}
	if busy := got["busy.myshopify.com"]; busy == nil || busy["received"].(float64) < 4 || got["(other)"] == nil || got["once.myshopify.com"] != nil {
		t.Fatalf("tenants: %v; want busy.myshopify.com apart (4 of its 6 at least), once.myshopify.com in (other)", tenants)
	}
	if received != 7 {
		t.Errorf("tenants' received sum to %v, want 7 (each event once)", received)
	}
	if len(tenants) != 2 || tenants[0].(map[string]any)["tenant"] != "busy.myshopify.com" {
		t.Errorf("tenants %v: want the busiest first, then (other)", tenants)
	}
	// over a window: the same counts, one tenant at a time
	for tenant, m := range got {
		_, w := admin(t, "GET", "/webhooks/stats?from=1h&tenant="+url.QueryEscape(tenant), "")
		if w["tenant"] != tenant || w["total"] != m["received"] || w["completed"] != m["delivered"] {
			t.Errorf("stats of %s over the last hour: %v; want %v received, %v delivered", tenant, w, m["received"], m["delivered"])
		}
	}
}
