package integration

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestSeenCacheMirrorsStore: the L1 cache answers a duplicate with what the
// store would (the event lookup's status, the authority it mirrors).
//   - A fan-out event whose billing delivery dies and whose crm delivery
//     is delivered after it: the store says dead (any dead delivery makes
//     the event dead); the cache said delivered, the last result it saw.
//   - A claim made under a 2 s dedupe_window, the config reloaded with 1h
//     before the delivery finishes: after 2 s the claim is over and a
//     resend is a new event (202); the cache took the new config's window
//     for the entry and answered 200: the resend was dropped.
func TestSeenCacheMirrorsStore(t *testing.T) {
	up := newUpstream(t)
	release := make(chan struct{})
	up.setRespondByPath(func(path string, w http.ResponseWriter) {
		switch path {
		case "/in/billing":
			w.WriteHeader(http.StatusUnprocessableEntity) // permanent: dead at once
		case "/in/crm":
			time.Sleep(300 * time.Millisecond) // finishes after billing
		case "/in/short":
			<-release
		}
	})
	storageLine := defaultStorage(t) // the same store across the reload
	load := func(window string) {
		startCaddy(t, up, storageLine, fmt.Sprintf(`
	webhook_ingress /hooks/fan fan {
		verify none
		id_from header Idempotency-Key
		forward_to %[1]s/in/crm
		destination billing %[1]s/in/billing
	}
	webhook_ingress /hooks/short short {
		verify none
		id_from header Idempotency-Key
		forward_to %[1]s/in/short
		dedupe_window %[2]s
		timeout 20s
	}`, up.URL, window))
	}
	load("2s")

	// fan-out: the duplicate's status is the store's aggregate
	hdr := map[string]string{"Idempotency-Key": "fan-1"}
	if resp, m := post(t, "/hooks/fan", []byte(`{}`), hdr); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("%d %v", resp.StatusCode, m)
	}
	var lookup map[string]any
	waitFor(t, func() bool {
		_, lookup = admin(t, "GET", "/webhooks/events/fan/fan-1", "")
		for _, d := range deliveryStates(lookup) {
			if d != "delivered" && d != "dead" {
				return false
			}
		}
		return len(deliveryStates(lookup)) == 2
	})
	time.Sleep(100 * time.Millisecond) // the last result reaches the cache
	for range 2 {
		resp, m := post(t, "/hooks/fan", []byte(`{}`), hdr)
		if resp.StatusCode != http.StatusOK || m["status"] != lookup["status"] || m["status"] != "dead" {
			t.Fatalf("duplicate of the fan-out event: %d %v; the store says %v", resp.StatusCode, m, lookup["status"])
		}
	}

	// a reload does not stretch a claim the cache holds
	accepted := time.Now()
	if resp, m := post(t, "/hooks/short", []byte(`{}`), map[string]string{"Idempotency-Key": "short-1"}); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("%d %v", resp.StatusCode, m)
	}
	up.next(t, 5*time.Second) // its delivery is under way, held by the upstream
	load("1h")
	close(release)
	waitFor(t, func() bool {
		_, ev := admin(t, "GET", "/webhooks/events/short/short-1", "")
		return ev["status"] == "delivered"
	})
	time.Sleep(time.Until(accepted.Add(2500 * time.Millisecond)))
	resp, m := post(t, "/hooks/short", []byte(`{}`), map[string]string{"Idempotency-Key": "short-1"})
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("a resend after the 2s claim ended: %d %v, want 202 (a new event); the cache outlived the claim", resp.StatusCode, m)
	}
}
