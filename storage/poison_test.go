package storage

import (
	"net/http"
	"reflect"
	"testing"
	"time"
)

func TestPoisonEvent(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0).UTC()
	for _, tc := range []struct {
		name       string
		raw        string
		want       Event
		attempts   []Attempt
		rawPayload bool
	}{
		{"not JSON: the raw record is the payload", "\x00garbage",
			Event{ID: "id1", EventID: "id1", Body: []byte("\x00garbage")}, nil, true},
		{"a JSON array: nothing salvaged", `[1,2]`,
			Event{ID: "id1", EventID: "id1", Body: []byte(`[1,2]`)}, nil, true},
		{"wrong field types: the rest is salvaged",
			`{"id":"other","event_id":"evt_1","source":"stripe","upstream":"http://up/","headers":{"X-A":["1"]},"body":"eyJuIjoxfQ==","received_at":"2023-11-14T22:13:20Z","attempts":"oops","dedupe":"yes"}`,
			Event{ID: "id1", EventID: "evt_1", Source: "stripe", Upstream: "http://up/",
				Headers: http.Header{"X-A": {"1"}}, Body: []byte(`{"n":1}`), ReceivedAt: t0}, nil, false},
		{"attempts salvaged", `{"event_id":"evt_2","upstream":"http://up/","attempts":[{"n":1,"status":500,"at":"2023-11-14T22:13:20Z","duration_ns":0}]}`,
			Event{ID: "id1", EventID: "evt_2", Upstream: "http://up/"}, []Attempt{{N: 1, Status: 500, At: t0}}, false},
		{"an ordered delivery's lane and chain salvaged", `{"event_id":"evt_4","source":"stripe","destination":"crm","upstream":"http://up/","order_key":"cus_1","order_skip":true,"attempts":7}`,
			Event{ID: "id1", EventID: "evt_4", Source: "stripe", Destination: "crm", Upstream: "http://up/", OrderKey: "cus_1", OrderSkip: true}, nil, false},
		{"its type, tenant, request and trace salvaged (a DLQ entry filtered and erased by them)",
			`{"event_id":"evt_5","source":"shop","type":"orders/create","tenant":"a.myshopify.com","request_id":"r-1","trace":"00-ab-cd-01","upstream":"http://up/","attempts":{}}`,
			Event{ID: "id1", EventID: "evt_5", Source: "shop", Type: "orders/create", Tenant: "a.myshopify.com", RequestID: "r-1", Trace: "00-ab-cd-01", Upstream: "http://up/"}, nil, false},
		{"no upstream: not a real event, the raw record is the payload", `{"event_id":"evt_3","source":"stripe","headers":{"X-A":["1"]},"body":"eA=="}`,
			Event{ID: "id1", EventID: "evt_3", Source: "stripe", Body: []byte(`{"event_id":"evt_3","source":"stripe","headers":{"X-A":["1"]},"body":"eA=="}`)}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, attempts, rawPayload := PoisonEvent("id1", []byte(tc.raw))
			if !reflect.DeepEqual(ev, tc.want) {
				t.Errorf("event\n got %+v\nwant %+v", ev, tc.want)
			}
			if !reflect.DeepEqual(attempts, tc.attempts) {
				t.Errorf("attempts %+v, want %+v", attempts, tc.attempts)
			}
			if rawPayload != tc.rawPayload {
				t.Errorf("rawPayload %v, want %v", rawPayload, tc.rawPayload)
			}
		})
	}
}

// A delivery's id names its destination: a record too broken to say it
// keeps its lane (and so its chain) all the same.
func TestPoisonEventDestinationFromID(t *testing.T) {
	ev, _, raw := PoisonEvent(DeliveryID("ev1", "crm"), []byte("\x00garbage"))
	if ev.Destination != "crm" || ev.ID != "ev1~crm" || !raw {
		t.Errorf("PoisonEvent of a delivery's garbage record: %+v (raw payload %v)", ev, raw)
	}
	ev, _, _ = PoisonEvent(DeliveryID("ev1", "crm"), []byte(`{"destination":"billing","upstream":"http://up/"}`))
	if ev.Destination != "billing" {
		t.Errorf("salvaged destination replaced: %q", ev.Destination)
	}
}
