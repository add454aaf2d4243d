package storagetest

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

// testDLQRetryAfterRetention: an event without a provider id (never
// deduplicated, its event id is its internal id) dies, its finished record
// is removed by retention while the DLQ entry stays; retrying the entry
// enqueues it again, and its delivery can be recorded.
func testDLQRetryAfterRetention(t *testing.T, f Factory) {
	s := f.Open(t)
	ev := newEvent(t, "plain", "")
	ev.EventID, ev.Dedupe = ev.ID, false
	mustEnqueue(t, s, ev, time.Time{})
	finish(t, s, leaseOneOf(t, s, ev.ID), storage.Outcome{Result: storage.Dead, Attempt: attempt(1, time.Now(), 400, ""), Error: "bad"})
	if _, err := s.Cleanup(t.Context(), time.Now().Add(48*time.Hour), time.Hour, 0); err != nil {
		t.Fatal(err)
	}
	dlqGet(t, s, ev.ID)
	if err := s.DLQRetry(t.Context(), ev.ID, time.Now()); err != nil {
		t.Fatalf("DLQRetry after retention: %v", err)
	}
	job := leaseOneOf(t, s, ev.ID)
	if !bytes.Equal(job.Body, ev.Body) {
		t.Fatalf("re-enqueued body %q, want %q", job.Body, ev.Body)
	}
	finish(t, s, job, storage.Outcome{Result: storage.Delivered, Attempt: attempt(2, time.Now(), 200, "")})
	if info := lookup(t, s, "plain", ev.ID); info.Status != storage.StatusDelivered {
		t.Fatalf("after delivery: %+v", info)
	}
}

// testLookupAfterClaimExpiry: an event stays findable by its provider id
// for as long as it is retained, even once its dedupe claim has expired.
func testLookupAfterClaimExpiry(t *testing.T, f Factory) {
	s := f.Open(t)
	ev := newEvent(t, "stripe", "evt_short_window")
	mustEnqueue(t, s, ev, time.Now().Add(time.Minute))
	finish(t, s, leaseOneOf(t, s, ev.ID), storage.Outcome{Result: storage.Delivered, Attempt: attempt(1, time.Now(), 200, "")})
	// an hour later the claim is gone, the event is within its 7-day retention
	if _, err := s.Cleanup(t.Context(), time.Now().Add(time.Hour), 7*24*time.Hour, 0); err != nil {
		t.Fatal(err)
	}
	if info := lookup(t, s, "stripe", "evt_short_window"); info.ID != ev.ID || info.Status != storage.StatusDelivered {
		t.Fatalf("Lookup after the claim expired: %+v", info)
	}
	// the id is free again: a new event with it is stored, and Lookup finds the new one
	again := newEvent(t, "stripe", "evt_short_window")
	mustEnqueue(t, s, again, time.Now().Add(time.Hour))
	if info := lookup(t, s, "stripe", "evt_short_window"); info.ID != again.ID || info.Status != storage.StatusQueued {
		t.Fatalf("Lookup after re-enqueue: %+v", info)
	}
	// past retention the delivered record is removed, the new one stays
	if _, err := s.Cleanup(t.Context(), time.Now().Add(8*24*time.Hour), 7*24*time.Hour, 0); err != nil {
		t.Fatal(err)
	}
	if info := lookup(t, s, "stripe", "evt_short_window"); info.ID != again.ID {
		t.Fatalf("Lookup after the old record's retention: %+v", info)
	}
}

