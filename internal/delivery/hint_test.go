package delivery

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hookline/hookline/storage"
)

// countingQueue counts the two ways of leasing.
type countingQueue struct {
	storage.Queue
	leases, named atomic.Int32
}

func (q *countingQueue) Lease(ctx context.Context, now time.Time, n int, lease time.Duration, gate *storage.Gate) ([]*storage.Job, error) {
	q.leases.Add(1)
	return q.Queue.Lease(ctx, now, n, lease, gate)
}

func (q *countingQueue) LeaseNamed(ctx context.Context, now time.Time, cands []storage.Candidate, lease time.Duration) ([]*storage.Job, error) {
	q.named.Add(1)
	return q.Queue.LeaseNamed(ctx, now, cands, lease)
}

// enqueueDue is enqueue, returning what the store names due at once.
func enqueueDue(t *testing.T, st storage.Store, source string) []storage.Candidate {
	t.Helper()
	due, err := tryEnqueueDue(st, source)
	if err != nil {
		t.Fatal(err)
	}
	return due
}

// tryEnqueueDue is enqueueDue for a goroutine other than the test's.
func tryEnqueueDue(st storage.Store, source string) ([]storage.Candidate, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	ev := storage.Event{ID: id.String(), Source: source, EventID: "evt-" + id.String(), Dedupe: true, ReceivedAt: time.Now()}
	res, err := st.Enqueue(context.Background(), &ev, time.Now().Add(time.Hour))
	if err == nil && (res.Duplicate || len(res.Due) != 1) {
		err = fmt.Errorf("Enqueue = %+v, want one delivery due", res)
	}
	return res.Due, err
}

// A hinted job is leased by name and delivered without a Lease scanning
// the queue; a hint of a source an operator holds is dropped without a
// round (Lease takes the job once it is resumed), and one of a job leased
// elsewhere meanwhile is not delivered again.
func TestDispatcherLeasesHintedJobs(t *testing.T) {
	st := newStore(t)
	q := &countingQueue{Queue: st}
	up := newUpstream(t, nil)
	var held atomic.Bool
	held.Store(true)
	targets := map[string]*Target{"s": {URL: up.URL, Policy: fastPolicy(3)}, "held": {URL: up.URL, Policy: fastPolicy(3)}}
	d := startDispatcher(t, Config{
		Store:   q,
		Workers: 2,
		Idle:    time.Hour, // no polling: only notifications wake the loop
		Targets: targetsOf(targets),
		Holds:   pausedBy(func(src, _ string) bool { return src == "held" && held.Load() }),
	})
	waitFor(t, time.Second, "the first Lease", func() bool { return q.leases.Load() == 1 })
	time.Sleep(20 * time.Millisecond) // the loop is asleep

	d.Hint("s", enqueueDue(t, st, "s"))
	waitFor(t, time.Second, "the hinted job's delivery", func() bool { return up.count() == 1 })
	if n, l := q.named.Load(), q.leases.Load(); n != 1 || l != 1 {
		t.Errorf("hinted job leased with %d LeaseNamed and %d more Lease calls, want 1 and none", n, l-1)
	}

	// a held source's hint is dropped, without a round: the job waits for
	// the source to be resumed
	d.Hint("held", enqueueDue(t, st, "held"))
	time.Sleep(50 * time.Millisecond)
	if up.count() != 1 || q.named.Load() != 1 || q.leases.Load() != 1 {
		t.Fatalf("a held source's job: %d deliveries, %d LeaseNamed, %d Lease; want it left waiting, no round",
			up.count(), q.named.Load(), q.leases.Load())
	}
	held.Store(false)
	d.Notify()
	waitFor(t, time.Second, "the held job's delivery once its lane opened", func() bool { return up.count() == 2 })

	// a job leased elsewhere first is not handed out again
	due := enqueueDue(t, st, "s")
	jobs, err := st.LeaseNamed(context.Background(), time.Now(), due, time.Minute)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("leasing the job first: %d, %v", len(jobs), err)
	}
	d.Hint("s", due)
	waitFor(t, time.Second, "the hint's round", func() bool { return q.named.Load() == 2 })
	time.Sleep(50 * time.Millisecond)
	if up.count() != 2 {
		t.Errorf("a job leased elsewhere was delivered by the hint (%d deliveries)", up.count())
	}
}

// Hints arriving without pause do not keep other due jobs waiting: once a
// round by name leaves hints waiting, or finds other jobs due, the next
// round is a Lease, which takes every lane in its turn.
func TestDispatcherHintsDoNotStarveOthers(t *testing.T) {
	st := newStore(t)
	up := newUpstream(t, nil)
	const n = 300
	// due first, never hinted: any Lease, however few slots it has,
	// takes it before the hinted lane's jobs
	enqueueDue(t, st, "other")
	var hints []storage.Candidate
	for range n {
		hints = append(hints, enqueueDue(t, st, "s")...)
	}
	reports := make(chan Report, n+1)
	d := New(fitTimeouts(Config{
		Store:    st,
		Workers:  2,
		Idle:     time.Hour,
		Targets:  targetsOf(map[string]*Target{"s": {URL: up.URL, Policy: fastPolicy(3)}, "other": {URL: up.URL, Policy: fastPolicy(3)}}),
		OnResult: reportsTo(reports),
	}))
	// hints wait before the first round, and keep coming faster than the
	// workers deliver
	first := cap(d.slots)
	d.Hint("s", hints[:first])
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, h := range hints[first:] {
			for {
				d.hintMu.Lock()
				room := len(d.hints) < cap(d.slots)
				d.hintMu.Unlock()
				if room {
					break
				}
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Microsecond):
				}
			}
			d.Hint("s", []storage.Candidate{h})
		}
	}()
	d.Start()
	t.Cleanup(func() { close(stop); <-done; d.Stop(100 * time.Millisecond) })
	for delivered := 0; ; {
		select {
		case r := <-reports:
			if r.Job.Source == "other" {
				if delivered > n/3 {
					t.Errorf("the job never hinted went after %d hinted ones", delivered)
				}
				return
			}
			delivered++
		case <-time.After(5 * time.Second):
			t.Fatal("the job never hinted was not delivered")
		}
	}
}
