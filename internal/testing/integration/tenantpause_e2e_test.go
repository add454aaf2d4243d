package integration

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

// TestTenantPause (through Caddy, on both stores: TestEndToEndOnRedis runs
// it again on Redis): a paused tenant's deliveries wait, those queued
// before the pause too, while another shop of the same share is
// delivered; a hold accepts the tenant's new events, a refusal answers
// them 503 with Retry-After (the other shop's still 202); resumed, every
// held delivery goes.
func TestTenantPause(t *testing.T) {
	up := newUpstream(t)
	startCaddy(t, up, defaultStorage(t), shopIngress(up, ""))
	held, other := "", ""
	for i := 0; other == ""; i++ {
		name := fmt.Sprintf("shop-%d.myshopify.com", i)
		switch {
		case held == "":
			held = name
		case storage.TenantShare(name) == storage.TenantShare(held):
			other = name
		}
	}
	delivered := func(tenant string) int {
		up.mu.Lock()
		defer up.mu.Unlock()
		n := 0
		for _, r := range up.reqs {
			if r.Header.Get("X-Webhook-Tenant") == tenant {
				n++
			}
		}
		return n
	}
	// queued before the tenant's pause: the source held meanwhile
	if code, m := admin(t, "POST", "/webhooks/sources/shop/pause", `{"accept":true}`); code != http.StatusOK {
		t.Fatalf("pause the source: %d %v", code, m)
	}
	for i := range 3 {
		sendShop(t, fmt.Sprintf("h-%d", i), held, fmt.Sprintf(`{"held":%d}`, i))
		sendShop(t, fmt.Sprintf("o-%d", i), other, fmt.Sprintf(`{"other":%d}`, i))
	}
	code, m := admin(t, "POST", "/webhooks/tenants/shop/"+held+"/pause", `{"accept":true,"reason":"abuse"}`)
	if code != http.StatusOK || m["tenant"] != held || m["pause"].(map[string]any)["mode"] != "hold" {
		t.Fatalf("pause the tenant: %d %v", code, m)
	}
	if code, m := admin(t, "POST", "/webhooks/sources/shop/resume", ""); code != http.StatusOK {
		t.Fatalf("resume the source: %d %v", code, m)
	}
	defer func() { // what a failure saw
		if t.Failed() {
			_, s := admin(t, "GET", "/webhooks/stats", "")
			t.Logf("delivered: %s %d, %s %d; queue %v; pauses %v", held, delivered(held), other, delivered(other), s["queue"], s["pauses"])
		}
	}()
	waitFor(t, func() bool { return delivered(other) == 3 })
	sendShop(t, "h-3", held, `{"held":3}`) // held: accepted, waits
	sendShop(t, "o-3", other, `{"other":3}`)
	waitFor(t, func() bool { return delivered(other) == 4 })
	// the stats show the pause with the tenant's deliveries it holds
	waitFor(t, func() bool {
		_, s := admin(t, "GET", "/webhooks/stats", "")
		for _, x := range s["pauses"].([]any) {
			if p := x.(map[string]any); p["tenant"] == held && p["waiting"] == float64(4) && p["reason"] == "abuse" {
				return s["paused_sources"] == nil
			}
		}
		return false
	})
	// refuse: the tenant's new events are answered 503, the others' 202
	if code, m := admin(t, "POST", "/webhooks/tenants/shop/"+held+"/pause", `{"for":"1h"}`); code != http.StatusOK || m["pause"].(map[string]any)["mode"] != "refuse" {
		t.Fatalf("refuse the tenant: %d %v", code, m)
	}
	body := `{"held":4}`
	resp, em := post(t, "/hooks/shop", []byte(body), shopHeaders("h-4", held, body))
	if resp.StatusCode != http.StatusServiceUnavailable || em["code"] != "SERVICE_UNAVAILABLE" || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a refused tenant's event: %d %v Retry-After %q; want 503 SERVICE_UNAVAILABLE with Retry-After", resp.StatusCode, em, resp.Header.Get("Retry-After"))
	}
	sendShop(t, "o-4", other, `{"other":4}`)
	waitFor(t, func() bool { return delivered(other) == 5 })
	if n := delivered(held); n != 0 {
		t.Fatalf("%d deliveries of the paused tenant went", n)
	}
	// resumed: its four held deliveries go
	code, m = admin(t, "POST", "/webhooks/tenants/shop/"+held+"/resume", "")
	if code != http.StatusOK || m["paused"] != false || m["resumed"] == nil {
		t.Fatalf("resume the tenant: %d %v", code, m)
	}
	waitFor(t, func() bool { return delivered(held) == 4 })
	time.Sleep(200 * time.Millisecond)
	if n := delivered(held); n != 4 {
		t.Errorf("%d deliveries of the resumed tenant, want 4 (the refused one was not stored)", n)
	}
}
