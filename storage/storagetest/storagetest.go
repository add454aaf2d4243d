// Package storagetest is the conformance suite of storage.Store. Every
// backend runs it from its own tests:
//
//	func TestConformance(t *testing.T) {
//		storagetest.Run(t, storagetest.Factory{Open: ..., Reopen: ...})
//	}
//
// The suite uses nothing but the storage.Store interface. Times it passes
// to Lease, DLQRetry, DLQSetStatus and Cleanup are derived from time.Now,
// so the backend's own clock (used by Enqueue and Finish) must be the wall
// clock of the test process (give or take a few milliseconds). Due times
// are compared with a tolerance of one millisecond; event and attempt
// fields must round-trip exactly.
package storagetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hookline/hookline/dlq"
	"github.com/hookline/hookline/storage"
)

// Factory opens stores for the suite.
type Factory struct {
	// Open returns a fresh, empty store. It registers the store's cleanup
	// (Close, removing files or keys) with t.Cleanup.
	Open func(t *testing.T) storage.Store
	// Reopen closes s and opens the same data again (durability checks).
	// For a shared backend it can just make a new client. Nil skips the
	// durability test.
	Reopen func(t *testing.T, s storage.Store) storage.Store
}

// Run runs the conformance suite, each subtest on a fresh store.
func Run(t *testing.T, f Factory) {
	t.Helper()
	if f.Open == nil {
		t.Fatal("storagetest: Factory.Open is nil")
	}
	tests := []struct {
		name string
		run  func(*testing.T, Factory)
	}{
		{"EnqueueLease", testEnqueueLease},
		{"DedupeConcurrent", testDedupeConcurrent},
		{"DedupeScope", testDedupeScope},
		{"DedupeWindow", testDedupeWindow},
		{"DuplicateStatus", testDuplicateStatus},
		{"LeaseLimit", testLeaseLimit},
		{"LeaseExpiry", testLeaseExpiry},
		{"LeaseConcurrent", testLeaseConcurrent},
		{"RetryOrder", testRetryOrder},
		{"Release", testRelease},
		{"AttemptHistory", testAttemptHistory},
		{"Counts", testCounts},
		{"DLQEntry", testDLQEntry},
		{"DLQList", testDLQList},
		{"DLQRetry", testDLQRetry},
		{"DLQSetStatus", testDLQSetStatus},
		{"Retention", testRetention},
		{"LookupAfterClaimExpiry", testLookupAfterClaimExpiry},
		{"DLQRetryAfterRetention", testDLQRetryAfterRetention},
		{"Paused", testPaused},
		{"Stats", testStats},
		{"DLQCounts", testDLQCounts},
		{"QueueBySource", testQueueBySource},
		{"Durability", testDurability},
		{"CancelledContext", testCancelledContext},
		{"GateSkip", testGateSkip},
		{"GateFair", testGateFair},
		{"GatePace", testGatePace},
		{"GatePaceEveryLane", testGatePaceEveryLane},
		{"GateCap", testGateCap},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, f) })
	}
}

// tolerance for due, lease and operator times, which a backend may keep
// with millisecond precision.
const tolerance = time.Millisecond

// ---------------------------------------------------------------- tests

func testEnqueueLease(t *testing.T, f Factory) {
	allBytes := make([]byte, 256)
	for i := range allBytes {
		allBytes[i] = byte(i)
	}
	large := make([]byte, 256<<10)
	_, _ = rand.Read(large)

	tests := []struct {
		name string
		ev   func(ev *storage.Event)
	}{
		{"binary body and multi-value headers", func(ev *storage.Event) {
			ev.Body = append([]byte("{\"a\":\"\xff\xfe\"}\r\n\x00"), allBytes...)
			ev.Headers = http.Header{
				"Content-Type":     {"application/json; charset=utf-8"},
				"X-Multi":          {"one", "two", ""},
				"Stripe-Signature": {"t=1700000000,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd"},
			}
			ev.Upstream = "http://127.0.0.1:9000/hooks?x=1&y=%2F"
			ev.ReceivedAt = time.Date(2025, 3, 4, 5, 6, 7, 123456789, time.UTC)
		}},
		{"empty body and no headers", func(ev *storage.Event) {
			ev.Body = nil
			ev.Headers = nil
		}},
		{"unicode ids and large body", func(ev *storage.Event) {
			ev.Source = "gitlab-ü"
			ev.EventID = "évènement/42:ß 🚀"
			ev.Body = large
			ev.ReceivedAt = time.Date(2024, 12, 31, 23, 59, 59, 999999999, time.FixedZone("X", 5*3600+1800))
		}},
		{"generated event id without dedupe", func(ev *storage.Event) {
			ev.Dedupe = false
			ev.EventID = ev.ID
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := f.Open(t)
			ev := newEvent(t, "stripe", "evt_"+newID(t))
			tc.ev(ev)
			want := cloneEvent(ev)

			mustEnqueue(t, s, ev, time.Now().Add(time.Hour))
			if !eventEqual(*ev, want) {
				t.Fatal("Enqueue modified the event passed to it")
			}
			info := lookup(t, s, want.Source, want.EventID)
			checkInfo(t, info, want, storage.StatusQueued)
			wantCounts(t, s, storage.Counts{Queued: 1})

			base := time.Now()
			jobs := lease(t, s, base, 10, time.Minute)
			if len(jobs) != 1 {
				t.Fatalf("Lease returned %d jobs, want 1", len(jobs))
			}
			job := jobs[0]
			checkEvent(t, "leased job", job.Event, want)
			if job.Lease == "" {
				t.Error("leased job has no Lease token")
			}
			if !closeTo(job.LeaseUntil, base.Add(time.Minute)) {
				t.Errorf("LeaseUntil = %v, want %v", job.LeaseUntil, base.Add(time.Minute))
			}
			if len(job.Attempts) != 0 || job.RoundAttempts() != 0 {
				t.Errorf("new job has attempts %v (round %d)", job.Attempts, job.RoundAttempts())
			}
			info = lookup(t, s, want.Source, want.EventID)
			checkInfo(t, info, want, storage.StatusInFlight)
			wantCounts(t, s, storage.Counts{InFlight: 1})

			finish(t, s, job, storage.Outcome{Result: storage.Delivered, Attempt: attempt(1, time.Now(), 200, "")})
			info = lookup(t, s, want.Source, want.EventID)
			checkInfo(t, info, want, storage.StatusDelivered)
			if info.FinishedAt.IsZero() {
				t.Error("delivered event has no FinishedAt")
			}
			if len(info.Attempts) != 1 {
				t.Errorf("delivered event has %d attempts, want 1", len(info.Attempts))
			}
			wantCounts(t, s, storage.Counts{})
			if err := s.Finish(t.Context(), job, storage.Outcome{Result: storage.Delivered}); !errors.Is(err, storage.ErrLeaseLost) {
				t.Errorf("second Finish of the same job: err = %v, want ErrLeaseLost", err)
			}
			if _, ok, err := s.NextDue(t.Context(), nil); err != nil || ok {
				t.Errorf("NextDue after delivery = ok %v, err %v; want nothing due", ok, err)
			}
		})
	}
}

