package storagetest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hookline/hookline/storage"
)

// Method names a method of storage.Store, for Faulty.
type Method string

// The methods of storage.Store.
const (
	MethodEnqueue       Method = "Enqueue"
	MethodLease         Method = "Lease"
	MethodNextDue       Method = "NextDue"
	MethodFinish        Method = "Finish"
	MethodLookup        Method = "Lookup"
	MethodCounts        Method = "Counts"
	MethodQueueBySource Method = "QueueBySource"
	MethodQueueByLane   Method = "QueueByLane"
	MethodDLQList       Method = "DLQList"
	MethodDLQGet        Method = "DLQGet"
	MethodDLQCounts     Method = "DLQCounts"
	MethodDLQRetry      Method = "DLQRetry"
	MethodDLQSetStatus  Method = "DLQSetStatus"
	MethodSetPause      Method = "SetPause"
	MethodResume        Method = "Resume"
	MethodExpirePause   Method = "ExpirePause"
	MethodListDelivered Method = "ListDelivered"
	MethodReplay        Method = "Replay"
	MethodPauses        Method = "Pauses"
	MethodAddStats      Method = "AddStats"
	MethodStats         Method = "Stats"
	MethodStatsBuckets  Method = "StatsBuckets"
	MethodSetGauges     Method = "SetStatsGauges"
	MethodQueueHeads    Method = "QueueHeads"
	MethodCleanup       Method = "Cleanup"
	MethodErase         Method = "Erase"
	MethodEraseBatch    Method = "EraseBatch"
	MethodListEvents    Method = "ListEvents"
	MethodRekeyBatch    Method = "RekeyBatch"
	MethodRekeyState    Method = "RekeyState"
	MethodSaveRekey     Method = "SaveRekeyState"
	MethodTenantErasure Method = "TenantErasure"
	MethodSaveTenant    Method = "SaveTenantErasure"
	MethodClose         Method = "Close"
)

// Methods lists every method of storage.Store.
var Methods = []Method{
	MethodEnqueue, MethodLease, MethodNextDue, MethodFinish, MethodLookup, MethodCounts,
	MethodQueueBySource, MethodQueueByLane, MethodDLQList, MethodDLQGet, MethodDLQCounts, MethodDLQRetry,
	MethodDLQSetStatus, MethodSetPause, MethodResume, MethodPauses, MethodExpirePause, MethodAddStats, MethodStats,
	MethodStatsBuckets, MethodSetGauges, MethodQueueHeads, MethodCleanup, MethodClose, MethodListDelivered, MethodReplay, MethodErase, MethodEraseBatch, MethodListEvents,
	MethodRekeyBatch, MethodRekeyState, MethodSaveRekey, MethodTenantErasure, MethodSaveTenant,
}

// Errors injected by Faulty. Both wrap storage.ErrUnavailable, as a real
// backend's failures do.
var (
	ErrInjected  = fmt.Errorf("%w: injected fault", storage.ErrUnavailable)
	ErrLostReply = fmt.Errorf("%w: injected lost reply (the call ran)", storage.ErrUnavailable)
)

// Fault is what Faulty does to the calls of one method. The parts apply
// in this order: Stall, then Err (the inner store is not called), else the
// inner call, then LoseReply.
type Fault struct {
	// Stall blocks the call until its context ends (it then returns
	// ErrUnavailable wrapping the context's error, as a backend whose
	// disk or server hangs does) or until Release (it then goes on).
	Stall bool
	// Err is returned instead of calling the inner store.
	Err error
	// LoseReply calls the inner store and then returns ErrLostReply
	// instead of its answer: the write happened, the caller cannot know.
	LoseReply bool
	// Times limits the fault to the next Times calls; 0: until cleared.
	Times int
	// After lets the next After calls through untouched before the fault
	// applies: a failure at the step After+1 of a sequence of calls.
	After int
}

