package storagetest

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

// Erasure (storage.Eraser): the event and everything stored of it go, its
// claim stays (a resend is a duplicate, answered "erased").

// erase erases source/eventID and expects it found.
func erase(t testing.TB, s storage.Store, source, eventID string) storage.EraseResult {
	t.Helper()
	res, err := s.Erase(t.Context(), source, eventID, time.Now())
	if err != nil {
		t.Fatalf("Erase(%s, %s): %v", source, eventID, err)
	}
	return res
}

// wantErased checks that nothing of the event ev (deduplicated, claimed
// until until) is found any more, that a second erasure finds nothing,
// and that a resend is a duplicate answered "erased".
func wantErased(t testing.TB, s storage.Store, ev *storage.Event, until time.Time) {
	t.Helper()
	if info, err := s.Lookup(t.Context(), ev.Source, ev.EventID); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Lookup after Erase = %+v, %v; want ErrNotFound", info, err)
	}
	if _, err := s.Erase(t.Context(), ev.Source, ev.EventID, time.Now()); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("a second Erase: %v, want ErrNotFound", err)
	}
	for _, id := range append(deliveryIDs(ev), ev.ID) {
		if _, err := s.DLQGet(t.Context(), id); !errors.Is(err, storage.ErrDLQNotFound) {
			t.Errorf("DLQGet(%s) after Erase: %v, want ErrDLQNotFound", id, err)
		}
	}
	if !ev.Dedupe {
		return
	}
	resend := newEvent(t, ev.Source, ev.EventID)
	res := enqueue(t, s, resend, until.Add(time.Hour))
	if !res.Duplicate || res.ID != ev.ID || res.Status != storage.StatusErased {
		t.Errorf("resend after Erase = %+v, want a duplicate of %s, status erased", res, ev.ID)
	}
	// a backend may compute a duplicate's claim end from what is left of
	// it (Redis: PTTL), a round trip off
	if d := res.DedupeUntil.Sub(until); d < -100*time.Millisecond || d > 100*time.Millisecond {
		t.Errorf("resend after Erase: claim until %v, want %v (kept as it was)", res.DedupeUntil, until)
	}
}

// wantNothingLeft checks that the store holds no job, no DLQ entry and no
// delivered event any more (the erased event was the only one).
func wantNothingLeft(t testing.TB, s storage.Store) {
	t.Helper()
	wantCounts(t, s, storage.Counts{})
	if jobs := lease(t, s, time.Now().Add(24*time.Hour), 100, time.Minute); len(jobs) != 0 {
		t.Errorf("Lease after Erase = %v, want nothing", jobIDs(jobs))
	}
	if p := listAll(t, s, storage.DLQFilter{}); len(p[0].Entries) != 0 {
		t.Errorf("DLQList after Erase: %d entries", len(p[0].Entries))
	}
	if c, err := s.DLQCounts(t.Context()); err != nil || len(c) != 0 {
		t.Errorf("DLQCounts after Erase = %v, %v; want none", c, err)
	}
	if l, err := s.ListDelivered(t.Context(), storage.ReplayFilter{}); err != nil || len(l.Events) != 0 {
		t.Errorf("ListDelivered after Erase = %d, %v; want none", len(l.Events), err)
	}
	q, err := s.QueueBySource(t.Context())
	if err != nil {
		t.Fatalf("QueueBySource: %v", err)
	}
	for src, c := range q {
		if c != (storage.Counts{}) {
			t.Errorf("QueueBySource after Erase: %s has %+v, want nothing", src, c)
		}
	}
}

