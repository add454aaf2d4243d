package ingress_test

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
// their exact JSON, in DESIGN.md's order (allow_ips and accept_rate before
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
}