func testDedupeConcurrent(t *testing.T, f Factory) {
	s := f.Open(t)
	const n = 100
	evs := make([]*storage.Event, n)
	for i := range evs {
		evs[i] = newEvent(t, "stripe", "evt_race")
	}
	until := time.Now().Add(time.Hour)
	results := make([]storage.EnqueueResult, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range evs {
		wg.Go(func() {
			<-start
			results[i], errs[i] = s.Enqueue(t.Context(), evs[i], until)
		})
	}
	close(start)
	wg.Wait()

	winner := -1
	for i, r := range results {
		if errs[i] != nil {
			t.Fatalf("Enqueue %d: %v", i, errs[i])
		}
		if r.Duplicate {
			continue
		}
		if winner >= 0 {
			t.Fatalf("two non-duplicate results: %s and %s", evs[winner].ID, evs[i].ID)
		}
		winner = i
		if r.ID != evs[i].ID || r.Status != storage.StatusQueued {
			t.Errorf("winner result = %+v, want ID %s status queued", r, evs[i].ID)
		}
	}
	if winner < 0 {
		t.Fatal("every concurrent Enqueue was a duplicate")
	}
	for i, r := range results {
		if i != winner && (r.ID != evs[winner].ID || r.Status != storage.StatusQueued) {
			t.Errorf("duplicate %d = %+v, want ID %s status queued", i, r, evs[winner].ID)
		}
	}
	jobs := lease(t, s, time.Now(), 2*n, time.Minute)
	if len(jobs) != 1 {
		t.Fatalf("Lease returned %d jobs, want exactly 1", len(jobs))
	}
	checkEvent(t, "leased job", jobs[0].Event, *evs[winner])
	wantCounts(t, s, storage.Counts{InFlight: 1})
}

func testDedupeScope(t *testing.T, f Factory) {
	type enq struct {
		source, eventID string
		dedupe          bool
		dupOf           int // index of the earlier event it duplicates, -1: none
	}
	tests := []struct {
		name string
		enqs []enq
	}{
		{"same event id in different sources", []enq{
			{"stripe", "evt_1", true, -1},
			{"github", "evt_1", true, -1},
			{"stripe", "evt_1", true, 0},
			{"github", "evt_1", true, 1},
		}},
		{"dedupe disabled never collides", []enq{
			{"stripe", "evt_1", false, -1},
			{"stripe", "evt_1", false, -1},
			{"stripe", "evt_1", false, -1},
		}},
		{"dedupe disabled takes no claim", []enq{
			{"stripe", "evt_1", false, -1},
			{"stripe", "evt_1", true, -1},
			{"stripe", "evt_1", false, -1},
			{"stripe", "evt_1", true, 1},
		}},
		{"event id differing in case or source prefix", []enq{
			{"stripe", "evt_1", true, -1},
			{"stripe", "EVT_1", true, -1},
			{"stripe2", "evt_1", true, -1},
			{"strip", "eevt_1", true, -1},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := f.Open(t)
			var stored []string
			evs := make([]*storage.Event, len(tc.enqs))
			for i, e := range tc.enqs {
				evs[i] = newEvent(t, e.source, e.eventID)
				evs[i].Dedupe = e.dedupe
				res := enqueue(t, s, evs[i], time.Now().Add(time.Hour))
				switch {
				case e.dupOf < 0 && (res.Duplicate || res.ID != evs[i].ID):
					t.Errorf("enqueue %d (%s/%s dedupe=%v) = %+v, want stored as %s", i, e.source, e.eventID, e.dedupe, res, evs[i].ID)
				case e.dupOf >= 0 && (!res.Duplicate || res.ID != evs[e.dupOf].ID):
					t.Errorf("enqueue %d (%s/%s) = %+v, want duplicate of %s", i, e.source, e.eventID, res, evs[e.dupOf].ID)
				}
				if e.dupOf < 0 {
					stored = append(stored, evs[i].ID)
				}
			}
			jobs := lease(t, s, time.Now(), 100, time.Minute)
			if got := jobIDs(jobs); !sameSet(got, stored) {
				t.Errorf("leased %v, want %v", got, stored)
			}
		})
	}
}

func testDedupeWindow(t *testing.T, f Factory) {
	s := f.Open(t)
	until := time.Now().Add(50 * time.Millisecond)
	first := newEvent(t, "stripe", "evt_window")
	mustEnqueue(t, s, first, until)
	dup := newEvent(t, "stripe", "evt_window")
	res := enqueue(t, s, dup, until)
	if !res.Duplicate || res.ID != first.ID {
		t.Fatalf("enqueue within the window = %+v, want duplicate of %s", res, first.ID)
	}
	// a duplicate tells when its claim ends (the L1 cache must not outlive it)
	if d := res.DedupeUntil.Sub(until); d < -5*time.Millisecond || d > 5*time.Millisecond {
		t.Errorf("duplicate's DedupeUntil = %v, want about %v", res.DedupeUntil, until)
	}
	time.Sleep(time.Until(until) + 30*time.Millisecond)

	again := newEvent(t, "stripe", "evt_window")
	mustEnqueue(t, s, again, time.Now().Add(time.Hour))
	if res := enqueue(t, s, newEvent(t, "stripe", "evt_window"), time.Now().Add(time.Hour)); !res.Duplicate || res.ID != again.ID {
		t.Errorf("enqueue after the new claim = %+v, want duplicate of %s", res, again.ID)
	}
	if info := lookup(t, s, "stripe", "evt_window"); info.ID != again.ID {
		t.Errorf("Lookup found %s, want the newest event %s", info.ID, again.ID)
	}
	jobs := lease(t, s, time.Now(), 10, time.Minute)
	if got, want := jobIDs(jobs), []string{first.ID, again.ID}; !slices.Equal(got, want) {
		t.Errorf("leased %v, want %v", got, want)
	}
}

func testDuplicateStatus(t *testing.T, f Factory) {
	tests := []struct {
		name string
		do   func(t *testing.T, s storage.Store, job *storage.Job)
		want storage.Status
	}{
		{"queued", nil, storage.StatusQueued},
		{"in flight", func(t *testing.T, s storage.Store, job *storage.Job) {}, storage.StatusInFlight},
		{"retry scheduled", func(t *testing.T, s storage.Store, job *storage.Job) {
			finish(t, s, job, storage.Outcome{Result: storage.Retry, Attempt: attempt(1, time.Now(), 503, ""), Due: time.Now().Add(time.Hour)})
		}, storage.StatusQueued},
		{"delivered", func(t *testing.T, s storage.Store, job *storage.Job) {
			finish(t, s, job, storage.Outcome{Result: storage.Delivered, Attempt: attempt(1, time.Now(), 204, "")})
		}, storage.StatusDelivered},
		{"dead", func(t *testing.T, s storage.Store, job *storage.Job) {
			finish(t, s, job, storage.Outcome{Result: storage.Dead, Attempt: attempt(1, time.Now(), 400, ""), Error: "rejected"})
		}, storage.StatusDead},
		{"retried from the DLQ", func(t *testing.T, s storage.Store, job *storage.Job) {
			finish(t, s, job, storage.Outcome{Result: storage.Dead, Attempt: attempt(1, time.Now(), 400, ""), Error: "rejected"})
			if err := s.DLQRetry(t.Context(), job.ID, time.Now()); err != nil {
				t.Fatalf("DLQRetry: %v", err)
			}
		}, storage.StatusQueued},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := f.Open(t)
			ev := newEvent(t, "stripe", "evt_status")
			mustEnqueue(t, s, ev, time.Now().Add(time.Hour))
			if tc.do != nil {
				tc.do(t, s, leaseOne(t, s, time.Now(), time.Minute, ev.ID))
			}
			res := enqueue(t, s, newEvent(t, "stripe", "evt_status"), time.Now().Add(time.Hour))
			if !res.Duplicate || res.ID != ev.ID || res.Status != tc.want {
				t.Errorf("duplicate = %+v, want duplicate of %s with status %s", res, ev.ID, tc.want)
			}
			if info := lookup(t, s, "stripe", "evt_status"); info.ID != ev.ID || info.Status != tc.want {
				t.Errorf("Lookup = %s %s, want %s %s", info.ID, info.Status, ev.ID, tc.want)
			}
		})
	}
}

func testLeaseLimit(t *testing.T, f Factory) {
	s := f.Open(t)
	var want []string
	for range 5 {
		ev := newEvent(t, "stripe", "")
		mustEnqueue(t, s, ev, time.Now().Add(time.Hour))
		want = append(want, ev.ID)
	}
	base := time.Now()
	if jobs := lease(t, s, base, 0, time.Minute); len(jobs) != 0 {
		t.Fatalf("Lease with n=0 returned %d jobs", len(jobs))
	}
	var got []string
	for i, n := range []int{2, 2, 1, 0} {
		jobs := lease(t, s, base, 2, time.Minute)
		if len(jobs) != n {
			t.Fatalf("Lease call %d (n=2) returned %d jobs, want %d", i+1, len(jobs), n)
		}
		got = append(got, jobIDs(jobs)...)
	}
	if !slices.Equal(got, want) {
		t.Errorf("leased %v, want each job once, oldest first: %v", got, want)
	}
	wantCounts(t, s, storage.Counts{InFlight: 5})
}

