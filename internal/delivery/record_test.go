package delivery

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

// stallStore holds every Finish until release is closed, as a slow round
// trip to Redis or a stalled fsync would.
type stallStore struct {
	storage.Queue
	release   <-chan struct{}
	finishing atomic.Int32
}

// newStall is an embedded store (for reading what was recorded) and the
// stalling store in front of it; unblock releases every Finish, and runs
// when the test ends.
func newStall(t *testing.T) (st storage.Store, stall *stallStore, unblock func()) {
	t.Helper()
	st = newStore(t)
	release, unblock := newRelease()
	t.Cleanup(unblock) // before the store closes
	return st, &stallStore{Queue: st, release: release}, unblock
}

func (s *stallStore) Finish(ctx context.Context, job *storage.Job, out storage.Outcome) error {
	s.finishing.Add(1)
	select {
	case <-s.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.Queue.Finish(ctx, job, out)
}

// A worker takes its next job while the store records the outcome of its
// last one; at most Workers+Prefetch outcomes are recorded at once, and the
// jobs stay leased until theirs is recorded.
func TestDispatcherRecordsInBackground(t *testing.T) {
	st, stall, unblock := newStall(t)
	up := newUpstream(t, nil)
	reports := make(chan Report, 10)
	for range 4 {
		enqueue(t, st, storage.Event{Source: "s"})
	}
	startDispatcher(t, Config{
		Store:    stall,
		Workers:  1,
		Prefetch: 1,
		Targets:  targetsOf(map[string]*Target{"s": {URL: up.URL, Policy: fastPolicy(3)}}),
		OnResult: reportsTo(reports),
	})
	waitFor(t, 2*time.Second, "more deliveries while the first outcomes are recorded",
		func() bool { return up.count() == 3 })
	time.Sleep(100 * time.Millisecond)
	if n, f := up.count(), stall.finishing.Load(); n != 3 || f != 2 {
		t.Errorf("with 1 worker, 1 prefetched and every Finish stalled: %d deliveries and %d outcomes "+
			"being recorded, expected 3 and 2 (the third outcome waits for a place)", n, f)
	}
	// two being recorded, one delivered waiting for its place, one prefetched
	if c := counts(t, st); c.InFlight != 4 || c.Queued != 0 {
		t.Errorf("counts %+v while the outcomes wait, expected all 4 jobs still leased", c)
	}
	select {
	case r := <-reports:
		t.Errorf("a job was reported before its outcome was recorded: %+v", r)
	default:
	}
	unblock()
	for range 4 {
		if r := nextReport(t, reports, 5*time.Second); r.Result != storage.Delivered {
			t.Errorf("result %v, expected delivered", r.Result)
		}
	}
	if c := counts(t, st); c.InFlight != 0 || c.Queued != 0 {
		t.Errorf("counts %+v after the outcomes were recorded, expected none left", c)
	}
	if n := up.count(); n != 4 {
		t.Errorf("upstream got %d requests for 4 jobs", n)
	}
}

// Stop waits, within its grace, for the outcomes still being recorded.
func TestDispatcherStopWaitsForRecords(t *testing.T) {
	st, stall, unblock := newStall(t)
	up := newUpstream(t, nil)
	ev := enqueue(t, st, storage.Event{Source: "s"})
	d := New(fitTimeouts(Config{
		Store:           stall,
		Workers:         1,
		Idle:            20 * time.Millisecond,
		BreakerFailures: 1000,
		Targets:         targetsOf(map[string]*Target{"s": {URL: up.URL, Policy: fastPolicy(3)}}),
	}))
	d.Start()
	waitFor(t, 2*time.Second, "the outcome to be recorded", func() bool { return stall.finishing.Load() == 1 })
	stopped := make(chan struct{})
	go func() {
		d.Stop(5 * time.Second)
		close(stopped)
	}()
	select {
	case <-stopped:
		t.Fatal("Stop returned while an outcome was still being recorded")
	case <-time.After(200 * time.Millisecond):
	}
	unblock()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("Stop did not return once the outcome was recorded")
	}
	if info := lookup(t, st, ev); info.Status != storage.StatusDelivered {
		t.Errorf("after Stop: status %s, expected delivered", info.Status)
	}
}
