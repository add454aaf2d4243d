package storagetest

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

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
		{"typed event of a tenant", func(ev *storage.Event) {
			ev.Type = "orders/create"
			ev.Tenant = "shop-1.myshopify.com"
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
	if _, err := s.DLQGet(t.Context(), ev.ID); !errors.Is(err, storage.ErrDLQNotFound) {
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
	if pages := listAll(t, s, storage.DLQFilter{}); len(pages[0].Entries) != 0 {
		t.Errorf("late finishes with lost leases created %d DLQ entries", len(pages[0].Entries))
	}
}

// testLeaseFinishConcurrent has workers lease and finish at the same
// time, as a dispatcher's lease loop and its workers' outcomes do: a job
// whose outcome is committed while another lease reads the queue is never
// handed out again, and no Finish finds its lease lost.
func testLeaseFinishConcurrent(t *testing.T, f Factory) {
	s := f.Open(t)
	const n = 240
	for range n {
		mustEnqueue(t, s, newEvent(t, "stripe", ""), time.Now().Add(time.Hour))
	}
	var (
		mu        sync.Mutex
		delivered = map[string]int{}
		errs      []error
		wg        sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	// the counts read meanwhile never go below zero nor above the jobs
	// enqueued: in flight is always part of what the queue holds
	stopCounts := make(chan struct{})
	var counting sync.WaitGroup
	counting.Go(func() {
		for {
			select {
			case <-stopCounts:
				return
			default:
			}
			c, err := s.Counts(t.Context())
			if err == nil && (c.Queued < 0 || c.InFlight < 0 || c.Queued+c.InFlight > n) {
				fail(fmt.Errorf("Counts during leases and finishes = %+v", c))
				return
			}
		}
	})
	for range 6 {
		wg.Go(func() {
			var fw sync.WaitGroup
			defer fw.Wait()
			for idle := 0; idle < 3; {
				jobs, err := s.Lease(t.Context(), time.Now(), 4, time.Hour, nil)
				if err != nil {
					fail(fmt.Errorf("Lease: %w", err))
					return
				}
				if len(jobs) == 0 {
					idle++ // the others may still be finishing theirs
					time.Sleep(5 * time.Millisecond)
					continue
				}
				idle = 0
				for _, j := range jobs {
					mu.Lock()
					delivered[j.ID]++
					mu.Unlock()
					// outcomes recorded in the background, while this
					// worker leases again
					fw.Go(func() {
						if err := s.Finish(t.Context(), j, storage.Outcome{Result: storage.Delivered, Attempt: attempt(1, time.Now(), 200, "")}); err != nil {
							fail(fmt.Errorf("Finish(%s): %w", j.ID, err))
						}
					})
				}
			}
		})
	}
	wg.Wait()
	close(stopCounts)
	counting.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if len(delivered) != n {
		t.Errorf("delivered %d jobs, want %d", len(delivered), n)
	}
	for id, k := range delivered {
		if k != 1 {
			t.Errorf("job %s handed out %d times", id, k)
		}
	}
	wantCounts(t, s, storage.Counts{})
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
	attemptsEqual(t, "after Release", j.Attempts, []storage.Attempt{*a1})

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
	var want []storage.Attempt
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

// testLeaseNamed: an enqueue names the deliveries it left due at once
// (EnqueueResult.Due), and LeaseNamed leases those, only while they are
// due and under no lease, as Lease would have handed them out.
func testLeaseNamed(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := t.Context()
	until := time.Now().Add(time.Hour)
	ev := newEvent(t, "stripe", "")
	res := enqueue(t, s, ev, until)
	if len(res.Due) != 1 || res.Due[0].ID != ev.ID || res.Due[0].Lane != storage.LaneOf(ev) || res.Due[0].Due.After(time.Now()) {
		t.Fatalf("Due of an event with one delivery = %+v, want that delivery, due now", res.Due)
	}
	if dup := enqueue(t, s, newEvent(t, "stripe", ev.EventID), until); !dup.Duplicate || dup.Due != nil {
		t.Errorf("a duplicate's Due = %+v, want none", dup.Due)
	}
	// a fan-out event names every delivery, or none where the backend
	// keeps them in one record until a lease expands it
	fan := fanOutEvent(t, "shop", "")
	fres := enqueue(t, s, fan, until)
	deliveries, _, err := storage.DeliveriesOf(fan)
	if err != nil {
		t.Fatal(err)
	}
	var fanIDs []string
	for _, d := range deliveries {
		fanIDs = append(fanIDs, d.ID)
	}
	var named []string
	for _, c := range fres.Due {
		named = append(named, c.ID)
	}
	if len(named) != 0 && !sameSet(named, fanIDs) {
		t.Errorf("Due of a fan-out event names %v, want all of %v or none", named, fanIDs)
	}
	// an ordered delivery is never named: its chain decides when it goes
	if ores := enqueue(t, s, orderedEvent(t, "orders", "K", false), until); len(ores.Due) != 0 {
		t.Errorf("Due of an ordered event = %+v, want none", ores.Due)
	}

	cands := append(slices.Clone(res.Due), fres.Due...)
	now := time.Now()
	jobs, err := s.LeaseNamed(ctx, now, cands, time.Minute)
	if err != nil {
		t.Fatalf("LeaseNamed: %v", err)
	}
	if got := jobIDs(jobs); !sameSet(got, append([]string{ev.ID}, named...)) {
		t.Fatalf("LeaseNamed leased %v, want %v and %v", got, ev.ID, named)
	}
	for _, j := range jobs {
		if j.Lease == "" || !closeTo(j.LeaseUntil, now.Add(time.Minute)) {
			t.Errorf("job %s leased by name: lease %q until %v", j.ID, j.Lease, j.LeaseUntil)
		}
		if j.ID == ev.ID {
			checkEvent(t, "job leased by name", j.Event, *ev)
		}
	}
	// under lease: neither leased by name again nor by Lease
	if again, err := s.LeaseNamed(ctx, now, cands, time.Minute); err != nil || len(again) != 0 {
		t.Errorf("LeaseNamed of leased jobs = %v, %v; want none", jobIDs(again), err)
	}
	rest := lease(t, s, now, 100, time.Minute)
	for _, j := range rest {
		if slices.Contains(jobIDs(jobs), j.ID) {
			t.Errorf("Lease handed out %s, leased by name", j.ID)
		}
	}
	if len(jobs)+len(rest) != 1+len(fanIDs)+1 {
		t.Errorf("leased %d by name and %d by Lease, want every due delivery (%d)", len(jobs), len(rest), 2+len(fanIDs))
	}
	delivered(t, s, jobs[slices.IndexFunc(jobs, func(j *storage.Job) bool { return j.ID == ev.ID })])
	// once the leases ran out, a name leases what is still due, not what
	// was delivered; nor what is not due yet
	later := now.Add(2 * time.Minute)
	if early, err := s.LeaseNamed(ctx, cands[0].Due.Add(-time.Second), cands, time.Minute); err != nil || len(early) != 0 {
		t.Errorf("LeaseNamed before the jobs are due = %v, %v; want none", jobIDs(early), err)
	}
	again, err := s.LeaseNamed(ctx, later, cands, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got := jobIDs(again); !sameSet(got, named) {
		t.Errorf("LeaseNamed after the leases ran out = %v, want %v (not the delivered %s)", got, named, ev.ID)
	}
}