func testLeaseExpiry(t *testing.T, f Factory) {
	s := f.Open(t)
	ev := newEvent(t, "stripe", "evt_expiry")
	mustEnqueue(t, s, ev, time.Now().Add(time.Hour))
	const d = 30 * time.Second
	base := time.Now()
	old := leaseOne(t, s, base, d, ev.ID)

	for _, at := range []time.Duration{0, time.Second, d / 2, d - 10*time.Millisecond} {
		if jobs := lease(t, s, base.Add(at), 10, d); len(jobs) != 0 {
			t.Fatalf("job leased again %v into a %v lease", at, d)
		}
	}
	if due, ok, err := s.NextDue(t.Context(), nil); err != nil || !ok || !closeTo(due, base.Add(d)) {
		t.Errorf("NextDue = %v %v %v, want the lease expiry %v", due, ok, err, base.Add(d))
	}

	later := base.Add(d + time.Millisecond)
	cur := leaseOne(t, s, later, d, ev.ID)
	if cur.Lease == old.Lease {
		t.Fatalf("lease token %q reused after expiry", cur.Lease)
	}
	checkEvent(t, "re-leased job", cur.Event, old.Event)

	for _, out := range []storage.Outcome{
		{Result: storage.Delivered, Attempt: attempt(1, time.Now(), 200, "")},
		{Result: storage.Retry, Attempt: attempt(1, time.Now(), 500, ""), Due: time.Now()},
		{Result: storage.Dead, Attempt: attempt(1, time.Now(), 400, ""), Error: "x"},
		{Result: storage.Release},
	} {
		if err := s.Finish(t.Context(), old, out); !errors.Is(err, storage.ErrLeaseLost) {
			t.Errorf("Finish(result %d) with the expired lease: err = %v, want ErrLeaseLost", out.Result, err)
		}
	}
	info := lookup(t, s, "stripe", "evt_expiry")
	if info.Status != storage.StatusInFlight || len(info.Attempts) != 0 {
		t.Errorf("after lost finishes: status %s, %d attempts; want in_flight, none recorded", info.Status, len(info.Attempts))
	}
	if _, err := s.DLQGet(t.Context(), ev.ID); !errors.Is(err, dlq.ErrNotFound) {
		t.Errorf("a lost Dead outcome created a DLQ entry (err %v)", err)
	}
	finish(t, s, cur, storage.Outcome{Result: storage.Delivered, Attempt: attempt(1, time.Now(), 200, "")})
	if info := lookup(t, s, "stripe", "evt_expiry"); info.Status != storage.StatusDelivered {
		t.Errorf("status %s after Finish with the current lease, want delivered", info.Status)
	}
	if jobs := lease(t, s, later.Add(time.Hour), 10, d); len(jobs) != 0 {
		t.Errorf("delivered job leased again: %v", jobIDs(jobs))
	}
}

func testLeaseConcurrent(t *testing.T, f Factory) {
	s := f.Open(t)
	const n = 60
	want := map[string]*storage.Event{}
	for range n {
		ev := newEvent(t, "stripe", "")
		mustEnqueue(t, s, ev, time.Now().Add(time.Hour))
		want[ev.ID] = ev
	}
	base := time.Now()
	const d = time.Minute

	// workers lease small batches concurrently: every job exactly once
	var (
		mu     sync.Mutex
		leased []*storage.Job
		errs   []error
		wg     sync.WaitGroup
	)
	for range 8 {
		wg.Go(func() {
			for {
				jobs, err := s.Lease(t.Context(), base, 3, d, nil)
				mu.Lock()
				leased = append(leased, jobs...)
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
				if err != nil || len(jobs) == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("concurrent Lease: %v", err)
	}
	seen := map[string]bool{}
	for _, j := range leased {
		if seen[j.ID] {
			t.Fatalf("job %s leased twice by concurrent workers", j.ID)
		}
		seen[j.ID] = true
		checkEvent(t, "concurrently leased job", j.Event, *want[j.ID])
	}
	if len(seen) != n {
		t.Fatalf("concurrent workers leased %d jobs, want %d", len(seen), n)
	}

	// after the leases expire, other workers take the jobs; late finishes
	// with the old leases race with finishes under the new ones
	again := lease(t, s, base.Add(d+time.Millisecond), 2*n, d)
	if len(again) != n {
		t.Fatalf("re-leased %d jobs after expiry, want %d", len(again), n)
	}
	oldErrs := make([]error, n)
	newErrs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			oldErrs[i] = s.Finish(t.Context(), leased[i], storage.Outcome{Result: storage.Dead, Attempt: attempt(1, base, 500, ""), Error: "late"})
		})
		wg.Go(func() {
			newErrs[i] = s.Finish(t.Context(), again[i], storage.Outcome{Result: storage.Delivered, Attempt: attempt(1, base, 200, "")})
		})
	}
	wg.Wait()
	for i := range n {
		if newErrs[i] != nil {
			t.Errorf("Finish with the current lease: %v", newErrs[i])
		}
		if !errors.Is(oldErrs[i], storage.ErrLeaseLost) {
			t.Errorf("Finish with an expired lease: err = %v, want ErrLeaseLost", oldErrs[i])
		}
	}
	wantCounts(t, s, storage.Counts{})
	if pages := listAll(t, s, dlq.Filter{}); len(pages[0].Entries) != 0 {
		t.Errorf("late finishes with lost leases created %d DLQ entries", len(pages[0].Entries))
	}
}

func testRetryOrder(t *testing.T, f Factory) {
	s := f.Open(t)
	dues := []time.Duration{5 * time.Second, time.Second, 4 * time.Second, 2 * time.Second, 3 * time.Second}
	evs := make([]*storage.Event, len(dues))
	for i := range evs {
		evs[i] = newEvent(t, "stripe", "")
		mustEnqueue(t, s, evs[i], time.Now().Add(time.Hour))
	}
	base := time.Now()
	jobs := lease(t, s, base, 10, time.Minute)
	if len(jobs) != len(evs) {
		t.Fatalf("leased %d jobs, want %d", len(jobs), len(evs))
	}
	byID := map[string]*storage.Job{}
	for _, j := range jobs {
		byID[j.ID] = j
	}
	for i, ev := range evs {
		finish(t, s, byID[ev.ID], storage.Outcome{Result: storage.Retry, Attempt: attempt(1, base, 503, "busy"), Due: base.Add(dues[i])})
	}
	wantCounts(t, s, storage.Counts{Queued: 5})
	if due, ok, err := s.NextDue(t.Context(), nil); err != nil || !ok || !closeTo(due, base.Add(time.Second)) {
		t.Errorf("NextDue = %v %v %v, want %v", due, ok, err, base.Add(time.Second))
	}
	info := lookup(t, s, "stripe", evs[3].EventID)
	if info.Status != storage.StatusQueued || !closeTo(info.NextAttempt, base.Add(2*time.Second)) {
		t.Errorf("Lookup = %s next %v, want queued next %v", info.Status, info.NextAttempt, base.Add(2*time.Second))
	}

	steps := []struct {
		at   time.Duration
		n    int
		want []int // indexes into evs, in lease order
	}{
		{0, 10, nil},
		{900 * time.Millisecond, 10, nil},
		{time.Second, 10, []int{1}},
		{3 * time.Second, 10, []int{3, 4}},
		{10 * time.Second, 1, []int{2}},
		{10 * time.Second, 10, []int{0}},
		{10 * time.Second, 10, nil},
	}
	for _, st := range steps {
		jobs := lease(t, s, base.Add(st.at), st.n, time.Minute)
		var want []string
		for _, i := range st.want {
			want = append(want, evs[i].ID)
		}
		if got := jobIDs(jobs); !slices.Equal(got, want) {
			t.Fatalf("Lease at +%v (n=%d) = %v, want %v", st.at, st.n, got, want)
		}
		for _, j := range jobs {
			if j.RoundAttempts() != 1 || len(j.Attempts) != 1 {
				t.Errorf("job %s: %d attempts (round %d), want 1", j.ID, len(j.Attempts), j.RoundAttempts())
			}
		}
	}
	// every job is now leased; the earliest due time is the first lease expiry
	if due, ok, err := s.NextDue(t.Context(), nil); err != nil || !ok || !closeTo(due, base.Add(time.Second+time.Minute)) {
		t.Errorf("NextDue = %v %v %v, want first lease expiry %v", due, ok, err, base.Add(time.Second+time.Minute))
	}
}