// testEraseOne: a queued one-delivery event is erased; another event of
// the same source is untouched; the stats counters are not changed;
// unknown events and other sources' are ErrNotFound.
func testEraseOne(t *testing.T, f Factory) {
	s := f.Open(t)
	until := time.Now().Add(time.Hour)
	ev := newEvent(t, "stripe", "evt_erase")
	other := newEvent(t, "stripe", "evt_keep")
	mustEnqueue(t, s, ev, until)
	mustEnqueue(t, s, other, until)
	if err := s.AddStats(t.Context(), storage.StatsBatch{At: time.Now(), Counters: map[string]map[string]int64{"stripe": {"accepted": 2}}}); err != nil {
		t.Fatal(err)
	}
	_, statsBefore, err := s.Stats(t.Context(), time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}

	for _, name := range [][2]string{{"stripe", "evt_unknown"}, {"github", "evt_erase"}, {"github", ev.ID}} {
		if _, err := s.Erase(t.Context(), name[0], name[1], time.Now()); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("Erase(%s, %s): %v, want ErrNotFound", name[0], name[1], err)
		}
	}
	res := erase(t, s, "stripe", "evt_erase")
	if res.ID != ev.ID || res.Deliveries != 1 || res.DLQEntries != 0 || !closeTo(res.DedupeUntil, until) {
		t.Errorf("Erase = %+v, want id %s, 1 delivery, 0 dlq entries, claim until %v", res, ev.ID, until)
	}
	wantErased(t, s, ev, until)
	wantCounts(t, s, storage.Counts{Queued: 1})
	checkInfo(t, lookup(t, s, "stripe", "evt_keep"), *other, storage.StatusQueued)
	j := leaseOne(t, s, time.Now(), time.Minute, other.ID)
	checkEvent(t, "the other event", j.Event, *other)
	if _, all, err := s.Stats(t.Context(), time.Now().Add(-time.Hour)); err != nil || all["stripe"]["accepted"] != statsBefore["stripe"]["accepted"] {
		t.Errorf("stats after Erase = %v, %v; want %v", all, err, statsBefore)
	}
	if f.Reopen == nil {
		return
	}
	// the erasure is durable, tombstone included
	s = f.Reopen(t, s)
	if _, err := s.Lookup(t.Context(), "stripe", "evt_erase"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Lookup after Erase and Reopen: %v, want ErrNotFound", err)
	}
	if res := enqueue(t, s, newEvent(t, "stripe", "evt_erase"), until); !res.Duplicate || res.Status != storage.StatusErased {
		t.Errorf("resend after Erase and Reopen = %+v, want a duplicate, erased", res)
	}
}

// testEraseWithoutProviderID: an event without a provider id is erased by
// its internal id, as Lookup finds it; nothing stays.
func testEraseWithoutProviderID(t *testing.T, f Factory) {
	s := f.Open(t)
	ev := newEvent(t, "stripe", "")
	ev.Dedupe, ev.EventID = false, ""
	ev.EventID = ev.ID
	mustEnqueue(t, s, ev, time.Now().Add(time.Hour))
	res := erase(t, s, "stripe", ev.ID)
	if res.ID != ev.ID || res.Deliveries != 1 || !res.DedupeUntil.IsZero() {
		t.Errorf("Erase = %+v, want id %s, 1 delivery, no claim", res, ev.ID)
	}
	wantErased(t, s, ev, time.Time{})
	wantNothingLeft(t, s)
}

// testEraseFanOut: an event for three destinations, one delivered, one
// dead (its DLQ entry pending), one delivered after a retry: every job
// and the DLQ entry go, by the event's provider id.
func testEraseFanOut(t *testing.T, f Factory) {
	s := f.Open(t)
	until := time.Now().Add(time.Hour)
	ev := fanOutEvent(t, "stripe", "evt_fan_erase")
	mustEnqueue(t, s, ev, until)
	ids := deliveryIDs(ev)
	jobs := leaseExactly(t, s, time.Now(), ids...)
	delivered(t, s, jobByID(t, jobs, ids[0]))
	died(t, s, jobByID(t, jobs, ids[1]))
	finish(t, s, jobByID(t, jobs, ids[2]), storage.Outcome{Result: storage.Retry, Attempt: attempt(1, time.Now(), 503, "busy"), Due: time.Now()})
	delivered(t, s, leaseExactly(t, s, time.Now(), ids[2])[0])
	if info := lookup(t, s, "stripe", "evt_fan_erase"); info.Status != storage.StatusDead || len(info.Deliveries) != 3 {
		t.Fatalf("Lookup before Erase: %+v", info)
	}
	dlqGet(t, s, ids[1])
	if bodies, records, ok := stored(t, f, s, ev); ok && (bodies == 0 || records != 1) {
		t.Fatalf("before Erase the body is stored %d times, in %d payload records; want some, in one", bodies, records)
	}

	res := erase(t, s, "stripe", "evt_fan_erase")
	if res.ID != ev.ID || res.Deliveries != 3 || res.DLQEntries != 1 || !closeTo(res.DedupeUntil, until) {
		t.Errorf("Erase = %+v, want id %s, 3 deliveries, 1 dlq entry", res, ev.ID)
	}
	wantErased(t, s, ev, until)
	wantNothingLeft(t, s)
	// nothing of the body is left: no job, no DLQ entry, no payload record
	if bodies, records, ok := stored(t, f, s, ev); ok && (bodies != 0 || records != 0) {
		t.Errorf("after Erase the body is stored %d times, in %d payload records; want none", bodies, records)
	}
	// the DLQ entry is gone: no retry brings the event back
	if err := s.DLQRetry(t.Context(), ids[1], time.Now()); !errors.Is(err, storage.ErrDLQNotFound) {
		t.Errorf("DLQRetry after Erase: %v, want ErrDLQNotFound", err)
	}
	if err := s.Replay(t.Context(), &storage.EventInfo{ID: ids[0], EventID: ev.EventID, Source: "stripe"}, time.Now()); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Replay after Erase: %v, want ErrNotFound", err)
	}
	wantNothingLeft(t, s)
}

