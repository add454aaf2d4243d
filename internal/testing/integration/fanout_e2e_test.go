package integration

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestFanOut: one event, three destinations, three independent outcomes.
// billing fails permanently (one attempt, one DLQ entry naming it),
// flaky fails twice and then takes it, the default one takes it at once;
// each upstream is told which destination it is. The lookup shows every
// destination's state; retrying the DLQ entry delivers to billing only.
// An event no destination takes is answered 200 "ignored", not stored,
// and counted.
func TestFanOut(t *testing.T) {
	def, billing, flaky := newUpstream(t), newUpstream(t), newUpstream(t)
	billingDown := billing.failWith(http.StatusUnprocessableEntity, true)
	flaky.setRespond(func(n int, w http.ResponseWriter) {
		if n <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	startCaddy(t, def, "", fmt.Sprintf(`
	webhook_ingress /hooks/fan fan {
		verify hmac %s {
			header X-Signature
			prefix sha256=
		}
		id_from header Idempotency-Key
		type_from json type
		retry {
			max_attempts 2
			backoff 100ms 100ms jitter 0
		}
		destination default %s/in/default {
			events invoice.* customer.*
		}
		destination billing %s/in/billing {
			events invoice.*
			when json livemode true
		}
		destination flaky %s/in/flaky {
			events invoice.* charge.*
			retry {
				max_attempts 5
				backoff 100ms 100ms jitter 0
			}
		}
	}`, secret, def.URL, billing.URL, flaky.URL))

	body := []byte(`{"type":"invoice.paid","livemode":true,"amount":1200}`)
	if resp, m := post(t, "/hooks/fan", body, signedHeaders(body, "fan-1")); resp.StatusCode != http.StatusAccepted || m["event_id"] != "fan-1" {
		t.Fatalf("fan-1: %d %v", resp.StatusCode, m)
	}
	check := func(u *upstream, name string) {
		t.Helper()
		r := u.next(t, 5*time.Second)
		if r.Path != "/in/"+name || !bytes.Equal(r.Body, body) || r.Header.Get("X-Webhook-Destination") != name ||
			r.Header.Get("Webhook-Id") != "fan-1" || r.Header.Get("X-Webhook-Event-Type") != "invoice.paid" {
			t.Errorf("%s got %s %q, X-Webhook-Destination %q, Webhook-Id %q", name, r.Path, r.Body,
				r.Header.Get("X-Webhook-Destination"), r.Header.Get("Webhook-Id"))
		}
	}
	check(def, "default")
	check(billing, "billing")
	for range 3 {
		check(flaky, "flaky")
	}
	billing.none(t, 300*time.Millisecond) // a 422 is not retried

	var ev map[string]any
	waitFor(t, func() bool {
		_, ev = admin(t, "GET", "/webhooks/events/fan/fan-1", "")
		return fmt.Sprint(deliveryStates(ev)) == "map[billing:dead default:delivered flaky:delivered]"
	})
	for _, d := range ev["deliveries"].([]any) {
		d := d.(map[string]any)
		want := map[string]int{"default": 1, "billing": 1, "flaky": 3}[destinationName(d)]
		if n := len(d["attempts"].([]any)); n != want {
			t.Errorf("delivery %s: %d attempts, want %d", destinationName(d), n, want)
		}
	}

	// one DLQ entry, billing's; the list filters by destination
	_, page := admin(t, "GET", "/webhooks/dlq?source=fan", "")
	entries := page["entries"].([]any)
	if len(entries) != 1 {
		t.Fatalf("DLQ: %v", page)
	}
	entry := entries[0].(map[string]any)
	if entry["destination"] != "billing" || entry["event_id"] != "fan-1" || entry["event_type"] != "invoice.paid" {
		t.Fatalf("DLQ entry %v", entry)
	}
	for dest, want := range map[string]int{"billing": 1, "flaky": 0, "default": 0} {
		if _, p := admin(t, "GET", "/webhooks/dlq?source=fan&destination="+dest, ""); len(p["entries"].([]any)) != want {
			t.Errorf("DLQ destination=%s: %v, want %d entries", dest, p, want)
		}
	}

	// the operator fixes billing and retries: billing alone gets it again
	billingDown.Store(false)
	if code, m := admin(t, "POST", "/webhooks/dlq/"+entry["id"].(string)+"/retry", ""); code != 200 {
		t.Fatalf("retry: %d %v", code, m)
	}
	check(billing, "billing")
	def.none(t, 300*time.Millisecond)
	flaky.none(t, 50*time.Millisecond)
	waitFor(t, func() bool {
		_, ev = admin(t, "GET", "/webhooks/events/fan/fan-1", "")
		return ev["status"] == "delivered" && fmt.Sprint(deliveryStates(ev)) == "map[billing:delivered default:delivered flaky:delivered]"
	})

	// routing by type and field: a test-mode invoice skips billing, a
	// customer event goes to the default alone, a charge to flaky alone
	for _, tc := range []struct {
		id, body string
		to       []*upstream
		names    []string
	}{
		{"fan-2", `{"type":"invoice.created","livemode":false}`, []*upstream{def, flaky}, []string{"default", "flaky"}},
		{"fan-3", `{"type":"customer.created","livemode":true}`, []*upstream{def}, []string{"default"}},
		{"fan-4", `{"type":"charge.succeeded","livemode":true}`, []*upstream{flaky}, []string{"flaky"}},
	} {
		b := []byte(tc.body)
		if resp, m := post(t, "/hooks/fan", b, signedHeaders(b, tc.id)); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("%s: %d %v", tc.id, resp.StatusCode, m)
		}
		for i, u := range tc.to {
			if r := u.next(t, 5*time.Second); r.Header.Get("Webhook-Id") != tc.id || r.Header.Get("X-Webhook-Destination") != tc.names[i] {
				t.Errorf("%s: %s got Webhook-Id %q destination %q", tc.id, tc.names[i], r.Header.Get("Webhook-Id"), r.Header.Get("X-Webhook-Destination"))
			}
		}
	}
	def.none(t, 300*time.Millisecond)
	billing.none(t, 50*time.Millisecond)
	flaky.none(t, 50*time.Millisecond)

	// no destination takes a refund: 200 ignored, nothing stored or sent
	const ignored = `caddy_webhooks_received_total{outcome="ignored",source="fan"}`
	before := metricValue(t, ignored) // metrics are the process's: earlier runs counted too
	refund := []byte(`{"type":"refund.created","livemode":true}`)
	resp, m := post(t, "/hooks/fan", refund, signedHeaders(refund, "fan-5"))
	if resp.StatusCode != http.StatusOK || m["status"] != "ignored" || m["event_id"] != "fan-5" ||
		m["message"] != "Webhook ignored: no destination takes this event" {
		t.Fatalf("refund: %d %v", resp.StatusCode, m)
	}
	if code, _ := admin(t, "GET", "/webhooks/events/fan/fan-5", ""); code != http.StatusNotFound {
		t.Errorf("an ignored event was stored: lookup %d", code)
	}
	def.none(t, 300*time.Millisecond)
	if got := metricValue(t, ignored); got != before+1 {
		t.Errorf("%s = %v, want %v", ignored, got, before+1)
	}
	// the stats count it as ignored, not as rejected
	waitFor(t, func() bool { // stats reach the store every 2s
		_, st := admin(t, "GET", "/webhooks/stats", "")
		src, _ := st["sources"].(map[string]any)["fan"].(map[string]any)
		at, _ := src["all_time"].(map[string]any)
		return at["ignored"] == float64(1) && at["rejected"] == float64(0) && at["received"] == float64(4)
	})
}

// metricValue is the value of one series of /metrics (0 when absent).
func metricValue(t *testing.T, series string) float64 {
	t.Helper()
	line := grepLines(scrape(t), series+" ")
	if line == "" {
		return 0
	}
	v, err := strconv.ParseFloat(strings.TrimPrefix(line, series+" "), 64)
	if err != nil {
		t.Fatalf("%s: %q", series, line)
	}
	return v
}

// deliveryStates maps each delivery of an event lookup to its status.
func deliveryStates(ev map[string]any) map[string]any {
	out := map[string]any{}
	ds, _ := ev["deliveries"].([]any)
	for _, d := range ds {
		d := d.(map[string]any)
		out[destinationName(d)] = d["status"]
	}
	return out
}

// destinationName is a delivery's destination as the lookup shows it ("",
// left out: the default).
func destinationName(d map[string]any) string {
	if n, _ := d["destination"].(string); n != "" {
		return n
	}
	return "default"
}