func testRelease(t *testing.T, f Factory) {
	s := f.Open(t)
	ev := newEvent(t, "stripe", "evt_release")
	mustEnqueue(t, s, ev, time.Now().Add(time.Hour))
	base := time.Now()
	a1 := attempt(1, base, 502, "bad gateway")
	finish(t, s, leaseOne(t, s, base, time.Minute, ev.ID), storage.Outcome{Result: storage.Retry, Attempt: a1, Due: base.Add(time.Second)})

	j := leaseOne(t, s, base.Add(time.Second), time.Minute, ev.ID)
	if j.RoundAttempts() != 1 {
		t.Fatalf("RoundAttempts = %d after one retry, want 1", j.RoundAttempts())
	}
	finish(t, s, j, storage.Outcome{Result: storage.Release, Due: base.Add(5 * time.Second)})
	info := lookup(t, s, "stripe", "evt_release")
	if info.Status != storage.StatusQueued || !closeTo(info.NextAttempt, base.Add(5*time.Second)) || len(info.Attempts) != 1 {
		t.Errorf("after Release: %s next %v, %d attempts; want queued next %v, 1 attempt", info.Status, info.NextAttempt, len(info.Attempts), base.Add(5*time.Second))
	}
	if jobs := lease(t, s, base.Add(4*time.Second), 10, time.Minute); len(jobs) != 0 {
		t.Fatal("released job leased before its due time")
	}
	j = leaseOne(t, s, base.Add(5*time.Second), time.Minute, ev.ID)
	if j.RoundAttempts() != 1 || len(j.Attempts) != 1 {
		t.Errorf("after Release: %d attempts (round %d), want 1 (1)", len(j.Attempts), j.RoundAttempts())
	}
	attemptsEqual(t, "after Release", j.Attempts, []dlq.Attempt{*a1})

	// zero Due: due now, by the store's clock
	finish(t, s, j, storage.Outcome{Result: storage.Release})
	j = leaseOne(t, s, time.Now(), time.Minute, ev.ID)
	if j.RoundAttempts() != 1 || len(j.Attempts) != 1 {
		t.Errorf("after Release with zero Due: %d attempts (round %d), want 1 (1)", len(j.Attempts), j.RoundAttempts())
	}
	checkEvent(t, "released job", j.Event, *ev)
}

func testAttemptHistory(t *testing.T, f Factory) {
	s := f.Open(t)
	ev := newEvent(t, "stripe", "evt_history")
	mustEnqueue(t, s, ev, time.Now().Add(time.Hour))
	base := time.Now()
	var want []dlq.Attempt
	outcomes := []storage.Outcome{
		{Result: storage.Retry, Attempt: attempt(1, base, 0, "dial tcp: connection refused")},
		{Result: storage.Retry, Attempt: attempt(2, base.Add(time.Second), 503, "service unavailable")},
		{Result: storage.Retry, Attempt: attempt(3, base.Add(2*time.Second), 429, "")},
		{Result: storage.Dead, Attempt: attempt(4, base.Add(3*time.Second), 500, "internal error"), Error: "attempts exhausted"},
	}
	for i, out := range outcomes {
		at := base.Add(time.Duration(i) * time.Second)
		j := leaseOne(t, s, at, time.Minute, ev.ID)
		attemptsEqual(t, fmt.Sprintf("leased job before attempt %d", i+1), j.Attempts, want)
		if j.RoundAttempts() != i {
			t.Errorf("RoundAttempts = %d before attempt %d", j.RoundAttempts(), i+1)
		}
		if out.Result == storage.Retry {
			out.Due = at.Add(time.Second)
		}
		finish(t, s, j, out)
		want = append(want, *out.Attempt)
		info := lookup(t, s, "stripe", "evt_history")
		attemptsEqual(t, fmt.Sprintf("Lookup after attempt %d", i+1), info.Attempts, want)
	}
	e := dlqGet(t, s, ev.ID)
	attemptsEqual(t, "DLQ entry", e.Attempts, want)
	if e.LastStatus != 500 || e.Error != "attempts exhausted" {
		t.Errorf("DLQ entry last_status %d error %q, want 500 %q", e.LastStatus, e.Error, "attempts exhausted")
	}

	// an operator retry starts a new budget and keeps the history
	if err := s.DLQRetry(t.Context(), ev.ID, time.Now()); err != nil {
		t.Fatalf("DLQRetry: %v", err)
	}
	now := time.Now()
	j := leaseOne(t, s, now, time.Minute, ev.ID)
	attemptsEqual(t, "after DLQRetry", j.Attempts, want)
	if j.RoundAttempts() != 0 {
		t.Errorf("RoundAttempts = %d after DLQRetry, want 0", j.RoundAttempts())
	}
	a5 := attempt(5, now, 503, "still down")
	finish(t, s, j, storage.Outcome{Result: storage.Retry, Attempt: a5, Due: now})
	want = append(want, *a5)
	j = leaseOne(t, s, time.Now(), time.Minute, ev.ID)
	attemptsEqual(t, "second round", j.Attempts, want)
	if j.RoundAttempts() != 1 {
		t.Errorf("RoundAttempts = %d after one attempt in the new round, want 1", j.RoundAttempts())
	}
	a6 := attempt(6, time.Now(), 200, "")
	finish(t, s, j, storage.Outcome{Result: storage.Delivered, Attempt: a6})
	want = append(want, *a6)
	info := lookup(t, s, "stripe", "evt_history")
	attemptsEqual(t, "Lookup after delivery", info.Attempts, want)
	if info.Status != storage.StatusDelivered {
		t.Errorf("status %s, want delivered", info.Status)
	}
}

func testCounts(t *testing.T, f Factory) {
	s := f.Open(t)
	wantCounts(t, s, storage.Counts{})
	if _, ok, err := s.NextDue(t.Context(), nil); err != nil || ok {
		t.Errorf("NextDue on an empty store: ok %v err %v", ok, err)
	}
	for range 5 {
		mustEnqueue(t, s, newEvent(t, "stripe", ""), time.Now().Add(time.Hour))
	}
	wantCounts(t, s, storage.Counts{Queued: 5})
	base := time.Now()
	jobs := lease(t, s, base, 2, time.Minute)
	wantCounts(t, s, storage.Counts{Queued: 3, InFlight: 2})
	finish(t, s, jobs[0], storage.Outcome{Result: storage.Delivered, Attempt: attempt(1, base, 200, "")})
	wantCounts(t, s, storage.Counts{Queued: 3, InFlight: 1})
	finish(t, s, jobs[1], storage.Outcome{Result: storage.Retry, Attempt: attempt(1, base, 500, ""), Due: base.Add(time.Second)})
	wantCounts(t, s, storage.Counts{Queued: 4})
	jobs = lease(t, s, base, 3, time.Minute)
	wantCounts(t, s, storage.Counts{Queued: 1, InFlight: 3})
	for _, j := range jobs {
		finish(t, s, j, storage.Outcome{Result: storage.Dead, Attempt: attempt(1, base, 400, ""), Error: "bad"})
	}
	wantCounts(t, s, storage.Counts{Queued: 1, Dead: 3})
	if err := s.DLQSetStatus(t.Context(), jobs[0].ID, dlq.StatusInvestigating, "", time.Now()); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, s, storage.Counts{Queued: 1, Dead: 3})
	if err := s.DLQSetStatus(t.Context(), jobs[1].ID, dlq.StatusResolved, "fixed", time.Now()); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, s, storage.Counts{Queued: 1, Dead: 2})
	if err := s.DLQRetry(t.Context(), jobs[2].ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, s, storage.Counts{Queued: 2, Dead: 1})
}

