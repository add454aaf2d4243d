package integration

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestEdgeProtection: allow_ips (behind trusted_proxies, with a
// placeholder holding several ranges), accept_rate and schema answer with
// their exact JSON, in the documented order (allow_ips and accept_rate before
// the body is read, so before its size; the signature before the schema),
// never store what they refuse, and are counted.
func TestEdgeProtection(t *testing.T) {
	up := newUpstream(t)
	t.Setenv("HOOKLINE_E2E_IPS", "198.51.100.7, 2001:db8::1")
	schema := filepath.Join(t.TempDir(), "order.json")
	if err := os.WriteFile(schema, []byte(`{"type":"object","required":["id"],"properties":{"id":{"type":"string"},"amount":{"type":"integer"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	startCaddyWith(t, up, "servers {\n\t\ttrusted_proxies static 127.0.0.1/32\n\t}", "", fmt.Sprintf(`
	webhook_ingress /hooks/allowed allowed {
		verify none
		forward_to %[1]s/in/allowed
		id_from header Idempotency-Key
		allow_ips 203.0.113.0/24 {env.HOOKLINE_E2E_IPS}
		max_body 1KB
	}
	webhook_ingress /hooks/limited limited {
		verify none
		forward_to %[1]s/in/limited
		accept_rate 2/m
		max_body 1KB
	}
	webhook_ingress /hooks/schema schemed {
		verify hmac %[2]s {
			header X-Signature
			prefix sha256=
		}
		forward_to %[1]s/in/schema
		id_from header Idempotency-Key
		schema %[3]s
	}`, up.URL, secret, schema))
	counted := func(outcome, source string) float64 {
		return metricValue(t, fmt.Sprintf(`caddy_webhooks_received_total{outcome=%q,source=%q}`, outcome, source))
	}
	before := map[string]float64{
		"forbidden": counted("forbidden", "allowed"), "rate_limit_exceeded": counted("rate_limit_exceeded", "limited"),
		"invalid_payload": counted("invalid_payload", "schemed"), "invalid_json": counted("invalid_json", "schemed"),
	}
	expect := func(what string, resp *http.Response, m map[string]any, status int, want map[string]any) {
		t.Helper()
		if resp.StatusCode != status || !reflect.DeepEqual(m, want) {
			t.Errorf("%s: %d %v, want %d %v", what, resp.StatusCode, m, status, want)
		}
	}
	forbidden := map[string]any{"error": "this client is not allowed to send webhooks here", "code": "FORBIDDEN"}

	// allow_ips: the client IP is the one the trusted proxy forwards
	for i, tc := range []struct {
		xff    string
		status int
	}{
		{"203.0.113.9", http.StatusAccepted},
		{"198.51.100.7", http.StatusAccepted}, // from the placeholder
		{"192.0.2.1", http.StatusForbidden},
		{"", http.StatusForbidden}, // the proxy itself, 127.0.0.1
		{"2001:db8::1", http.StatusAccepted},
	} {
		h := map[string]string{"Idempotency-Key": fmt.Sprintf("ip-%d", i)}
		if tc.xff != "" {
			h["X-Forwarded-For"] = tc.xff
		}
		resp, m := post(t, "/hooks/allowed", []byte(`{"n":1}`), h)
		if tc.status == http.StatusForbidden {
			expect("client "+tc.xff, resp, m, tc.status, forbidden)
			if code, _ := admin(t, "GET", fmt.Sprintf("/webhooks/events/allowed/ip-%d", i), ""); code != http.StatusNotFound {
				t.Errorf("refused client %q: its event was stored (%d)", tc.xff, code)
			}
		} else if resp.StatusCode != tc.status {
			t.Errorf("client %q: %d %v, want %d", tc.xff, resp.StatusCode, m, tc.status)
		}
	}
	// refused before the body is read: an oversized body is still a 403
	resp, m := post(t, "/hooks/allowed", []byte(strings.Repeat("x", 4096)), map[string]string{"X-Forwarded-For": "192.0.2.1"})
	expect("oversized from a refused client", resp, m, http.StatusForbidden, forbidden)

	// accept_rate 2/m: two at once, then 429 until the next token (30s)
	for i := range 2 {
		if resp, m := post(t, "/hooks/limited", []byte(`{}`), nil); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("limited %d: %d %v", i, resp.StatusCode, m)
		}
	}
	limited := map[string]any{"error": "Rate limit exceeded", "code": "RATE_LIMIT_EXCEEDED",
		"details": map[string]any{"retry_after_seconds": float64(30), "limit": float64(2), "window_seconds": float64(60)}}
	resp, m = post(t, "/hooks/limited", []byte(`{}`), nil)
	expect("beyond accept_rate", resp, m, http.StatusTooManyRequests, limited)
	if ra := resp.Header.Get("Retry-After"); ra != "30" {
		t.Errorf("Retry-After %q, want 30", ra)
	}
	// before the body's size too
	resp, m = post(t, "/hooks/limited", []byte(strings.Repeat("x", 4096)), nil)
	expect("oversized beyond accept_rate", resp, m, http.StatusTooManyRequests, limited)

	// schema: the signature comes first; then the first violation
	bad := []byte(`{"amount":1}`)
	resp, m = post(t, "/hooks/schema", bad, map[string]string{"X-Signature": "sha256=00", "Idempotency-Key": "s-0"})
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("bad signature and bad payload: %d %v, want 401 (the signature is checked first)", resp.StatusCode, m)
	}
	resp, m = post(t, "/hooks/schema", bad, signedHeaders(bad, "s-1"))
	expect("schema violation", resp, m, http.StatusBadRequest, map[string]any{
		"error": "the payload does not match the source's schema", "code": "INVALID_PAYLOAD",
		"details": map[string]any{"field": "/id", "reason": "required"}})
	wrongType := []byte(`{"id":"o-1","amount":"12"}`)
	resp, m = post(t, "/hooks/schema", wrongType, signedHeaders(wrongType, "s-2"))
	if d, _ := m["details"].(map[string]any); resp.StatusCode != http.StatusBadRequest || d["field"] != "/amount" || !strings.Contains(fmt.Sprint(d["reason"]), "want integer") {
		t.Errorf("wrong type: %d %v", resp.StatusCode, m)
	}
	notJSON := []byte(`id=1`)
	resp, m = post(t, "/hooks/schema", notJSON, signedHeaders(notJSON, "s-3"))
	expect("not JSON", resp, m, http.StatusBadRequest, map[string]any{"error": "the body is not valid JSON", "code": "INVALID_JSON"})
	for _, id := range []string{"s-1", "s-2", "s-3"} {
		if code, _ := admin(t, "GET", "/webhooks/events/schemed/"+id, ""); code != http.StatusNotFound {
			t.Errorf("refused payload %s was stored (%d)", id, code)
		}
	}
	good := []byte(`{"id":"o-1","amount":12}`)
	if resp, m := post(t, "/hooks/schema", good, signedHeaders(good, "s-4")); resp.StatusCode != http.StatusAccepted {
		t.Errorf("valid payload: %d %v", resp.StatusCode, m)
	}
	if r := up.next(t, 5*time.Second); r.Path == "" {
		t.Error("no delivery")
	}

	for outcome, n := range map[string]float64{"forbidden": 3, "rate_limit_exceeded": 2, "invalid_payload": 2, "invalid_json": 1} {
		source := map[string]string{"forbidden": "allowed", "rate_limit_exceeded": "limited", "invalid_payload": "schemed", "invalid_json": "schemed"}[outcome]
		if got := counted(outcome, source) - before[outcome]; got != n {
			t.Errorf("received_total{outcome=%q,source=%q} grew by %v, want %v", outcome, source, got, n)
		}
	}

	// GET /webhooks/stats counts every refusal by source and outcome too
	// (the store is this test's own: exact numbers)
	checkStatsCounters(t, map[string]map[string]float64{
		"allowed": {"accepted": 3, "forbidden": 3},
		"limited": {"accepted": 2, "rate_limit_exceeded": 2},
		"schemed": {"accepted": 1, "invalid_signature_format": 1, "invalid_payload": 2, "invalid_json": 1},
	})
}

// TestEdgeOrderOfChecks (README.md, edge protection: pause, then
// allow_ips, then accept_rate): a paused source answers 503 to a client
// allow_ips refuses, and to an allowed client beyond accept_rate; requests
// allow_ips refuses spend no accept_rate token, so an allowed client still
// gets the full budget after them. The stats count each refusal as the
// check that answered it.
func TestEdgeOrderOfChecks(t *testing.T) {
	up := newUpstream(t)
	startCaddyWith(t, up, "servers {\n\t\ttrusted_proxies static 127.0.0.1/32\n\t}", "", fmt.Sprintf(`
	webhook_ingress /hooks/guarded guarded {
		verify none
		forward_to %s/in/guarded
		id_from header Idempotency-Key
		allow_ips 203.0.113.0/24
		accept_rate 2/m
	}`, up.URL))
	send := func(xff, id string) (*http.Response, map[string]any) {
		t.Helper()
		return post(t, "/hooks/guarded", []byte(`{"n":1}`), map[string]string{"X-Forwarded-For": xff, "Idempotency-Key": id})
	}
	const refused, allowed = "192.0.2.1", "203.0.113.9"

	// more refused requests than the whole budget: none spends a token
	for i := range 5 {
		if resp, m := send(refused, fmt.Sprintf("no-%d", i)); resp.StatusCode != http.StatusForbidden || m["code"] != "FORBIDDEN" {
			t.Fatalf("refused client %d: %d %v, want 403 FORBIDDEN", i, resp.StatusCode, m)
		}
	}
	for i := range 2 {
		if resp, m := send(allowed, fmt.Sprintf("ok-%d", i)); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("allowed client, request %d of its accept_rate 2/m: %d %v, want 202 (refused requests spent its tokens)", i+1, resp.StatusCode, m)
		}
	}
	if resp, m := send(allowed, "ok-2"); resp.StatusCode != http.StatusTooManyRequests || m["code"] != "RATE_LIMIT_EXCEEDED" {
		t.Fatalf("allowed client beyond accept_rate: %d %v, want 429", resp.StatusCode, m)
	}

	// paused (refuse): 503 before allow_ips and before accept_rate
	if code, m := admin(t, "POST", "/webhooks/sources/guarded/pause", ""); code != 200 {
		t.Fatalf("pause: %d %v", code, m)
	}
	for _, xff := range []string{refused, allowed} {
		resp, m := send(xff, "paused-"+xff)
		if resp.StatusCode != http.StatusServiceUnavailable || m["code"] != "SERVICE_UNAVAILABLE" || resp.Header.Get("Retry-After") == "" {
			t.Errorf("paused source, client %s: %d Retry-After %q %v, want 503 SERVICE_UNAVAILABLE (the pause comes first)",
				xff, resp.StatusCode, resp.Header.Get("Retry-After"), m)
		}
	}
	checkStatsCounters(t, map[string]map[string]float64{
		"guarded": {"accepted": 2, "forbidden": 5, "rate_limit_exceeded": 1, "service_unavailable": 2},
	})
}

// checkStatsCounters waits for GET /webhooks/stats to have counted want
// (source: counter: n, all-time; stats are flushed every few seconds)
// and checks that each counter is exactly so and that the source's
// rejected total is the sum of its refusals.
func checkStatsCounters(t *testing.T, want map[string]map[string]float64) {
	t.Helper()
	counters := func(stats map[string]any, source string) (map[string]any, float64) {
		src, _ := stats["sources"].(map[string]any)[source].(map[string]any)
		all, _ := src["all_time"].(map[string]any)
		c, _ := all["counters"].(map[string]any)
		rejected, _ := all["rejected"].(float64)
		return c, rejected
	}
	var stats map[string]any
	defer func() {
		if t.Failed() {
			for source := range want {
				c, rejected := counters(stats, source)
				t.Logf("stats: source %s counters %v, rejected %v", source, c, rejected)
			}
		}
	}()
	waitFor(t, func() bool {
		var code int
		code, stats = admin(t, "GET", "/webhooks/stats", "")
		if code != 200 {
			return false
		}
		for source, w := range want {
			c, _ := counters(stats, source)
			for name, n := range w {
				if got, _ := c[name].(float64); got < n {
					return false
				}
			}
		}
		return true
	})
	for source, w := range want {
		c, rejected := counters(stats, source)
		var refusals float64
		for name, n := range w {
			if got := c[name]; got != n {
				t.Errorf("stats: source %s counter %s = %v, want %v (all: %v)", source, name, got, n, c)
			}
			if name != "accepted" {
				refusals += n
			}
		}
		if rejected != refusals {
			t.Errorf("stats: source %s rejected %v, want %v (all: %v)", source, rejected, refusals, c)
		}
	}
}