// testEraseDeadEntriesOnly: a dead delivery whose DLQ entry was resolved
// and a retried one are erased with the rest (whatever the entry's status).
func testEraseDeadEntriesOnly(t *testing.T, f Factory) {
	s := f.Open(t)
	ev := fanOutEvent(t, "stripe", "evt_dead_erase")
	mustEnqueue(t, s, ev, time.Now().Add(time.Hour))
	ids := deliveryIDs(ev)
	for _, j := range leaseExactly(t, s, time.Now(), ids...) {
		died(t, s, j)
	}
	if err := s.DLQSetStatus(t.Context(), ids[0], storage.DLQResolved, "done", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.DLQRetry(t.Context(), ids[1], time.Now()); err != nil {
		t.Fatal(err)
	}
	res := erase(t, s, "stripe", "evt_dead_erase")
	if res.Deliveries != 3 || res.DLQEntries != 3 {
		t.Errorf("Erase = %+v, want 3 deliveries, 3 dlq entries", res)
	}
	wantNothingLeft(t, s)
}

// testEraseInFlight: a delivery leased when its event is erased is gone:
// its worker's Finish fails with ErrLeaseLost whatever the outcome, and
// nothing comes back (no record, no DLQ entry, nothing to lease).
func testEraseInFlight(t *testing.T, f Factory) {
	for _, out := range []storage.Outcome{
		{Result: storage.Delivered, Attempt: attempt(1, time.Now(), 200, "")},
		{Result: storage.Dead, Attempt: attempt(1, time.Now(), 400, "bad"), Error: "permanent"},
		{Result: storage.Retry, Attempt: attempt(1, time.Now(), 503, "busy"), Due: time.Now()},
		{Result: storage.Release},
	} {
		t.Run(map[storage.Result]string{storage.Delivered: "delivered", storage.Dead: "dead", storage.Retry: "retry", storage.Release: "release"}[out.Result], func(t *testing.T) {
			s := f.Open(t)
			until := time.Now().Add(time.Hour)
			ev := newEvent(t, "stripe", "evt_inflight")
			mustEnqueue(t, s, ev, until)
			j := leaseOne(t, s, time.Now(), time.Minute, ev.ID)
			if res := erase(t, s, "stripe", ev.EventID); res.Deliveries != 1 {
				t.Errorf("Erase = %+v", res)
			}
			if err := s.Finish(t.Context(), j, out); !errors.Is(err, storage.ErrLeaseLost) {
				t.Fatalf("Finish after Erase: %v, want ErrLeaseLost", err)
			}
			wantErased(t, s, ev, until)
			wantNothingLeft(t, s)
		})
	}
}

// testEraseOrdered: erasing the head of an ordered chain lets the next
// delivery of its key go, whether the head is queued, in flight or dead
// and blocking; erasing a delivery waiting behind the head takes it out
// of its chain (the others keep their order); other keys are untouched.
func testEraseOrdered(t *testing.T, f Factory) {
	eventOf := func(t *testing.T, id string) string { return "evt_" + id }
	t.Run("queued head", func(t *testing.T) {
		s := f.Open(t)
		a := enqueueOrdered(t, s, "shop", false, "A", "A", "A")["A"]
		erase(t, s, "shop", eventOf(t, a[0]))
		delivered(t, s, leaseExactly(t, s, time.Now(), a[1])[0])
		delivered(t, s, leaseExactly(t, s, time.Now(), a[2])[0])
		wantCounts(t, s, storage.Counts{})
	})
	t.Run("head in flight", func(t *testing.T) {
		s := f.Open(t)
		ids := enqueueOrdered(t, s, "shop", false, "A", "B", "A")
		a, b := ids["A"], ids["B"]
		jobs := leaseExactly(t, s, time.Now(), a[0], b[0])
		erase(t, s, "shop", eventOf(t, a[0]))
		if err := s.Finish(t.Context(), jobByID(t, jobs, a[0]), storage.Outcome{Result: storage.Delivered, Attempt: attempt(1, time.Now(), 200, "")}); !errors.Is(err, storage.ErrLeaseLost) {
			t.Fatalf("Finish of an erased head: %v, want ErrLeaseLost", err)
		}
		delivered(t, s, leaseExactly(t, s, time.Now(), a[1])[0])
		delivered(t, s, jobByID(t, jobs, b[0]))
		wantCounts(t, s, storage.Counts{})
	})
	t.Run("dead head blocking", func(t *testing.T) {
		s := f.Open(t)
		a := enqueueOrdered(t, s, "shop", false, "A", "A", "A")["A"]
		died(t, s, leaseExactly(t, s, time.Now(), a[0])[0])
		leaseExactly(t, s, time.Now())
		wantWaiting(t, s, a[0], 2)
		if res := erase(t, s, "shop", eventOf(t, a[0])); res.DLQEntries != 1 {
			t.Errorf("Erase = %+v, want its DLQ entry removed", res)
		}
		delivered(t, s, leaseExactly(t, s, time.Now(), a[1])[0])
		delivered(t, s, leaseExactly(t, s, time.Now(), a[2])[0])
		wantCounts(t, s, storage.Counts{})
	})
	t.Run("follower", func(t *testing.T) {
		s := f.Open(t)
		ids := enqueueOrdered(t, s, "shop", false, "A", "A", "A", "A", "B")
		a, b := ids["A"], ids["B"]
		erase(t, s, "shop", eventOf(t, a[1]))
		erase(t, s, "shop", eventOf(t, a[3])) // the chain's tail
		wantCounts(t, s, storage.Counts{Queued: 3})
		if q, err := s.QueueBySource(t.Context()); err != nil || q["shop"] != (storage.Counts{Queued: 3}) {
			t.Errorf("QueueBySource = %+v, %v; want 3 queued", q, err)
		}
		jobs := leaseExactly(t, s, time.Now(), a[0], b[0])
		delivered(t, s, jobByID(t, jobs, a[0]))
		delivered(t, s, jobByID(t, jobs, b[0]))
		delivered(t, s, leaseExactly(t, s, time.Now(), a[2])[0])
		leaseExactly(t, s, time.Now())
		wantCounts(t, s, storage.Counts{})
		// a new event of the key is the head at once: the chain is empty
		c := enqueueOrdered(t, s, "shop", false, "A")["A"]
		leaseExactly(t, s, time.Now(), c[0])
	})
	t.Run("fan-out with an ordered delivery", func(t *testing.T) {
		s := f.Open(t)
		first := orderedEvent(t, "shop", "", false)
		first.OrderKey = ""
		first.Deliveries = []storage.Delivery{{Destination: "default", Upstream: "http://x/"}, {Destination: "crm", Upstream: "http://y/", OrderKey: "A"}}
		second := orderedEvent(t, "shop", "", false)
		second.OrderKey = ""
		second.Deliveries = []storage.Delivery{{Destination: "crm", Upstream: "http://y/", OrderKey: "A"}}
		mustEnqueue(t, s, first, time.Now().Add(time.Hour))
		mustEnqueue(t, s, second, time.Now().Add(time.Hour))
		leaseExactly(t, s, time.Now(), first.ID, storage.DeliveryID(first.ID, "crm"))
		if res := erase(t, s, "shop", first.EventID); res.Deliveries != 2 {
			t.Errorf("Erase = %+v, want 2 deliveries", res)
		}
		delivered(t, s, leaseExactly(t, s, time.Now(), storage.DeliveryID(second.ID, "crm"))[0])
		wantCounts(t, s, storage.Counts{})
	})
}

// testEraseClaimExpiry: the claim kept by an erasure ends when it would
// have: a resend after it is a new event, stored and delivered; Cleanup
// removes what is left of the erasure (its tombstone) without error.
func testEraseClaimExpiry(t *testing.T, f Factory) {
	s := f.Open(t)
	until := time.Now().Add(300 * time.Millisecond)
	ev := newEvent(t, "stripe", "evt_short")
	mustEnqueue(t, s, ev, until)
	erase(t, s, "stripe", "evt_short")
	if res := enqueue(t, s, newEvent(t, "stripe", "evt_short"), time.Now().Add(time.Hour)); !res.Duplicate || res.Status != storage.StatusErased {
		t.Fatalf("resend within the claim = %+v, want a duplicate, erased", res)
	}
	time.Sleep(time.Until(until) + 50*time.Millisecond)
	if _, err := s.Cleanup(t.Context(), time.Now(), time.Hour, time.Hour); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	if f.Dump != nil { // the claim and the tombstone are gone: nothing names the event
		for _, v := range f.Dump(t, s) {
			if bytes.Contains(v, []byte(ev.ID)) {
				t.Errorf("after the claim expired and Cleanup, the store still holds the erased event's id: %q", v)
			}
		}
	}
	again := newEvent(t, "stripe", "evt_short")
	mustEnqueue(t, s, again, time.Now().Add(time.Hour))
	checkInfo(t, lookup(t, s, "stripe", "evt_short"), *again, storage.StatusQueued)
	leaseOne(t, s, time.Now(), time.Minute, again.ID)
}
