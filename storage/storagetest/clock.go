package storagetest

import (
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// RunClock checks a backend's injected clock: wherever the store reads
// the clock itself (Enqueue, Lookup, duplicate answers, QueueBySource,
// Finish, DLQRetry, Stats), it reads the clock it was opened with. The
// clock is a month ahead of the wall clock, so that a time.Now read
// anywhere shows. open returns a fresh store reading now (and registers
// its cleanup).
func RunClock(t *testing.T, open func(t *testing.T, now func() time.Time) storage.Store) {
	clock := &fakeClock{}
	t0 := time.Now().Add(30 * 24 * time.Hour).Truncate(time.Second)
	clock.Set(t0)
	s := open(t, clock.Now)
	ctx := t.Context()
	ev := &storage.Event{ID: "c1", EventID: "evt_clock", Dedupe: true, Source: "stripe",
		Upstream: "http://127.0.0.1:1/", Body: []byte(`{}`), ReceivedAt: t0}
	lookup := func(want storage.Status) *storage.EventInfo {
		t.Helper()
		info, err := s.Lookup(ctx, "stripe", "evt_clock")
		if err != nil || info.Status != want {
			t.Fatalf("Lookup at %v: %+v %v; want %s", clock.Now().Sub(t0), info, err, want)
		}
		res, err := s.Enqueue(ctx, &storage.Event{ID: "dup", EventID: "evt_clock", Dedupe: true, Source: "stripe",
			Upstream: "http://127.0.0.1:1/"}, t0.Add(time.Hour))
		if err != nil || !res.Duplicate || res.Status != want {
			t.Fatalf("duplicate at %v: %+v %v; want %s", clock.Now().Sub(t0), res, err, want)
		}
		return info
	}

	if _, err := s.Enqueue(ctx, ev, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if info := lookup(storage.StatusQueued); !info.NextAttempt.Equal(t0) {
		t.Errorf("enqueued due at %v, want the clock's %v", info.NextAttempt, t0)
	}
	jobs, err := s.Lease(ctx, t0, 1, time.Minute, nil)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Lease at the clock's now: %d jobs, %v", len(jobs), err)
	}
	lookup(storage.StatusInFlight)
	if q, err := s.QueueBySource(ctx); err != nil || q["stripe"].InFlight != 1 {
		t.Errorf("QueueBySource while leased: %+v %v", q, err)
	}
	clock.Set(t0.Add(2 * time.Minute)) // the lease ran out
	lookup(storage.StatusQueued)
	if q, err := s.QueueBySource(ctx); err != nil || q["stripe"].Queued != 1 || q["stripe"].InFlight != 0 {
		t.Errorf("QueueBySource after the lease: %+v %v", q, err)
	}
	if err := s.Finish(ctx, jobs[0], storage.Outcome{Result: storage.Dead, Error: "gone"}); err != nil {
		t.Fatal(err)
	}
	if info := lookup(storage.StatusDead); !info.FinishedAt.Equal(t0.Add(2 * time.Minute)) {
		t.Errorf("finished at %v, want %v", info.FinishedAt, t0.Add(2*time.Minute))
	}
	if e, err := s.DLQGet(ctx, ev.ID); err != nil || !e.CreatedAt.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("DLQ entry %+v %v, want created at %v", e, err, t0.Add(2*time.Minute))
	}
	clock.Set(t0.Add(3 * time.Minute))
	if err := s.DLQRetry(ctx, ev.ID, t0.Add(3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if e, err := s.DLQGet(ctx, ev.ID); err != nil || e.Status != storage.DLQRetried || !e.UpdatedAt.Equal(t0.Add(3*time.Minute)) {
		t.Errorf("retried entry %+v %v, want updated at %v", e, err, t0.Add(3*time.Minute))
	}
	if err := s.AddStats(ctx, storage.StatsBatch{At: t0, Counters: map[string]map[string]int64{"stripe": {"accepted": 2}}}); err != nil {
		t.Fatal(err)
	}
	if recent, _, err := s.Stats(ctx, t0.Add(-time.Minute)); err != nil || recent["stripe"]["accepted"] != 2 {
		t.Errorf("Stats since a minute before the clock's now: %v %v", recent, err)
	}
}