func testDLQEntry(t *testing.T, f Factory) {
	s := f.Open(t)
	if _, err := s.DLQGet(t.Context(), newID(t)); !errors.Is(err, dlq.ErrNotFound) {
		t.Errorf("DLQGet of an unknown id: err = %v, want dlq.ErrNotFound", err)
	}
	if _, err := s.Lookup(t.Context(), "stripe", "evt_unknown"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Lookup of an unknown event: err = %v, want storage.ErrNotFound", err)
	}
	ev := newEvent(t, "stripe", "evt_dead")
	ev.Body = []byte("{\"bin\":\"\x00\xff\"}")
	ev.Headers.Add("X-Multi", "a")
	ev.Headers.Add("X-Multi", "b")
	mustEnqueue(t, s, ev, time.Now().Add(time.Hour))
	base := time.Now()
	a1 := attempt(1, base, 503, "service unavailable")
	a2 := attempt(2, base.Add(time.Second), 422, "unprocessable")
	finish(t, s, leaseOne(t, s, base, time.Minute, ev.ID), storage.Outcome{Result: storage.Retry, Attempt: a1, Due: base.Add(time.Second)})
	before := time.Now()
	finish(t, s, leaseOne(t, s, base.Add(time.Second), time.Minute, ev.ID), storage.Outcome{Result: storage.Dead, Attempt: a2, Error: "upstream answered 422"})
	after := time.Now()

	e := dlqGet(t, s, ev.ID)
	if e.ID != ev.ID || e.EventID != ev.EventID || e.Source != ev.Source || e.Upstream != ev.Upstream {
		t.Errorf("entry ids = %s %s %s %s, want %s %s %s %s", e.ID, e.EventID, e.Source, e.Upstream, ev.ID, ev.EventID, ev.Source, ev.Upstream)
	}
	if !bytes.Equal(e.Payload, ev.Body) {
		t.Errorf("entry payload = %q, want %q", e.Payload, ev.Body)
	}
	if !headersEqual(e.Headers, ev.Headers) {
		t.Errorf("entry headers = %v, want %v", e.Headers, ev.Headers)
	}
	if e.Error != "upstream answered 422" || e.LastStatus != 422 {
		t.Errorf("entry error %q last_status %d, want %q 422", e.Error, e.LastStatus, "upstream answered 422")
	}
	attemptsEqual(t, "entry", e.Attempts, []dlq.Attempt{*a1, *a2})
	if !e.ReceivedAt.Equal(ev.ReceivedAt) {
		t.Errorf("entry received_at %v, want %v", e.ReceivedAt, ev.ReceivedAt)
	}
	if e.Status != dlq.StatusPending || e.Retries != 0 {
		t.Errorf("entry status %s retries %d, want pending 0", e.Status, e.Retries)
	}
	if e.CreatedAt.Before(before.Add(-tolerance)) || e.CreatedAt.After(after.Add(tolerance)) {
		t.Errorf("entry created_at %v, want between %v and %v", e.CreatedAt, before, after)
	}
	info := lookup(t, s, "stripe", "evt_dead")
	if info.Status != storage.StatusDead || info.ID != ev.ID {
		t.Errorf("Lookup = %s %s, want %s dead", info.ID, info.Status, ev.ID)
	}
	wantCounts(t, s, storage.Counts{Dead: 1})
	if jobs := lease(t, s, base.Add(time.Hour), 10, time.Minute); len(jobs) != 0 {
		t.Errorf("dead job leased again: %v", jobIDs(jobs))
	}
	if _, ok, err := s.NextDue(t.Context(), nil); err != nil || ok {
		t.Errorf("NextDue with only a dead job: ok %v err %v", ok, err)
	}
}