func testRetention(t *testing.T, f Factory) {
	s := f.Open(t)
	long := time.Now().Add(48 * time.Hour)
	delivered := newEvent(t, "stripe", "evt_delivered")
	queued := newEvent(t, "stripe", "evt_queued")
	shortClaim := newEvent(t, "stripe", "evt_short_claim")
	dead := newEvent(t, "stripe", "evt_dead")
	mustEnqueue(t, s, delivered, long)
	mustEnqueue(t, s, queued, long)
	mustEnqueue(t, s, shortClaim, time.Now().Add(time.Hour))
	mustEnqueue(t, s, dead, long)
	finish(t, s, leaseOneOf(t, s, delivered.ID), storage.Outcome{Result: storage.Delivered, Attempt: attempt(1, time.Now(), 200, "")})
	finish(t, s, leaseOneOf(t, s, dead.ID), storage.Outcome{Result: storage.Dead, Attempt: attempt(1, time.Now(), 400, ""), Error: "bad"})
	base := time.Now()
	ctx := t.Context()

	// nothing is old enough yet
	n, err := s.Cleanup(ctx, base.Add(time.Minute), time.Hour, time.Hour)
	if err != nil || n != 0 {
		t.Fatalf("Cleanup of recent records = %d, %v; want 0 removed", n, err)
	}
	if info := lookup(t, s, "stripe", "evt_delivered"); info.Status != storage.StatusDelivered {
		t.Errorf("recent delivered event: %s", info.Status)
	}
	dlqGet(t, s, dead.ID)
	if res := enqueue(t, s, newEvent(t, "stripe", "evt_short_claim"), long); !res.Duplicate {
		t.Error("claim removed before it expired")
	}

	// two hours later: finished events past a one hour retention go, and
	// so does the expired claim; DLQ entries are kept (dlqRetention 0)
	later := base.Add(2 * time.Hour)
	n, err = s.Cleanup(ctx, later, time.Hour, 0)
	if err != nil || n == 0 {
		t.Fatalf("Cleanup = %d, %v; want records removed", n, err)
	}
	if _, err := s.Lookup(ctx, "stripe", "evt_delivered"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Lookup of a delivered event past retention: err = %v, want ErrNotFound", err)
	}
	if res := enqueue(t, s, newEvent(t, "stripe", "evt_delivered"), long); !res.Duplicate || res.ID != delivered.ID || res.Status != storage.StatusDelivered {
		t.Errorf("enqueue within the claim of a removed delivered event = %+v, want duplicate of %s, delivered", res, delivered.ID)
	}
	if info := lookup(t, s, "stripe", "evt_queued"); info.Status != storage.StatusQueued || info.ID != queued.ID {
		t.Errorf("queued event after Cleanup: %s %s", info.ID, info.Status)
	}
	if info := lookup(t, s, "stripe", "evt_dead"); info.Status != storage.StatusDead || info.ID != dead.ID {
		t.Errorf("dead event with a DLQ entry after Cleanup: %s %s", info.ID, info.Status)
	}
	if e := dlqGet(t, s, dead.ID); !bytes.Equal(e.Payload, dead.Body) {
		t.Error("DLQ entry lost its payload in Cleanup")
	}
	again := newEvent(t, "stripe", "evt_short_claim")
	if res := enqueue(t, s, again, long); res.Duplicate || res.ID != again.ID {
		t.Errorf("enqueue after the claim expired and was cleaned up = %+v, want stored as %s", res, again.ID)
	}
	jobs := lease(t, s, time.Now(), 10, time.Minute)
	if got, want := jobIDs(jobs), []string{queued.ID, shortClaim.ID, again.ID}; !slices.Equal(got, want) {
		t.Errorf("leased %v after Cleanup, want %v", got, want)
	}
	for _, j := range jobs {
		if j.ID == queued.ID {
			checkEvent(t, "queued job after Cleanup", j.Event, *queued)
		}
	}

	// the DLQ entry outlives its event record: retrying it restores the job
	if err := s.DLQRetry(ctx, dead.ID, time.Now()); err != nil {
		t.Fatalf("DLQRetry after the event record was cleaned up: %v", err)
	}
	j := leaseOne(t, s, time.Now(), time.Minute, dead.ID)
	checkEvent(t, "job retried after Cleanup", j.Event, *dead)
	if j.RoundAttempts() != 0 || len(j.Attempts) != 1 {
		t.Errorf("job retried after Cleanup: %d attempts (round %d), want 1 (0)", len(j.Attempts), j.RoundAttempts())
	}
	finish(t, s, j, storage.Outcome{Result: storage.Dead, Attempt: attempt(2, time.Now(), 400, ""), Error: "still bad"})
	if e := dlqGet(t, s, dead.ID); e.Status != storage.DLQPending || e.Retries != 1 || len(e.Attempts) != 2 {
		t.Errorf("entry after dying again: %s, retries %d, %d attempts; want pending 1 2", e.Status, e.Retries, len(e.Attempts))
	}

	// DLQ retention
	if _, err := s.Cleanup(ctx, later, time.Hour, 3*time.Hour); err != nil {
		t.Fatalf("Cleanup with a 3h DLQ retention: %v", err)
	}
	dlqGet(t, s, dead.ID)
	wantCounts(t, s, storage.Counts{InFlight: 3, Dead: 1})
	if n, err := s.Cleanup(ctx, later, time.Hour, time.Hour); err != nil || n == 0 {
		t.Errorf("Cleanup with a 1h DLQ retention = %d, %v; want the entry removed", n, err)
	}
	if _, err := s.DLQGet(ctx, dead.ID); !errors.Is(err, storage.ErrDLQNotFound) {
		t.Errorf("DLQGet after DLQ retention: err = %v, want ErrNotFound", err)
	}
	if pages := listAll(t, s, storage.DLQFilter{}); len(pages) != 1 || len(pages[0].Entries) != 0 {
		t.Errorf("DLQList after DLQ retention is not empty")
	}
	wantCounts(t, s, storage.Counts{InFlight: 3})
}
