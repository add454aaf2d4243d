package integration

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/dedupe"
)

// TestTenants: a Shopify source finds each event's shop with its scheme's
// default tenant_from (X-Shopify-Shop-Domain); the upstream gets it as
// X-Webhook-Tenant, in place of one the sender forged; the DLQ entry, the
// event lookup, the audit lines and the webhook_dead event show it. A
// source's own tenant_from replaces the default, and an event without one
// gets no tenant and no header.
func TestTenants(t *testing.T) {
	logs, auditLog, eventsLog := auditLogs(t)
	up := newUpstream(t)
	up.setRespond(func(n int, w http.ResponseWriter) {
		if n == 2 {
			w.WriteHeader(http.StatusUnprocessableEntity) // the second event: dead at once
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	startCaddyWith(t, up, logs, auditOn(t), fmt.Sprintf(`
	webhook_ingress /hooks/shop shop {
		verify shopify %[1]s
		forward_to %[2]s/in/shop
	}
	webhook_ingress /hooks/own own {
		verify shopify %[1]s
		forward_to %[2]s/in/own
		tenant_from json account.id
	}`, shopifySecret, up.URL))

	shopify := func(id, shop string, body []byte) map[string]string {
		h := map[string]string{
			"X-Shopify-Hmac-Sha256": base64.StdEncoding.EncodeToString(mac(sha256.New, shopifySecret, string(body))),
			"X-Shopify-Webhook-Id":  id, "X-Shopify-Topic": "orders/create",
			"X-Webhook-Tenant": "forged.by.the.sender",
		}
		if shop != "" {
			h["X-Shopify-Shop-Domain"] = shop
		}
		return h
	}
	order := []byte(`{"id":1}`)
	if resp, m := post(t, "/hooks/shop", order, shopify("w-1", "alpha.myshopify.com", order)); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("order: %d %v", resp.StatusCode, m)
	}
	if got := up.next(t, 5*time.Second).Header.Values("X-Webhook-Tenant"); len(got) != 1 || got[0] != "alpha.myshopify.com" {
		t.Fatalf("upstream X-Webhook-Tenant %q, want [alpha.myshopify.com]", got)
	}
	second := []byte(`{"id":2}`)
	post(t, "/hooks/shop", second, shopify("w-2", "beta.myshopify.com", second))
	if got := up.next(t, 5*time.Second).Header.Get("X-Webhook-Tenant"); got != "beta.myshopify.com" {
		t.Fatalf("upstream X-Webhook-Tenant %q, want beta.myshopify.com", got)
	}
	var entries []any
	waitFor(t, func() bool {
		_, page := admin(t, "GET", "/webhooks/dlq?source=shop", "")
		entries, _ = page["entries"].([]any)
		return len(entries) == 1
	})
	if e := entries[0].(map[string]any); e["tenant"] != "beta.myshopify.com" || e["event_id"] != "w-2" {
		t.Fatalf("DLQ entry %v", e)
	}
	if _, ev := admin(t, "GET", "/webhooks/events/shop/w-1", ""); ev["tenant"] != "alpha.myshopify.com" || ev["status"] != "delivered" {
		t.Fatalf("event lookup %v", ev)
	}

	// no shop header: no tenant, and no forged header goes through
	third := []byte(`{"id":3}`)
	post(t, "/hooks/shop", third, shopify("w-3", "", third))
	if r := up.next(t, 5*time.Second); r.Header.Values("X-Webhook-Tenant") != nil {
		t.Fatalf("upstream X-Webhook-Tenant %q for an event without a tenant", r.Header.Values("X-Webhook-Tenant"))
	}
	if _, ev := admin(t, "GET", "/webhooks/events/shop/w-3", ""); ev["tenant"] != nil {
		t.Fatalf("event lookup of an event without a tenant: %v", ev)
	}

	// a source's own rule replaces the scheme's (the shop header is there too)
	body := []byte(`{"account":{"id":42}}`)
	post(t, "/hooks/own", body, shopify("o-1", "alpha.myshopify.com", body))
	if got := up.next(t, 5*time.Second).Header.Get("X-Webhook-Tenant"); got != "42" {
		t.Fatalf("upstream X-Webhook-Tenant %q, want 42 (the source's own rule)", got)
	}

	// the audit lines and the Caddy event carry it
	tenants := map[string]any{}
	waitFor(t, func() bool {
		for _, l := range logLines(t, auditLog) {
			if l["step"] == "received" {
				tenants[fmt.Sprint(l["event_id"])] = l["tenant"]
			}
		}
		return len(tenants) == 4
	})
	for id, want := range map[string]string{"w-1": "alpha.myshopify.com", "w-2": "beta.myshopify.com", "w-3": "", "o-1": "42"} {
		if tenants[id] != want {
			t.Errorf("received line of %s: tenant %v, want %q", id, tenants[id], want)
		}
	}
	var dead map[string]any
	waitFor(t, func() bool {
		for _, l := range logLines(t, eventsLog) {
			if l["name"] == "webhook_dead" {
				dead, _ = l["data"].(map[string]any)
			}
		}
		return dead != nil
	})
	if dead["tenant"] != "beta.myshopify.com" || dead["event_id"] != "w-2" {
		t.Errorf("webhook_dead data %v", dead)
	}
}

// TestTenantFilters: tenant= selects one tenant's events in the DLQ list,
// the event browser, a bulk retry and a replay (each answer only of that
// tenant), a bulk retry by tenant re-sends that tenant's entries only, and
// a tenant stored as its hash (too long to keep) is found by the value the
// provider sent.
func TestTenantFilters(t *testing.T) {
	up := newUpstream(t)
	up.setRespond(func(n int, w http.ResponseWriter) {
		up.mu.Lock()
		fail := strings.Contains(string(up.reqs[n-1].Body), `"fail":true`)
		up.mu.Unlock()
		if fail {
			w.WriteHeader(http.StatusUnprocessableEntity) // dead at once
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	startCaddy(t, up, "", fmt.Sprintf(`
	webhook_ingress /hooks/shop shop {
		verify shopify %[1]s
		forward_to %[2]s/in/shop
	}
	webhook_ingress /hooks/own own {
		verify shopify %[1]s
		forward_to %[2]s/in/own
		tenant_from json account
	}`, shopifySecret, up.URL))
	send := func(path, id, shop, body string) {
		t.Helper()
		h := map[string]string{
			"X-Shopify-Hmac-Sha256": base64.StdEncoding.EncodeToString(mac(sha256.New, shopifySecret, body)),
			"X-Shopify-Webhook-Id":  id, "X-Shopify-Topic": "orders/create", "X-Shopify-Shop-Domain": shop,
		}
		if resp, m := post(t, path, []byte(body), h); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("%s: %d %v", id, resp.StatusCode, m)
		}
	}
	const alpha, beta = "alpha.myshopify.com", "beta.myshopify.com"
	long := strings.Repeat("acct-", 60) // 300 bytes: stored as its SHA-256
	send("/hooks/shop", "a1", alpha, `{"id":1}`)
	send("/hooks/shop", "a2", alpha, `{"id":2,"fail":true}`)
	send("/hooks/shop", "b1", beta, `{"id":3}`)
	send("/hooks/shop", "b2", beta, `{"id":4,"fail":true}`)
	send("/hooks/shop", "b3", beta, `{"id":5,"fail":true}`)
	send("/hooks/own", "l1", alpha, `{"account":"`+long+`","fail":true}`)
	for range 6 {
		up.next(t, 5*time.Second)
	}
	waitFor(t, func() bool {
		_, page := admin(t, "GET", "/webhooks/dlq", "")
		entries, _ := page["entries"].([]any)
		return len(entries) == 4
	})

	ids := func(items []any, key string) []string {
		var out []string
		for _, it := range items {
			out = append(out, fmt.Sprint(it.(map[string]any)[key]))
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		tenant   string
		dead     []string
		events   []string
		replayed []string
	}{
		{alpha, []string{"a2"}, []string{"a1", "a2"}, []string{"a1"}},
		{beta, []string{"b2", "b3"}, []string{"b1", "b2", "b3"}, []string{"b1"}},
		{long, []string{"l1"}, []string{"l1"}, nil},
		{"alpha", nil, nil, nil}, // exactly, not a prefix
	} {
		q := url.QueryEscape(tc.tenant)
		_, page := admin(t, "GET", "/webhooks/dlq?tenant="+q, "")
		entries, _ := page["entries"].([]any)
		if got := ids(entries, "event_id"); !slices.Equal(got, tc.dead) {
			t.Errorf("DLQ of tenant %.20q: %v, want %v", tc.tenant, got, tc.dead)
		}
		_, page = admin(t, "GET", "/webhooks/events?tenant="+q, "")
		items, _ := page["items"].([]any)
		if got := ids(items, "event_id"); !slices.Equal(got, tc.events) {
			t.Errorf("events of tenant %.20q: %v, want %v", tc.tenant, got, tc.events)
		}
		body, _ := json.Marshal(map[string]any{"tenant": tc.tenant, "dry_run": true})
		_, res := admin(t, "POST", "/webhooks/events/replay", string(body))
		replayed, _ := res["replayed"].([]any)
		if got := ids(replayed, "event_id"); !slices.Equal(got, tc.replayed) {
			t.Errorf("replay (dry run) of tenant %.20q: %v, want %v", tc.tenant, got, tc.replayed)
		}
		for _, r := range replayed {
			if r.(map[string]any)["tenant"] != tc.tenant {
				t.Errorf("replayed %v, want tenant %q", r, tc.tenant)
			}
		}
		_, res = admin(t, "POST", "/webhooks/dlq/retry", string(body))
		if res["matched"] != float64(len(tc.dead)) {
			t.Errorf("bulk retry (dry run) of tenant %.20q: %v, want %d matched", tc.tenant, res, len(tc.dead))
		}
	}
	// the long tenant is stored (and sent) as its hash
	_, page := admin(t, "GET", "/webhooks/dlq?tenant="+url.QueryEscape(long), "")
	entries, _ := page["entries"].([]any)
	if len(entries) != 1 {
		t.Fatalf("DLQ entries of the long tenant: %v, want 1", page)
	}
	if got := entries[0].(map[string]any)["tenant"]; got != dedupe.Normalize(long) || got == long {
		t.Errorf("a 300-byte tenant was stored as %.40q, want its hash %q", got, dedupe.Normalize(long))
	}

	// a bulk retry of beta re-sends beta's two dead events, nothing else
	if code, res := admin(t, "POST", "/webhooks/dlq/retry", `{"tenant":"`+beta+`"}`); code != http.StatusOK || len(res["retried"].([]any)) != 2 {
		t.Fatalf("bulk retry of beta: %d %v", code, res)
	}
	for range 2 {
		if r := up.next(t, 5*time.Second); r.Header.Get("X-Webhook-Tenant") != beta {
			t.Errorf("a bulk retry of %s sent an event of tenant %q", beta, r.Header.Get("X-Webhook-Tenant"))
		}
	}
	up.none(t, 500*time.Millisecond)
}