// Faulty wraps a storage.Store and injects faults per method, for tests of
// what the ingress, the workers and the admin API do when the store fails,
// hangs or loses replies. Faults are set and cleared at any time, from any
// goroutine, while the store is in use; Calls counts the calls made.
//
//	f := storagetest.NewFaulty(store)
//	f.Stall(storagetest.MethodEnqueue)      // every Enqueue hangs...
//	defer f.Release()                        // ...until released
//	f.Fail(storagetest.MethodFinish, nil)   // Finish fails (ErrInjected)
//	f.LoseReply(storagetest.MethodLease)    // Lease leases, then errors
//	f.Set(storagetest.MethodDLQRetry, storagetest.Fault{Err: err, Times: 1})
//	f.Clear(storagetest.MethodFinish)
type Faulty struct {
	inner storage.Store

	mu      sync.Mutex
	faults  map[Method]Fault
	calls   map[Method]int
	stalled map[Method]int
	release chan struct{}
	// jobs handed out by Lease and handed back by Finish(Release), by
	// source: the store work spent on a source's waiting jobs
	leased   map[string]int
	released map[string]int
}

// Interface guard
var _ storage.Store = (*Faulty)(nil)

// NewFaulty wraps inner, with no fault set.
func NewFaulty(inner storage.Store) *Faulty {
	return &Faulty{inner: inner, faults: map[Method]Fault{}, calls: map[Method]int{},
		stalled: map[Method]int{}, release: make(chan struct{}),
		leased: map[string]int{}, released: map[string]int{}}
}

// Inner is the wrapped store.
func (f *Faulty) Inner() storage.Store { return f.inner }

// Set makes the calls of m suffer fault (replacing any earlier one).
func (f *Faulty) Set(m Method, fault Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults[m] = fault
}

// Fail makes the calls of m return err (nil: ErrInjected) without calling
// the inner store.
func (f *Faulty) Fail(m Method, err error) {
	if err == nil {
		err = ErrInjected
	}
	f.Set(m, Fault{Err: err})
}

// Stall makes the calls of m hang until their context ends or Release.
func (f *Faulty) Stall(m Method) { f.Set(m, Fault{Stall: true}) }

// LoseReply makes the calls of m run and then return ErrLostReply.
func (f *Faulty) LoseReply(m Method) { f.Set(m, Fault{LoseReply: true}) }

// Clear removes the fault of m (calls already stalled stay stalled until
// Release).
func (f *Faulty) Clear(m Method) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.faults, m)
}

// ClearAll removes every fault and releases the stalled calls.
func (f *Faulty) ClearAll() {
	f.mu.Lock()
	clear(f.faults)
	f.mu.Unlock()
	f.Release()
}

// Release lets every call stalled so far go on to the inner store. Calls
// stalled later wait for the next Release.
func (f *Faulty) Release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.release)
	f.release = make(chan struct{})
}

// Calls is how many calls of m were made (faulty or not).
func (f *Faulty) Calls(m Method) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[m]
}

// Leased is how many jobs of source Lease handed out (successful calls).
func (f *Faulty) Leased(source string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.leased[source]
}

// Released is how many jobs of source were handed back untouched
// (Finish with storage.Release), whatever the call returned.
func (f *Faulty) Released(source string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.released[source]
}

// Stalled is how many calls of m are stalled now.
func (f *Faulty) Stalled(m Method) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stalled[m]
}

