package integration

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestEventTypes: type_from finds each event's type (the header rule
// first, then the JSON one); the upstream gets it as X-Webhook-Event-Type,
// in place of one the sender forged; the DLQ entry, the event lookup and
// the stats show it, and the DLQ list and bulk retry filter by it.
func TestEventTypes(t *testing.T) {
	up := newUpstream(t)
	up.setRespond(func(n int, w http.ResponseWriter) {
		if n == 1 {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusUnprocessableEntity) // dead at once
	})
	startCaddy(t, up, "", fmt.Sprintf(`
	webhook_ingress /hooks/typed typed {
		verify hmac %s {
			header X-Signature
			prefix sha256=
		}
		forward_to %s/in/typed
		id_from header Idempotency-Key
		type_from header X-Event-Type
		type_from json kind
	}`, secret, up.URL))

	order := []byte(`{"kind":"ignored.since.the.header.wins"}`)
	h := signedHeaders(order, "t-1")
	h["X-Event-Type"] = "order.created"
	h["X-Webhook-Event-Type"] = "forged.by.the.sender"
	if resp, m := post(t, "/hooks/typed", order, h); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("order: %d %v", resp.StatusCode, m)
	}
	if got := up.next(t, 5*time.Second).Header.Values("X-Webhook-Event-Type"); len(got) != 1 || got[0] != "order.created" {
		t.Fatalf("upstream X-Webhook-Event-Type %q, want [order.created]", got)
	}

	refund := []byte(`{"kind":"refund.issued"}`)
	post(t, "/hooks/typed", refund, signedHeaders(refund, "t-2"))
	if got := up.next(t, 5*time.Second).Header.Get("X-Webhook-Event-Type"); got != "refund.issued" {
		t.Fatalf("upstream X-Webhook-Event-Type %q, want refund.issued", got)
	}
	var entries []any
	waitFor(t, func() bool {
		_, page := admin(t, "GET", "/webhooks/dlq?source=typed&type=refund.issued", "")
		entries, _ = page["entries"].([]any)
		return len(entries) == 1
	})
	entry := entries[0].(map[string]any)
	if entry["event_type"] != "refund.issued" || entry["event_id"] != "t-2" {
		t.Fatalf("DLQ entry %v", entry)
	}
	if code, page := admin(t, "GET", "/webhooks/dlq?source=typed&type=order.created", ""); code != 200 || len(page["entries"].([]any)) != 0 {
		t.Fatalf("type=order.created: %d %v, want no entry", code, page)
	}
	if _, ev := admin(t, "GET", "/webhooks/events/typed/t-1", ""); ev["event_type"] != "order.created" || ev["status"] != "delivered" {
		t.Fatalf("event lookup %v", ev)
	}
	// a bulk retry of another type matches nothing; of this type, the entry
	if _, res := admin(t, "POST", "/webhooks/dlq/retry", `{"source":"typed","type":"order.created","dry_run":true}`); res["matched"] != float64(0) {
		t.Fatalf("bulk retry type=order.created: %v", res)
	}
	if _, res := admin(t, "POST", "/webhooks/dlq/retry", `{"source":"typed","type":"refund.issued","dry_run":true}`); res["matched"] != float64(1) {
		t.Fatalf("bulk retry type=refund.issued: %v", res)
	}

	var types map[string]any
	waitFor(t, func() bool { // stats reach the store every 2s
		_, st := admin(t, "GET", "/webhooks/stats", "")
		src, _ := st["sources"].(map[string]any)["typed"].(map[string]any)
		types, _ = src["types"].(map[string]any)
		return fmt.Sprint(types["refund.issued"]) == "map[all_time:map[dead:1 delivered:0 received:1] last_hour:map[dead:1 delivered:0 received:1]]"
	})
	if got := fmt.Sprint(types["order.created"]); got != "map[all_time:map[dead:0 delivered:1 received:1] last_hour:map[dead:0 delivered:1 received:1]]" {
		t.Errorf("stats of order.created: %s", got)
	}
}
