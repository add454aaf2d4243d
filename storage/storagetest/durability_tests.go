package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

func testDurability(t *testing.T, f Factory) {
	if f.Reopen == nil {
		t.Skip("no Reopen")
	}
	s := f.Open(t)
	const n = 50
	evs := make([]*storage.Event, n)
	byID := map[string]*storage.Event{}
	for i := range evs {
		evs[i] = newEvent(t, "stripe", fmt.Sprintf("evt_%02d", i))
		byID[evs[i].ID] = evs[i]
	}
	enqueueConcurrently(t, s, evs)
	base := time.Now()
	leased := lease(t, s, base, 10, time.Minute)
	if len(leased) != 10 {
		t.Fatalf("leased %d, want 10", len(leased))
	}
	var dead, inFlight []string
	for i, j := range leased {
		if i%2 == 0 {
			finish(t, s, j, storage.Outcome{Result: storage.Dead, Attempt: attempt(1, base, 500, ""), Error: "dead"})
			dead = append(dead, j.ID)
		} else {
			inFlight = append(inFlight, j.ID)
		}
	}
	var queued []string
	for _, ev := range evs {
		if !slices.Contains(dead, ev.ID) && !slices.Contains(inFlight, ev.ID) {
			queued = append(queued, ev.ID)
		}
	}

	s = f.Reopen(t, s)
	if f.ProcessLeases {
		// the process that leased them is gone: they are due at once
		wantCounts(t, s, storage.Counts{Queued: 45, Dead: 5})
		queued = append(queued, inFlight...)
	} else {
		wantCounts(t, s, storage.Counts{Queued: 40, InFlight: 5, Dead: 5})
	}
	for _, ev := range evs[:10] {
		if res := enqueue(t, s, newEvent(t, "stripe", ev.EventID), time.Now().Add(time.Hour)); !res.Duplicate || res.ID != ev.ID {
			t.Errorf("enqueue of %s after reopen = %+v, want duplicate of %s", ev.EventID, res, ev.ID)
		}
	}
	jobs := lease(t, s, base, 2*n, time.Hour)
	if got := jobIDs(jobs); !sameSet(got, queued) {
		t.Fatalf("leased %v after reopen\nwant the queued %v", got, queued)
	}
	for _, j := range jobs {
		checkEvent(t, "job after reopen", j.Event, *byID[j.ID])
	}
	if f.ProcessLeases {
		for _, j := range leased {
			if !slices.Contains(inFlight, j.ID) {
				continue
			}
			if err := s.Finish(t.Context(), j, storage.Outcome{Result: storage.Delivered}); !errors.Is(err, storage.ErrLeaseLost) {
				t.Errorf("Finish with a lease from before reopen: err = %v, want ErrLeaseLost", err)
			}
		}
		wantCounts(t, s, storage.Counts{InFlight: 45, Dead: 5})
		checkDeadAfterReopen(t, s, dead, byID)
		return
	}
	if jobs := lease(t, s, base.Add(time.Minute-10*time.Millisecond), 2*n, time.Hour); len(jobs) != 0 {
		t.Fatalf("jobs leased before their lease expired: %v", jobIDs(jobs))
	}
	jobs = lease(t, s, base.Add(time.Minute+time.Millisecond), 2*n, time.Hour)
	if got := jobIDs(jobs); !sameSet(got, inFlight) {
		t.Fatalf("leased %v after the lease expired, want %v", got, inFlight)
	}
	for _, j := range jobs {
		checkEvent(t, "re-leased job after reopen", j.Event, *byID[j.ID])
		old := leased[slices.IndexFunc(leased, func(o *storage.Job) bool { return o.ID == j.ID })]
		if err := s.Finish(t.Context(), old, storage.Outcome{Result: storage.Delivered}); !errors.Is(err, storage.ErrLeaseLost) {
			t.Errorf("Finish with a lease from before reopen: err = %v, want ErrLeaseLost", err)
		}
	}
	checkDeadAfterReopen(t, s, dead, byID)
}

// checkDeadAfterReopen checks the DLQ entries of the jobs dead before a
// reopen, and the status Lookup reports of the first.
func checkDeadAfterReopen(t *testing.T, s storage.Store, dead []string, byID map[string]*storage.Event) {
	t.Helper()
	var listed []string
	for _, p := range listAll(t, s, storage.DLQFilter{}) {
		for _, e := range p.Entries {
			listed = append(listed, e.ID)
		}
	}
	if !sameSet(listed, dead) {
		t.Errorf("DLQ after reopen lists %v, want %v", listed, dead)
	}
	for _, id := range dead {
		if e := dlqGet(t, s, id); !bytes.Equal(e.Payload, byID[id].Body) || e.Status != storage.DLQPending {
			t.Errorf("DLQ entry %s after reopen: status %s, payload intact %v", id, e.Status, bytes.Equal(e.Payload, byID[id].Body))
		}
	}
	if info := lookup(t, s, "stripe", byID[dead[0]].EventID); info.Status != storage.StatusDead {
		t.Errorf("Lookup of a dead event after reopen: %s", info.Status)
	}
}

// enqueueConcurrently enqueues evs all at once, each expected to be
// stored under its own id.
func enqueueConcurrently(t *testing.T, s storage.Store, evs []*storage.Event) {
	t.Helper()
	errs := make([]error, len(evs))
	var wg sync.WaitGroup
	for i, ev := range evs {
		wg.Go(func() {
			res, err := s.Enqueue(t.Context(), ev, time.Now().Add(time.Hour))
			if err == nil && (res.Duplicate || res.ID != ev.ID) {
				err = fmt.Errorf("result %+v", res)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("concurrent Enqueue: %v", err)
	}
}

func testCancelledContext(t *testing.T, f Factory) {
	tests := []struct {
		name string
		ctx  func() context.Context
	}{
		{"cancelled", func() context.Context {
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			return ctx
		}},
		{"deadline exceeded", func() context.Context {
			ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
			t.Cleanup(cancel)
			return ctx
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := f.Open(t)
			ev := newEvent(t, "stripe", "evt_ctx")
			if res, err := s.Enqueue(tc.ctx(), ev, time.Now().Add(time.Hour)); err == nil {
				t.Fatalf("Enqueue with a %s context = %+v, want an error", tc.name, res)
			}
			wantCounts(t, s, storage.Counts{})
			if _, err := s.Lookup(t.Context(), "stripe", "evt_ctx"); !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("Lookup after a failed Enqueue: err = %v, want ErrNotFound", err)
			}
			if jobs := lease(t, s, time.Now().Add(time.Hour), 10, time.Minute); len(jobs) != 0 {
				t.Errorf("a failed Enqueue stored a job: %v", jobIDs(jobs))
			}
			// and it took no claim
			mustEnqueue(t, s, newEvent(t, "stripe", "evt_ctx"), time.Now().Add(time.Hour))
		})
	}
}