// WaitStalled waits up to timeout until at least n calls of m are stalled.
func (f *Faulty) WaitStalled(m Method, n int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for f.Stalled(m) < n {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// enter counts a call of m and applies its fault up to the inner call:
// err ends the call; lose says to lose the inner call's reply.
func (f *Faulty) enter(ctx context.Context, m Method) (lose bool, err error) {
	f.mu.Lock()
	f.calls[m]++
	fault, ok := f.faults[m]
	if ok && fault.After > 0 {
		fault.After--
		f.faults[m] = fault
		ok = false
	}
	if ok && fault.Times > 0 {
		if fault.Times--; fault.Times == 0 {
			delete(f.faults, m)
		} else {
			f.faults[m] = fault
		}
	}
	release := f.release
	if ok && fault.Stall {
		f.stalled[m]++
	}
	f.mu.Unlock()
	if !ok {
		return false, nil
	}
	if fault.Stall {
		select {
		case <-release:
		case <-ctx.Done():
			err = fmt.Errorf("%w: injected stall: %w", storage.ErrUnavailable, ctx.Err())
		}
		f.mu.Lock()
		f.stalled[m]--
		f.mu.Unlock()
		if err != nil {
			return false, err
		}
	}
	if fault.Err != nil {
		return false, fault.Err
	}
	return fault.LoseReply, nil
}

// call runs one call of m: the fault, the inner call, the lost reply.
func call[T any](f *Faulty, ctx context.Context, m Method, inner func() (T, error)) (T, error) {
	var zero T
	lose, err := f.enter(ctx, m)
	if err != nil {
		return zero, err
	}
	v, err := inner()
	if lose {
		return zero, ErrLostReply
	}
	return v, err
}

func call0(f *Faulty, ctx context.Context, m Method, inner func() error) error {
	_, err := call(f, ctx, m, func() (struct{}, error) { return struct{}{}, inner() })
	return err
}

// Enqueue implements storage.Store.
func (f *Faulty) Enqueue(ctx context.Context, ev *storage.Event, dedupeUntil time.Time) (storage.EnqueueResult, error) {
	return call(f, ctx, MethodEnqueue, func() (storage.EnqueueResult, error) { return f.inner.Enqueue(ctx, ev, dedupeUntil) })
}

// Lease implements storage.Store.
func (f *Faulty) Lease(ctx context.Context, now time.Time, n int, lease time.Duration, gate *storage.Gate) ([]*storage.Job, error) {
	return call(f, ctx, MethodLease, func() ([]*storage.Job, error) {
		jobs, err := f.inner.Lease(ctx, now, n, lease, gate)
		f.countLeased(jobs)
		return jobs, err
	})
}

// LeaseNamed implements storage.Store: Lease's faults apply to it.
func (f *Faulty) LeaseNamed(ctx context.Context, now time.Time, cands []storage.Candidate, lease time.Duration) ([]*storage.Job, error) {
	return call(f, ctx, MethodLease, func() ([]*storage.Job, error) {
		jobs, err := f.inner.LeaseNamed(ctx, now, cands, lease)
		f.countLeased(jobs)
		return jobs, err
	})
}

// countLeased counts jobs leased by source (Leased).
func (f *Faulty) countLeased(jobs []*storage.Job) {
	f.mu.Lock()
	for _, j := range jobs {
		f.leased[j.Source]++
	}
	f.mu.Unlock()
}

// NextDue implements storage.Store.
func (f *Faulty) NextDue(ctx context.Context, gate *storage.Gate) (time.Time, bool, error) {
	type due struct {
		t  time.Time
		ok bool
	}
	d, err := call(f, ctx, MethodNextDue, func() (due, error) {
		t, ok, err := f.inner.NextDue(ctx, gate)
		return due{t, ok}, err
	})
	return d.t, d.ok, err
}

// Finish implements storage.Store.
func (f *Faulty) Finish(ctx context.Context, job *storage.Job, out storage.Outcome) error {
	if out.Result == storage.Release {
		f.mu.Lock()
		f.released[job.Source]++
		f.mu.Unlock()
	}
	return call0(f, ctx, MethodFinish, func() error { return f.inner.Finish(ctx, job, out) })
}

// Lookup implements storage.Store.
func (f *Faulty) Lookup(ctx context.Context, source, eventID string) (*storage.EventInfo, error) {
	return call(f, ctx, MethodLookup, func() (*storage.EventInfo, error) { return f.inner.Lookup(ctx, source, eventID) })
}

// Counts implements storage.Store.
func (f *Faulty) Counts(ctx context.Context) (storage.Counts, error) {
	return call(f, ctx, MethodCounts, func() (storage.Counts, error) { return f.inner.Counts(ctx) })
}

// QueueByLane implements storage.Store.
func (f *Faulty) QueueByLane(ctx context.Context) (map[string]storage.Counts, error) {
	return call(f, ctx, MethodQueueByLane, func() (map[string]storage.Counts, error) { return f.inner.QueueByLane(ctx) })
}

// QueueBySource implements storage.Store.
func (f *Faulty) QueueBySource(ctx context.Context) (map[string]storage.Counts, error) {
	return call(f, ctx, MethodQueueBySource, func() (map[string]storage.Counts, error) { return f.inner.QueueBySource(ctx) })
}

// DLQList implements storage.Store.
func (f *Faulty) DLQList(ctx context.Context, filter storage.DLQFilter) (storage.DLQPage, error) {
	return call(f, ctx, MethodDLQList, func() (storage.DLQPage, error) { return f.inner.DLQList(ctx, filter) })
}

// DLQGet implements storage.Store.
func (f *Faulty) DLQGet(ctx context.Context, id string) (*storage.DLQEntry, error) {
	return call(f, ctx, MethodDLQGet, func() (*storage.DLQEntry, error) { return f.inner.DLQGet(ctx, id) })
}

// DLQCounts implements storage.Store.
func (f *Faulty) DLQCounts(ctx context.Context) (map[string]map[storage.DLQStatus]int, error) {
	return call(f, ctx, MethodDLQCounts, func() (map[string]map[storage.DLQStatus]int, error) { return f.inner.DLQCounts(ctx) })
}

// DLQRetry implements storage.Store.
func (f *Faulty) DLQRetry(ctx context.Context, id string, due time.Time) error {
	return call0(f, ctx, MethodDLQRetry, func() error { return f.inner.DLQRetry(ctx, id, due) })
}

// DLQSetStatus implements storage.Store.
func (f *Faulty) DLQSetStatus(ctx context.Context, id string, status storage.DLQStatus, text string, now time.Time) error {
	return call0(f, ctx, MethodDLQSetStatus, func() error { return f.inner.DLQSetStatus(ctx, id, status, text, now) })
}

// ListDelivered implements storage.Store.
func (f *Faulty) ListDelivered(ctx context.Context, filter storage.ReplayFilter) (storage.ReplayPage, error) {
	return call(f, ctx, MethodListDelivered, func() (storage.ReplayPage, error) { return f.inner.ListDelivered(ctx, filter) })
}

// ListEvents implements storage.Store.
func (f *Faulty) ListEvents(ctx context.Context, filter storage.EventFilter) (storage.EventPage, error) {
	return call(f, ctx, MethodListEvents, func() (storage.EventPage, error) { return f.inner.ListEvents(ctx, filter) })
}

// Replay implements storage.Store.
func (f *Faulty) Replay(ctx context.Context, ev *storage.EventInfo, due time.Time) error {
	return call0(f, ctx, MethodReplay, func() error { return f.inner.Replay(ctx, ev, due) })
}

// SetPause implements storage.Store.
func (f *Faulty) SetPause(ctx context.Context, p storage.Pause) error {
	return call0(f, ctx, MethodSetPause, func() error { return f.inner.SetPause(ctx, p) })
}

// Resume implements storage.Store.
func (f *Faulty) Resume(ctx context.Context, key string) (storage.Pause, bool, error) {
	var ok bool
	p, err := call(f, ctx, MethodResume, func() (storage.Pause, error) {
		p, found, err := f.inner.Resume(ctx, key)
		ok = found
		return p, err
	})
	return p, ok && err == nil, err
}

// Pauses implements storage.Store.
func (f *Faulty) Pauses(ctx context.Context) ([]storage.Pause, error) {
	return call(f, ctx, MethodPauses, func() ([]storage.Pause, error) { return f.inner.Pauses(ctx) })
}

// ExpirePause implements storage.Store.
func (f *Faulty) ExpirePause(ctx context.Context, p storage.Pause) (bool, error) {
	return call(f, ctx, MethodExpirePause, func() (bool, error) { return f.inner.ExpirePause(ctx, p) })
}

// AddStats implements storage.Store.
func (f *Faulty) AddStats(ctx context.Context, b storage.StatsBatch) error {
	return call0(f, ctx, MethodAddStats, func() error { return f.inner.AddStats(ctx, b) })
}

// Stats implements storage.Store.
func (f *Faulty) Stats(ctx context.Context, since time.Time) (map[string]map[string]int64, map[string]map[string]int64, error) {
	type both struct{ recent, all map[string]map[string]int64 }
	b, err := call(f, ctx, MethodStats, func() (both, error) {
		recent, all, err := f.inner.Stats(ctx, since)
		return both{recent, all}, err
	})
	return b.recent, b.all, err
}

// StatsBuckets implements storage.Store.
func (f *Faulty) StatsBuckets(ctx context.Context, res storage.StatsResolution, from, to time.Time) ([]storage.StatsBucket, error) {
	return call(f, ctx, MethodStatsBuckets, func() ([]storage.StatsBucket, error) { return f.inner.StatsBuckets(ctx, res, from, to) })
}

// SetStatsGauges implements storage.Store.
func (f *Faulty) SetStatsGauges(ctx context.Context, at time.Time, gauges map[string]map[string]int64) error {
	return call0(f, ctx, MethodSetGauges, func() error { return f.inner.SetStatsGauges(ctx, at, gauges) })
}

// QueueHeads implements storage.Store.
func (f *Faulty) QueueHeads(ctx context.Context) (map[string]time.Time, error) {
	return call(f, ctx, MethodQueueHeads, func() (map[string]time.Time, error) { return f.inner.QueueHeads(ctx) })
}

// Cleanup implements storage.Store.
func (f *Faulty) Cleanup(ctx context.Context, now time.Time, retention, dlqRetention time.Duration) (int, error) {
	return call(f, ctx, MethodCleanup, func() (int, error) { return f.inner.Cleanup(ctx, now, retention, dlqRetention) })
}

// EraseBatch implements storage.Store.
func (f *Faulty) EraseBatch(ctx context.Context, source string, eventIDs []string, now time.Time) ([]storage.EraseResult, error) {
	return call(f, ctx, MethodEraseBatch, func() ([]storage.EraseResult, error) {
		return f.inner.EraseBatch(ctx, source, eventIDs, now)
	})
}

// Erase implements storage.Store.
func (f *Faulty) Erase(ctx context.Context, source, eventID string, now time.Time) (storage.EraseResult, error) {
	return call(f, ctx, MethodErase, func() (storage.EraseResult, error) { return f.inner.Erase(ctx, source, eventID, now) })
}

// Close implements storage.Store. A stalled Close waits for Release.
func (f *Faulty) Close() error {
	return call0(f, context.Background(), MethodClose, f.inner.Close)
}

// TenantErasure implements storage.Store.
func (f *Faulty) TenantErasure(ctx context.Context, source, tenant string) (storage.TenantErasure, error) {
	return call(f, ctx, MethodTenantErasure, func() (storage.TenantErasure, error) { return f.inner.TenantErasure(ctx, source, tenant) })
}

// SaveTenantErasure implements storage.Store.
func (f *Faulty) SaveTenantErasure(ctx context.Context, p storage.TenantErasure) error {
	_, err := call(f, ctx, MethodSaveTenant, func() (struct{}, error) { return struct{}{}, f.inner.SaveTenantErasure(ctx, p) })
	return err
}