func testDLQList(t *testing.T, f Factory) {
	s := f.Open(t)
	const n = 25
	evs := make([]*storage.Event, n)
	for i := range evs {
		src := "stripe"
		if i%3 == 0 {
			src = "github"
		}
		evs[i] = newEvent(t, src, "")
		mustEnqueue(t, s, evs[i], time.Now().Add(time.Hour))
	}
	jobs := lease(t, s, time.Now(), 2*n, time.Minute)
	if len(jobs) != n {
		t.Fatalf("leased %d jobs, want %d", len(jobs), n)
	}
	byID := map[string]*storage.Job{}
	for _, j := range jobs {
		byID[j.ID] = j
	}
	// dead-letter in an order unrelated to the ids, a little apart so that
	// creation times differ even at millisecond precision
	created := make([]*storage.Event, n)
	for i := range created {
		ev := evs[(i*7)%n]
		created[i] = ev
		finish(t, s, byID[ev.ID], storage.Outcome{Result: storage.Dead, Attempt: attempt(1, time.Now(), 500, ""), Error: fmt.Sprintf("error %d", i)})
		time.Sleep(2 * time.Millisecond)
	}
	for i := 1; i < n; i += 4 {
		if err := s.DLQSetStatus(t.Context(), created[i].ID, dlq.StatusInvestigating, "", time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DLQSetStatus(t.Context(), created[2].ID, dlq.StatusResolved, "replayed by hand", time.Now()); err != nil {
		t.Fatal(err)
	}
	// the model: entries as DLQGet reports them, newest first
	var newest []*dlq.Entry
	for i := n - 1; i >= 0; i-- {
		e := dlqGet(t, s, created[i].ID)
		if len(newest) > 0 && !e.CreatedAt.Before(newest[len(newest)-1].CreatedAt) {
			t.Fatalf("entry %d created at %v, not before entry %d at %v", i, e.CreatedAt, i+1, newest[len(newest)-1].CreatedAt)
		}
		newest = append(newest, e)
	}

	tests := []struct {
		name      string
		filter    dlq.Filter
		fullPages bool // every page but the last has Limit entries
	}{
		{"default limit", dlq.Filter{}, true},
		{"limit 10", dlq.Filter{Limit: 10}, true},
		{"limit 1", dlq.Filter{Limit: 1}, true},
		{"limit 25", dlq.Filter{Limit: 25}, true},
		{"source", dlq.Filter{Source: "github", Limit: 4}, false},
		{"status", dlq.Filter{Status: dlq.StatusInvestigating, Limit: 2}, false},
		{"status pending and source", dlq.Filter{Status: dlq.StatusPending, Source: "stripe", Limit: 3}, false},
		{"since", dlq.Filter{Since: newest[n-1-10].CreatedAt, Limit: 4}, false},
		{"since and source", dlq.Filter{Since: newest[n-1-10].CreatedAt, Source: "stripe", Limit: 5}, false},
		{"resolved", dlq.Filter{Status: dlq.StatusResolved}, false},
		{"no match", dlq.Filter{Source: "nobody"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var want []string
			for _, e := range newest {
				if tc.filter.Matches(e) {
					want = append(want, e.ID)
				}
			}
			pages := listAll(t, s, tc.filter)
			var got []string
			for i, p := range pages {
				if tc.fullPages && i < len(pages)-1 && len(p.Entries) != tc.filter.EffectiveLimit() {
					t.Errorf("page %d has %d entries, want %d", i+1, len(p.Entries), tc.filter.EffectiveLimit())
				}
				for _, e := range p.Entries {
					got = append(got, e.ID)
					if !tc.filter.Matches(&e) {
						t.Errorf("entry %s (%s, %s, %v) does not match the filter", e.ID, e.Source, e.Status, e.CreatedAt)
					}
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("listed %d entries %v\nwant %d %v", len(got), got, len(want), want)
			}
			if tc.name == "limit 10" && len(pages) != 3 {
				t.Errorf("%d pages of 10 for 25 entries, want 3", len(pages))
			}
		})
	}

	t.Run("entry fields", func(t *testing.T) {
		p, err := s.DLQList(t.Context(), dlq.Filter{Limit: n})
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range p.Entries {
			m := newest[i]
			if e.ID != m.ID || e.Source != m.Source || e.EventID != m.EventID || e.Status != m.Status ||
				e.Error != m.Error || e.LastStatus != m.LastStatus || !e.CreatedAt.Equal(m.CreatedAt) {
				t.Errorf("listed entry %+v\ndiffers from DLQGet %+v", e, *m)
			}
		}
	})

	t.Run("invalid cursor", func(t *testing.T) {
		for _, c := range []string{"%%% not a cursor %%%", "\x00"} {
			if _, err := s.DLQList(t.Context(), dlq.Filter{Cursor: c}); !errors.Is(err, dlq.ErrInvalidCursor) {
				t.Errorf("cursor %q: err = %v, want dlq.ErrInvalidCursor", c, err)
			}
		}
	})
}

func testDLQRetry(t *testing.T, f Factory) {
	s := f.Open(t)
	if err := s.DLQRetry(t.Context(), newID(t), time.Now()); !errors.Is(err, dlq.ErrNotFound) {
		t.Errorf("DLQRetry of an unknown id: err = %v, want dlq.ErrNotFound", err)
	}
	ev := newEvent(t, "stripe", "evt_retry")
	ev.Headers.Set("Stripe-Signature", "t=1,v1=abc")
	mustEnqueue(t, s, ev, time.Now().Add(time.Hour))
	a1 := attempt(1, time.Now(), 500, "boom")
	finish(t, s, leaseOne(t, s, time.Now(), time.Minute, ev.ID), storage.Outcome{Result: storage.Dead, Attempt: a1, Error: "permanent"})
	wantCounts(t, s, storage.Counts{Dead: 1})

	retryAt := time.Now().Add(time.Minute) // due then (a paced bulk retry)
	before := time.Now()
	if err := s.DLQRetry(t.Context(), ev.ID, retryAt); err != nil {
		t.Fatalf("DLQRetry: %v", err)
	}
	after := time.Now()
	e := dlqGet(t, s, ev.ID)
	if e.Status != dlq.StatusRetried || e.Retries != 1 {
		t.Errorf("entry after DLQRetry: status %s retries %d, want retried 1", e.Status, e.Retries)
	}
	// updated_at is when the operator acted, not when the job is due
	if e.UpdatedAt.Before(before.Add(-tolerance)) || e.UpdatedAt.After(after.Add(tolerance)) {
		t.Errorf("entry updated_at %v, want the time of the call (%v to %v)", e.UpdatedAt, before, after)
	}
	wantCounts(t, s, storage.Counts{Queued: 1})
	if info := lookup(t, s, "stripe", "evt_retry"); info.Status != storage.StatusQueued {
		t.Errorf("Lookup after DLQRetry: %s, want queued", info.Status)
	}
	if err := s.DLQRetry(t.Context(), ev.ID, time.Now()); !errors.Is(err, dlq.ErrConflict) {
		t.Errorf("second DLQRetry: err = %v, want dlq.ErrConflict", err)
	}
	wantCounts(t, s, storage.Counts{Queued: 1})

	if jobs := lease(t, s, retryAt.Add(-10*time.Millisecond), 10, time.Minute); len(jobs) != 0 {
		t.Fatalf("retried job leased before the retry time")
	}
	j := leaseOne(t, s, retryAt, time.Minute, ev.ID)
	checkEvent(t, "retried job", j.Event, *ev)
	if j.RoundAttempts() != 0 {
		t.Errorf("retried job RoundAttempts = %d, want 0", j.RoundAttempts())
	}
	attemptsEqual(t, "retried job", j.Attempts, []dlq.Attempt{*a1})

	// it dies again: the same entry is back to pending
	a2 := attempt(2, time.Now(), 410, "gone")
	finish(t, s, j, storage.Outcome{Result: storage.Dead, Attempt: a2, Error: "gone for good"})
	e = dlqGet(t, s, ev.ID)
	if e.Status != dlq.StatusPending || e.Retries != 1 || e.Error != "gone for good" || e.LastStatus != 410 {
		t.Errorf("entry after dying again: status %s retries %d error %q last %d; want pending 1 %q 410", e.Status, e.Retries, e.Error, e.LastStatus, "gone for good")
	}
	attemptsEqual(t, "entry after dying again", e.Attempts, []dlq.Attempt{*a1, *a2})
	if !bytes.Equal(e.Payload, ev.Body) || !headersEqual(e.Headers, ev.Headers) {
		t.Errorf("entry after dying again lost its payload or headers")
	}
	if pages := listAll(t, s, dlq.Filter{}); len(pages) != 1 || len(pages[0].Entries) != 1 {
		t.Errorf("DLQList after dying again: %d pages, want one entry", len(pages))
	}
	wantCounts(t, s, storage.Counts{Dead: 1})

	// a second operator retry works, and counts
	if err := s.DLQRetry(t.Context(), ev.ID, time.Now()); err != nil {
		t.Fatalf("DLQRetry of the pending entry: %v", err)
	}
	if e := dlqGet(t, s, ev.ID); e.Retries != 2 {
		t.Errorf("Retries = %d after the second retry, want 2", e.Retries)
	}
	j = leaseOne(t, s, time.Now(), time.Minute, ev.ID)
	if j.RoundAttempts() != 0 || len(j.Attempts) != 2 {
		t.Errorf("second retry: %d attempts (round %d), want 2 (0)", len(j.Attempts), j.RoundAttempts())
	}
	finish(t, s, j, storage.Outcome{Result: storage.Dead, Attempt: attempt(3, time.Now(), 500, ""), Error: "again"})

	// discarded entries cannot be retried
	if err := s.DLQSetStatus(t.Context(), ev.ID, dlq.StatusDiscarded, "test event", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.DLQRetry(t.Context(), ev.ID, time.Now()); !errors.Is(err, dlq.ErrConflict) {
		t.Errorf("DLQRetry of a discarded entry: err = %v, want dlq.ErrConflict", err)
	}
	if e := dlqGet(t, s, ev.ID); e.Status != dlq.StatusDiscarded {
		t.Errorf("discarded entry is %s after a refused retry", e.Status)
	}
	wantCounts(t, s, storage.Counts{})
	if jobs := lease(t, s, time.Now(), 10, time.Minute); len(jobs) != 0 {
		t.Errorf("discarded entry was re-enqueued: %v", jobIDs(jobs))
	}
}

func testDLQSetStatus(t *testing.T, f Factory) {
	s := f.Open(t)
	var evs []*storage.Event
	for range 2 {
		ev := newEvent(t, "stripe", "")
		mustEnqueue(t, s, ev, time.Now().Add(time.Hour))
		evs = append(evs, ev)
	}
	for _, j := range lease(t, s, time.Now(), 10, time.Minute) {
		finish(t, s, j, storage.Outcome{Result: storage.Dead, Attempt: attempt(1, time.Now(), 500, ""), Error: "dead"})
	}
	wantCounts(t, s, storage.Counts{Dead: 2})
	a, b := evs[0].ID, evs[1].ID

	steps := []struct {
		id         string
		status     dlq.Status
		text       string
		resolution string
		reason     string
		dead       int
	}{
		{a, dlq.StatusInvestigating, "", "", "", 2},
		{a, dlq.StatusResolved, "upstream fixed, replayed manually", "upstream fixed, replayed manually", "", 1},
		{b, dlq.StatusInvestigating, "", "", "", 1},
		{b, dlq.StatusDiscarded, "test event from the dashboard", "", "test event from the dashboard", 0},
	}
	created := map[string]time.Time{a: dlqGet(t, s, a).CreatedAt, b: dlqGet(t, s, b).CreatedAt}
	for i, st := range steps {
		// operator times well apart from the dead-lettering time
		now := time.Now().Add(time.Duration(i+1) * time.Minute)
		if err := s.DLQSetStatus(t.Context(), st.id, st.status, st.text, now); err != nil {
			t.Fatalf("DLQSetStatus(%s): %v", st.status, err)
		}
		e := dlqGet(t, s, st.id)
		if e.Status != st.status || e.Resolution != st.resolution || e.Reason != st.reason {
			t.Errorf("after %s: status %s resolution %q reason %q; want %s %q %q", st.status, e.Status, e.Resolution, e.Reason, st.status, st.resolution, st.reason)
		}
		if !closeTo(e.UpdatedAt, now) || !e.CreatedAt.Equal(created[st.id]) {
			t.Errorf("after %s: created_at %v updated_at %v, want %v %v", st.status, e.CreatedAt, e.UpdatedAt, created[st.id], now)
		}
		if !bytes.Equal(e.Payload, evs[slices.IndexFunc(evs, func(ev *storage.Event) bool { return ev.ID == st.id })].Body) {
			t.Errorf("after %s: payload lost", st.status)
		}
		wantCounts(t, s, storage.Counts{Dead: st.dead})
	}
	if err := s.DLQSetStatus(t.Context(), newID(t), dlq.StatusResolved, "x", time.Now()); !errors.Is(err, dlq.ErrNotFound) {
		t.Errorf("DLQSetStatus of an unknown id: err = %v, want dlq.ErrNotFound", err)
	}
	for _, bad := range []dlq.Status{"bogus", dlq.StatusRetried} {
		if err := s.DLQSetStatus(t.Context(), a, bad, "", time.Now()); err == nil {
			t.Errorf("DLQSetStatus(%q) succeeded", bad)
		}
	}
	if e := dlqGet(t, s, a); e.Status != dlq.StatusResolved {
		t.Errorf("refused status changes moved the entry to %s", e.Status)
	}
}

// testPaused: pausing is shared through the store and survives reopening.
func testPaused(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := t.Context()
	if p, err := s.Paused(ctx); err != nil || len(p) != 0 {
		t.Fatalf("Paused on a new store = %v, %v", p, err)
	}
	for _, src := range []string{"stripe", "github"} {
		if err := s.SetPaused(ctx, src, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetPaused(ctx, "github", false); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPaused(ctx, "never-paused", false); err != nil {
		t.Fatalf("resuming a source that is not paused: %v", err)
	}
	if f.Reopen != nil {
		s = f.Reopen(t, s)
	}
	if p, err := s.Paused(ctx); err != nil || !maps.Equal(p, map[string]bool{"stripe": true}) {
		t.Fatalf("Paused = %v, %v; want only stripe", p, err)
	}
}

// testQueueBySource counts queued and leased jobs per source.
func testQueueBySource(t *testing.T, f Factory) {
	s := f.Open(t)
	for _, src := range []string{"stripe", "stripe", "stripe", "github"} {
		mustEnqueue(t, s, newEvent(t, src, ""), time.Now().Add(time.Hour))
	}
	// lease one stripe job (the oldest is a stripe one)
	if jobs := lease(t, s, time.Now(), 1, time.Minute); len(jobs) != 1 || jobs[0].Source != "stripe" {
		t.Fatalf("leased %v", jobIDs(jobs))
	}
	got, err := s.QueueBySource(t.Context())
	want := map[string]storage.Counts{"stripe": {Queued: 2, InFlight: 1}, "github": {Queued: 1}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("QueueBySource = %v, %v; want %v", got, err, want)
	}
}

// testDLQCounts counts entries by source and status.
func testDLQCounts(t *testing.T, f Factory) {
	s := f.Open(t)
	kill := func(source string) *storage.Event {
		ev := newEvent(t, source, "")
		ev.EventID, ev.Dedupe = ev.ID, false
		mustEnqueue(t, s, ev, time.Time{})
		finish(t, s, leaseOneOf(t, s, ev.ID), storage.Outcome{Result: storage.Dead, Attempt: attempt(1, time.Now(), 500, ""), Error: "x"})
		return ev
	}
	kill("stripe")
	kill("stripe")
	d := kill("github")
	if err := s.DLQSetStatus(t.Context(), d.ID, dlq.StatusDiscarded, "noise", time.Now()); err != nil {
		t.Fatal(err)
	}
	got, err := s.DLQCounts(t.Context())
	want := map[string]map[dlq.Status]int{"stripe": {dlq.StatusPending: 2}, "github": {dlq.StatusDiscarded: 1}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("DLQCounts = %v, %v; want %v", got, err, want)
	}
}

// testStats: counters add up per source in minute buckets and all-time.
func testStats(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := t.Context()
	now := time.Now()
	old := now.Add(-3 * time.Hour)
	for _, step := range []struct {
		at time.Time
		d  map[string]map[string]int64
	}{
		{old, map[string]map[string]int64{"stripe": {"accepted": 5, "dead": 1}}},
		{now.Add(-10 * time.Minute), map[string]map[string]int64{"stripe": {"accepted": 2}, "github": {"unauthorized": 3}}},
		{now, map[string]map[string]int64{"stripe": {"accepted": 1, "delivered": 3}}},
	} {
		if err := s.AddStats(ctx, step.at, step.d); err != nil {
			t.Fatal(err)
		}
	}
	recent, all, err := s.Stats(ctx, now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	wantRecent := map[string]map[string]int64{"stripe": {"accepted": 3, "delivered": 3}, "github": {"unauthorized": 3}}
	wantAll := map[string]map[string]int64{"stripe": {"accepted": 8, "dead": 1, "delivered": 3}, "github": {"unauthorized": 3}}
	if !reflect.DeepEqual(recent, wantRecent) {
		t.Errorf("last hour = %v, want %v", recent, wantRecent)
	}
	if !reflect.DeepEqual(all, wantAll) {
		t.Errorf("all time = %v, want %v", all, wantAll)
	}
}

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
	if e := dlqGet(t, s, dead.ID); e.Status != dlq.StatusPending || e.Retries != 1 || len(e.Attempts) != 2 {
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
	if _, err := s.DLQGet(ctx, dead.ID); !errors.Is(err, dlq.ErrNotFound) {
		t.Errorf("DLQGet after DLQ retention: err = %v, want ErrNotFound", err)
	}
	if pages := listAll(t, s, dlq.Filter{}); len(pages) != 1 || len(pages[0].Entries) != 0 {
		t.Errorf("DLQList after DLQ retention is not empty")
	}
	wantCounts(t, s, storage.Counts{InFlight: 3})
}

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
	errs := make([]error, n)
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
	wantCounts(t, s, storage.Counts{Queued: 40, InFlight: 5, Dead: 5})
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
	var listed []string
	for _, p := range listAll(t, s, dlq.Filter{}) {
		for _, e := range p.Entries {
			listed = append(listed, e.ID)
		}
	}
	if !sameSet(listed, dead) {
		t.Errorf("DLQ after reopen lists %v, want %v", listed, dead)
	}
	for _, id := range dead {
		if e := dlqGet(t, s, id); !bytes.Equal(e.Payload, byID[id].Body) || e.Status != dlq.StatusPending {
			t.Errorf("DLQ entry %s after reopen: status %s, payload intact %v", id, e.Status, bytes.Equal(e.Payload, byID[id].Body))
		}
	}
	if info := lookup(t, s, "stripe", byID[dead[0]].EventID); info.Status != storage.StatusDead {
		t.Errorf("Lookup of a dead event after reopen: %s", info.Status)
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

// ---------------------------------------------------------------- helpers

var bodySeq atomic.Int64

func newID(t testing.TB) string {
	t.Helper()
	id, err := uuid.NewV7()
	if err != nil {
		t.Fatalf("uuid: %v", err)
	}
	return id.String()
}

// newEvent is a deduplicated event with a distinct body; an empty eventID
// makes a unique one.
func newEvent(t testing.TB, source, eventID string) *storage.Event {
	t.Helper()
	id := newID(t)
	if eventID == "" {
		eventID = "evt_" + id
	}
	return &storage.Event{
		ID:       id,
		EventID:  eventID,
		Dedupe:   true,
		Source:   source,
		Upstream: "http://127.0.0.1:8080/hooks/" + source,
		Headers: http.Header{
			"Content-Type": {"application/json"},
			"X-Request-Id": {id},
		},
		Body:       fmt.Appendf(nil, `{"id":%q,"seq":%d}`, eventID, bodySeq.Add(1)),
		ReceivedAt: time.Now().Round(0),
	}
}

func cloneEvent(ev *storage.Event) storage.Event {
	c := *ev
	c.Body = bytes.Clone(ev.Body)
	c.Headers = ev.Headers.Clone()
	return c
}

func attempt(n int, at time.Time, status int, err string) *dlq.Attempt {
	return &dlq.Attempt{N: n, At: at.Round(0), Status: status, Duration: time.Duration(n)*time.Millisecond + 12345, Error: err}
}

func enqueue(t testing.TB, s storage.Store, ev *storage.Event, until time.Time) storage.EnqueueResult {
	t.Helper()
	res, err := s.Enqueue(t.Context(), ev, until)
	if err != nil {
		t.Fatalf("Enqueue(%s/%s): %v", ev.Source, ev.EventID, err)
	}
	return res
}

func mustEnqueue(t testing.TB, s storage.Store, ev *storage.Event, until time.Time) {
	t.Helper()
	res := enqueue(t, s, ev, until)
	if res.Duplicate || res.ID != ev.ID || res.Status != storage.StatusQueued {
		t.Fatalf("Enqueue(%s/%s) = %+v, want stored as %s, queued", ev.Source, ev.EventID, res, ev.ID)
	}
}

func lease(t testing.TB, s storage.Store, now time.Time, n int, d time.Duration) []*storage.Job {
	t.Helper()
	jobs, err := s.Lease(t.Context(), now, n, d, nil)
	if err != nil {
		t.Fatalf("Lease: %v", err)
	}
	if len(jobs) > max(n, 0) {
		t.Fatalf("Lease(n=%d) returned %d jobs", n, len(jobs))
	}
	for _, j := range jobs {
		if !closeTo(j.LeaseUntil, now.Add(d)) || j.Lease == "" {
			t.Fatalf("leased job %s: lease %q until %v, want a token until %v", j.ID, j.Lease, j.LeaseUntil, now.Add(d))
		}
	}
	return jobs
}

// leaseOne leases at now and expects exactly the job id.
func leaseOne(t testing.TB, s storage.Store, now time.Time, d time.Duration, id string) *storage.Job {
	t.Helper()
	jobs := lease(t, s, now, 10, d)
	if len(jobs) != 1 || jobs[0].ID != id {
		t.Fatalf("Lease = %v, want [%s]", jobIDs(jobs), id)
	}
	return jobs[0]
}

// leaseOneOf leases every due job, keeps id leased and releases the others.
func leaseOneOf(t testing.TB, s storage.Store, id string) *storage.Job {
	t.Helper()
	var found *storage.Job
	for _, j := range lease(t, s, time.Now(), 1000, time.Minute) {
		if j.ID == id {
			found = j
			continue
		}
		finish(t, s, j, storage.Outcome{Result: storage.Release})
	}
	if found == nil {
		t.Fatalf("job %s not due", id)
	}
	return found
}

func finish(t testing.TB, s storage.Store, job *storage.Job, out storage.Outcome) {
	t.Helper()
	if err := s.Finish(t.Context(), job, out); err != nil {
		t.Fatalf("Finish(%s, result %d): %v", job.ID, out.Result, err)
	}
}

func lookup(t testing.TB, s storage.Store, source, eventID string) *storage.EventInfo {
	t.Helper()
	info, err := s.Lookup(t.Context(), source, eventID)
	if err != nil {
		t.Fatalf("Lookup(%s, %s): %v", source, eventID, err)
	}
	return info
}

func dlqGet(t testing.TB, s storage.Store, id string) *dlq.Entry {
	t.Helper()
	e, err := s.DLQGet(t.Context(), id)
	if err != nil {
		t.Fatalf("DLQGet(%s): %v", id, err)
	}
	return e
}

// listAll pages through a listing and checks that no entry is listed twice.
func listAll(t testing.TB, s storage.Store, f dlq.Filter) []dlq.Page {
	t.Helper()
	var pages []dlq.Page
	seen := map[string]bool{}
	for {
		if len(pages) > 1000 {
			t.Fatal("DLQList pagination does not end")
		}
		p, err := s.DLQList(t.Context(), f)
		if err != nil {
			t.Fatalf("DLQList(%+v): %v", f, err)
		}
		if len(p.Entries) > f.EffectiveLimit() {
			t.Fatalf("DLQList returned %d entries, limit %d", len(p.Entries), f.EffectiveLimit())
		}
		for _, e := range p.Entries {
			if seen[e.ID] {
				t.Fatalf("entry %s listed twice", e.ID)
			}
			seen[e.ID] = true
		}
		pages = append(pages, p)
		if p.NextCursor == "" {
			return pages
		}
		if p.NextCursor == f.Cursor {
			t.Fatalf("DLQList returned the cursor it was given: %q", f.Cursor)
		}
		f.Cursor = p.NextCursor
	}
}

func wantCounts(t testing.TB, s storage.Store, want storage.Counts) {
	t.Helper()
	got, err := s.Counts(t.Context())
	if err != nil {
		t.Fatalf("Counts: %v", err)
	}
	if got != want {
		t.Errorf("Counts = %+v, want %+v", got, want)
	}
}

func checkInfo(t testing.TB, info *storage.EventInfo, ev storage.Event, status storage.Status) {
	t.Helper()
	if info.ID != ev.ID || info.EventID != ev.EventID || info.Source != ev.Source || info.Status != status || !info.ReceivedAt.Equal(ev.ReceivedAt) {
		t.Errorf("Lookup = %s %s %s %s %v, want %s %s %s %s %v",
			info.ID, info.EventID, info.Source, info.Status, info.ReceivedAt,
			ev.ID, ev.EventID, ev.Source, status, ev.ReceivedAt)
	}
}

func checkEvent(t testing.TB, what string, got, want storage.Event) {
	t.Helper()
	if !eventEqual(got, want) {
		t.Errorf("%s differs from the enqueued event:\n got %s\nwant %s", what, fmtEvent(got), fmtEvent(want))
	}
}

func eventEqual(a, b storage.Event) bool {
	return a.ID == b.ID && a.EventID == b.EventID && a.Dedupe == b.Dedupe &&
		a.Source == b.Source && a.Upstream == b.Upstream &&
		headersEqual(a.Headers, b.Headers) && bytes.Equal(a.Body, b.Body) &&
		a.ReceivedAt.Equal(b.ReceivedAt)
}

func fmtEvent(ev storage.Event) string {
	body := ev.Body
	if len(body) > 64 {
		body = body[:64]
	}
	return fmt.Sprintf("id=%s event_id=%q dedupe=%v source=%q upstream=%q headers=%v received_at=%v body(%d)=%q",
		ev.ID, ev.EventID, ev.Dedupe, ev.Source, ev.Upstream, ev.Headers, ev.ReceivedAt, len(ev.Body), body)
}

func headersEqual(a, b http.Header) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

func attemptsEqual(t testing.TB, what string, got, want []dlq.Attempt) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		g, w := got[i], want[i]
		ok = g.N == w.N && g.At.Equal(w.At) && g.Status == w.Status && g.Duration == w.Duration && g.Error == w.Error
	}
	if !ok {
		t.Errorf("%s: attempts\n got %+v\nwant %+v", what, got, want)
	}
}

func closeTo(a, b time.Time) bool {
	d := a.Sub(b)
	return d >= -tolerance && d <= tolerance
}

func jobIDs(jobs []*storage.Job) []string {
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	return ids
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
