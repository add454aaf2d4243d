package storagetest

import (
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hookline/hookline/storage"
)

// EntriesKept stores, in s, three events whose claims ended and whose
// jobs are all past retention while DLQ entries of theirs are kept, at
// time now (their entries' retention is a day): the first to default
// (delivered), billing and crm (both dead); the second to billing (dead)
// and crm (delivered); the third to the default destination alone (dead).
// A backend's upgrade test takes their deliveries indexes and (source,
// event id) indexes away, as an earlier version did, and checks with
// EntriesFound that it gives them back.
func EntriesKept(t testing.TB, s storage.Store, now time.Time) []*storage.Event {
	t.Helper()
	ctx := t.Context()
	all := NewEvent("stripe", "evt_all")
	for _, d := range []string{"default", "billing", "crm"} {
		all.Deliveries = append(all.Deliveries, storage.Delivery{Destination: d, Upstream: "http://127.0.0.1:1/" + d})
	}
	named := NewEvent("stripe", "evt_named")
	for _, d := range []string{"billing", "crm"} {
		named.Deliveries = append(named.Deliveries, storage.Delivery{Destination: d, Upstream: "http://127.0.0.1:1/" + d})
	}
	plain := NewEvent("stripe", "evt_plain")
	dead := map[string]bool{
		storage.DeliveryID(all.ID, "billing"): true, storage.DeliveryID(all.ID, "crm"): true,
		storage.DeliveryID(named.ID, "billing"): true, plain.ID: true,
	}
	events := []*storage.Event{all, named, plain}
	for _, ev := range events {
		ev.ReceivedAt = now
		if _, err := s.Enqueue(ctx, ev, now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	// due when they were enqueued, by the clock: now may be some time ago
	jobs, err := s.Lease(ctx, time.Now().Add(time.Second), 10, time.Minute, nil)
	if err != nil || len(jobs) != 6 {
		t.Fatalf("Lease: %d jobs, %v", len(jobs), err)
	}
	for _, j := range jobs {
		out := storage.Outcome{Result: storage.Delivered, Attempt: &storage.Attempt{N: 1, At: now, Status: 200}}
		if dead[j.ID] {
			out = storage.Outcome{Result: storage.Dead, Attempt: &storage.Attempt{N: 1, At: now, Status: 500}, Error: "HTTP 500"}
		}
		if err := s.Finish(ctx, j, out); err != nil {
			t.Fatal(err)
		}
	}
	// their claims ended, their jobs past retention
	if _, err := s.Cleanup(ctx, now.Add(2*time.Hour), time.Minute, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	return events
}

// EntriesFound checks that the events of EntriesKept are listed and
// found by Lookup, by their internal and their provider's ids, with their
// dead deliveries, that erasing the first takes both its entries, and
// that the entries' retention takes what is left.
func EntriesFound(t testing.TB, s storage.Store, events []*storage.Event, now time.Time) {
	t.Helper()
	ctx := t.Context()
	all, named, plain := events[0], events[1], events[2]
	listed := map[string]bool{}
	for _, page := range ListAllEvents(t, s, storage.EventFilter{}) {
		for _, info := range page.Events {
			listed[info.ID] = true
		}
	}
	for _, ev := range events {
		if !listed[ev.ID] {
			t.Errorf("event %s is not listed", ev.EventID)
		}
	}
	for _, tc := range []struct {
		ev   *storage.Event
		want []string // its dead deliveries' destinations
	}{{all, []string{"billing", "crm"}}, {named, []string{"billing"}}, {plain, []string{storage.DefaultDestination}}} {
		if info, err := s.Lookup(ctx, tc.ev.Source, tc.ev.EventID); err != nil || info.ID != tc.ev.ID {
			t.Errorf("Lookup by provider id %s: %+v, %v", tc.ev.EventID, info, err)
		}
		info, err := s.Lookup(ctx, tc.ev.Source, tc.ev.ID)
		if err != nil {
			t.Errorf("Lookup(%s): %v", tc.ev.EventID, err)
			continue
		}
		var got []string
		for _, d := range []string{storage.DefaultDestination, "billing", "crm"} {
			if st, ok := storage.DeliveryStatus(info, d); ok && st == storage.StatusDead {
				got = append(got, d)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Lookup(%s): dead deliveries %v, want %v", tc.ev.EventID, got, tc.want)
		}
	}
	res, err := s.EraseBatch(ctx, all.Source, []string{all.ID}, now.Add(2*time.Hour))
	if err != nil || len(res) != 1 || res[0].DLQEntries != 2 {
		t.Errorf("EraseBatch(%s): %+v, %v; want its 2 DLQ entries erased", all.EventID, res, err)
	}
	page, err := s.DLQList(ctx, storage.DLQFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range page.Entries {
		left = append(left, e.ID)
	}
	want := []string{plain.ID, storage.DeliveryID(named.ID, "billing")}
	slices.Sort(left)
	slices.Sort(want)
	if !slices.Equal(left, want) {
		t.Errorf("DLQ after erasing %s: %v, want %v", all.EventID, left, want)
	}
	if _, err := s.Cleanup(ctx, now.Add(48*time.Hour), time.Minute, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	if pages := ListAllEvents(t, s, storage.EventFilter{}); len(pages[0].Events) != 0 {
		t.Errorf("past the entries' retention: listed %d events, want none", len(pages[0].Events))
	}
}

// SharedIDEntries stores, in s, two events with one provider's id
// (stripe, evt_same), the later accepted once the earlier's claim ended,
// each dead with its DLQ entry kept while its job is past retention, at
// time now (the entries' retention is a day), and returns them, earlier
// first (their ids are time-ordered, as the ingress makes them). A
// backend's upgrade test takes the id's claim or index away, as an
// earlier version left it, and checks that its restore gives the id to
// the later event.
func SharedIDEntries(t testing.TB, s storage.Store, now time.Time) []*storage.Event {
	t.Helper()
	ctx := t.Context()
	var evs []*storage.Event
	for range 2 {
		id, err := uuid.NewV7()
		if err != nil {
			t.Fatal(err)
		}
		ev := NewEvent("stripe", "evt_same")
		ev.ID, ev.ReceivedAt = id.String(), now
		// a window already over: the next event with the id is stored
		if res, err := s.Enqueue(ctx, ev, now.Add(-time.Second)); err != nil || res.Duplicate {
			t.Fatalf("Enqueue: %+v, %v", res, err)
		}
		// due when it was enqueued, by the clock: now may be some time ago
		jobs, err := s.Lease(ctx, time.Now().Add(time.Second), 10, time.Minute, nil)
		if err != nil || len(jobs) != 1 {
			t.Fatalf("Lease: %d jobs, %v", len(jobs), err)
		}
		if err := s.Finish(ctx, jobs[0], storage.Outcome{Result: storage.Dead, Attempt: &storage.Attempt{N: 1, At: now, Status: 500}, Error: "HTTP 500"}); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	if _, err := s.Cleanup(ctx, now.Add(2*time.Hour), time.Minute, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	return evs
}
