package storage

import (
	"strings"
	"testing"
)

func TestChainOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		ev   Event
		want string
	}{
		{"not ordered", Event{Source: "stripe"}, ""},
		{"default destination", Event{Source: "stripe", OrderKey: "cus_1"}, "stripe\x00cus_1"},
		{"other destination: its lane", Event{Source: "stripe", Destination: "crm", OrderKey: "cus_1"}, "stripe/crm\x00cus_1"},
		{"a replay is never chained", Event{Source: "stripe", OrderKey: "cus_1", Replay: true}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ChainOf(&tc.ev); got != tc.want {
				t.Errorf("ChainOf = %q, want %q", got, tc.want)
			}
		})
	}
	e := &DLQEntry{ID: "a~crm", Source: "stripe", Destination: "crm", OrderKey: "cus_1"}
	if got := ChainOfEntry(e); got != "stripe/crm\x00cus_1" {
		t.Errorf("ChainOfEntry = %q", got)
	}
}

func TestOrderKeyOf(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ev      Event
		want    string
		wantErr bool
	}{
		{"none", Event{ID: "e"}, "", false},
		{"the event's own", Event{ID: "e", OrderKey: "k"}, "k", false},
		{"its deliveries'", Event{ID: "e", OrderKey: "ignored", Deliveries: []Delivery{{Destination: "a"}, {Destination: "b", OrderKey: "k"}}}, "k", false},
		{"one key twice", Event{ID: "e", Deliveries: []Delivery{{Destination: "a", OrderKey: "k"}, {Destination: "b", OrderKey: "k"}}}, "k", false},
		{"two keys", Event{ID: "e", Deliveries: []Delivery{{Destination: "a", OrderKey: "k"}, {Destination: "b", OrderKey: "j"}}}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := OrderKeyOf(&tc.ev)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Errorf("OrderKeyOf = %q, %v; want %q, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
	// DeliveriesOf refuses two keys, and copies each delivery's
	_, _, err := DeliveriesOf(&Event{ID: "e", Deliveries: []Delivery{{Destination: "a", OrderKey: "k"}, {Destination: "b", OrderKey: "j"}}})
	if err == nil || !strings.Contains(err.Error(), "two order keys") {
		t.Errorf("DeliveriesOf with two order keys: err = %v", err)
	}
	jobs, _, err := DeliveriesOf(&Event{ID: "e", Deliveries: []Delivery{{Destination: "a", OrderKey: "k", OrderSkip: true}, {Destination: "b"}}})
	if err != nil || jobs[0].OrderKey != "k" || !jobs[0].OrderSkip || jobs[1].OrderKey != "" || jobs[1].OrderSkip {
		t.Errorf("DeliveriesOf: %+v, %v", jobs, err)
	}
	jobs, _, err = DeliveriesOf(&Event{ID: "e", OrderKey: "k", OrderSkip: true})
	if err != nil || jobs[0].OrderKey != "k" || !jobs[0].OrderSkip {
		t.Errorf("DeliveriesOf of an event alone: %+v, %v", jobs, err)
	}
}

func TestChainRules(t *testing.T) {
	block, skip := &Event{OrderKey: "k"}, &Event{OrderKey: "k", OrderSkip: true}
	for _, tc := range []struct {
		job  *Event
		r    Result
		want bool
	}{
		{block, Delivered, true}, {block, Retry, false}, {block, Release, false}, {block, Dead, false},
		{skip, Delivered, true}, {skip, Retry, false}, {skip, Release, false}, {skip, Dead, true},
	} {
		if got := PopsChain(tc.job, tc.r); got != tc.want {
			t.Errorf("PopsChain(skip %v, result %d) = %v, want %v", tc.job.OrderSkip, tc.r, got, tc.want)
		}
	}
	for st, want := range map[DLQStatus]bool{DLQResolved: true, DLQDiscarded: true, DLQInvestigating: false, DLQRetried: false, DLQPending: false} {
		if got := ReleasesChain(st); got != want {
			t.Errorf("ReleasesChain(%s) = %v, want %v", st, got, want)
		}
	}
	for st, want := range map[Status]bool{"": true, StatusDead: true, StatusQueued: false, StatusInFlight: false} {
		if got := HeadBlocks(st); got != want {
			t.Errorf("HeadBlocks(%q) = %v, want %v", st, got, want)
		}
	}
	for _, tc := range []struct {
		e      DLQEntry
		head   string
		length int
		want   int
	}{
		{DLQEntry{ID: "a", Status: DLQPending}, "a", 4, 3},
		{DLQEntry{ID: "a", Status: DLQInvestigating}, "a", 2, 1},
		{DLQEntry{ID: "a", Status: DLQRetried}, "a", 4, 0},
		{DLQEntry{ID: "a", Status: DLQResolved}, "a", 4, 0},
		{DLQEntry{ID: "a", Status: DLQPending}, "b", 4, 0},
		{DLQEntry{ID: "a", Status: DLQPending}, "", 0, 0},
	} {
		if got := ChainWaiting(&tc.e, tc.head, tc.length); got != tc.want {
			t.Errorf("ChainWaiting(%s %s, head %q, length %d) = %d, want %d", tc.e.ID, tc.e.Status, tc.head, tc.length, got, tc.want)
		}
	}
}

func TestOrderKeyOfChain(t *testing.T) {
	ev := &Event{Source: "stripe", Destination: "crm", OrderKey: "cus\x001"}
	if key, ok := OrderKeyOfChain(LaneOf(ev), ChainOf(ev)); !ok || key != "cus\x001" {
		t.Errorf("OrderKeyOfChain = %q, %v", key, ok)
	}
	if _, ok := OrderKeyOfChain("stripe", ChainOf(ev)); ok {
		t.Error("a chain of another lane is one of stripe's")
	}
}
