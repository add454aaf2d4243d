package storage_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

func TestEventFilterMatches(t *testing.T) {
	at := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	single := &storage.EventInfo{ID: "0190-aaaa", EventID: "evt_1", Source: "stripe", EventType: "invoice.paid",
		Status: storage.StatusDelivered, ReceivedAt: at}
	fanned := &storage.EventInfo{ID: "0190-bbbb", EventID: "evt_2", Source: "shop", EventType: "order.created",
		Status: storage.StatusDead, ReceivedAt: at.Add(time.Minute),
		Deliveries: []storage.DeliveryInfo{
			{Destination: "default", Status: storage.StatusDelivered},
			{Destination: "billing", Status: storage.StatusDead},
			{Destination: "crm", Status: storage.StatusQueued},
		}}
	for _, tc := range []struct {
		name   string
		f      storage.EventFilter
		single bool
		fanned bool
	}{
		{"everything", storage.EventFilter{}, true, true},
		{"source", storage.EventFilter{Source: "stripe"}, true, false},
		{"type", storage.EventFilter{Type: "order.created"}, false, true},
		{"type is exact", storage.EventFilter{Type: "order"}, false, false},
		{"status of the event", storage.EventFilter{Status: storage.StatusDead}, false, true},
		{"status delivered: every delivery", storage.EventFilter{Status: storage.StatusDelivered}, true, false},
		{"destination default", storage.EventFilter{Destination: "default"}, true, true},
		{"no destination filter", storage.EventFilter{Destination: ""}, true, true},
		{"another destination", storage.EventFilter{Destination: "billing"}, false, true},
		{"no such destination", storage.EventFilter{Destination: "erp"}, false, false},
		{"destination and its delivery's status", storage.EventFilter{Destination: "crm", Status: storage.StatusQueued}, false, true},
		{"destination and another status", storage.EventFilter{Destination: "default", Status: storage.StatusDead}, false, false},
		{"destination default delivered", storage.EventFilter{Destination: "default", Status: storage.StatusDelivered}, true, true},
		{"internal id prefix", storage.EventFilter{ID: "0190-a"}, true, false},
		{"exact internal id", storage.EventFilter{ID: "0190-bbbb"}, false, true},
		{"provider id", storage.EventFilter{ID: "evt_2"}, false, true},
		{"provider id prefix", storage.EventFilter{ID: "evt_"}, true, true},
		{"id that matches nothing", storage.EventFilter{ID: "bbbb"}, false, false},
		{"since, inclusive", storage.EventFilter{Since: at.Add(time.Minute)}, false, true},
		{"until, inclusive", storage.EventFilter{Until: at}, true, false},
		{"since and until", storage.EventFilter{Since: at, Until: at.Add(time.Minute)}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.f.Matches(single); got != tc.single {
				t.Errorf("single-delivery event: Matches = %v, want %v", got, tc.single)
			}
			if got := tc.f.Matches(fanned); got != tc.fanned {
				t.Errorf("fanned-out event: Matches = %v, want %v", got, tc.fanned)
			}
		})
	}
}

func TestEventFilterLimits(t *testing.T) {
	for _, tc := range []struct{ limit, want int }{{0, 50}, {-1, 50}, {1, 1}, {500, 500}, {501, 500}} {
		f := storage.EventFilter{Limit: tc.limit}
		if got := f.EffectiveLimit(); got != tc.want {
			t.Errorf("limit %d: EffectiveLimit %d, want %d", tc.limit, got, tc.want)
		}
		if got := f.ScanBudget(); got != tc.want*storage.EventsScanFactor {
			t.Errorf("limit %d: ScanBudget %d", tc.limit, got)
		}
	}
}

func TestEventCursor(t *testing.T) {
	for _, id := range []string{"0190a5b2-7c1d-7e3f-8a9b-0c1d2e3f4a5b", "x"} {
		got, err := storage.ParseEventCursor(storage.EventCursor(id))
		if err != nil || got != id {
			t.Errorf("cursor of %q parses to %q, %v", id, got, err)
		}
	}
	if got, err := storage.ParseEventCursor(""); got != "" || err != nil {
		t.Errorf("no cursor: %q, %v", got, err)
	}
	for _, bad := range []string{"!!", "a b", "="} {
		if _, err := storage.ParseEventCursor(bad); !errors.Is(err, storage.ErrInvalidCursor) {
			t.Errorf("cursor %q: err %v, want ErrInvalidCursor", bad, err)
		}
	}
}

func TestStatusValid(t *testing.T) {
	for _, st := range []storage.Status{storage.StatusQueued, storage.StatusInFlight, storage.StatusDelivered, storage.StatusDead} {
		if !st.Valid() {
			t.Errorf("%s not valid", st)
		}
	}
	for _, st := range []storage.Status{"", "pending", storage.StatusErased, "DEAD"} {
		if st.Valid() {
			t.Errorf("%q valid", st)
		}
	}
}
