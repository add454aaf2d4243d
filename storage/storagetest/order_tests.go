package storagetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

// Per-key ordering: the deliveries of one lane with the same order key go
// out one at a time, in the order they were accepted (storage.ChainOf).

// orderedEvent is newEvent whose one delivery is ordered under key (with
// on_dead skip when skip).
func orderedEvent(t testing.TB, source, key string, skip bool) *storage.Event {
	t.Helper()
	ev := newEvent(t, source, "")
	ev.OrderKey, ev.OrderSkip = key, skip
	return ev
}

// enqueueOrdered enqueues one ordered event per key of keys, in that
// order, and returns each key's event IDs in acceptance order.
func enqueueOrdered(t testing.TB, s storage.Store, source string, skip bool, keys ...string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, k := range keys {
		ev := orderedEvent(t, source, k, skip)
		mustEnqueue(t, s, ev, time.Now().Add(time.Hour))
		out[k] = append(out[k], ev.ID)
	}
	return out
}

// delivered finishes job as delivered.
func delivered(t testing.TB, s storage.Store, job *storage.Job) {
	t.Helper()
	finish(t, s, job, storage.Outcome{Result: storage.Delivered, Attempt: attempt(job.RoundAttempts()+1, time.Now(), 200, "")})
}

// died finishes job as dead.
func died(t testing.TB, s storage.Store, job *storage.Job) {
	t.Helper()
	finish(t, s, job, storage.Outcome{Result: storage.Dead, Attempt: attempt(job.RoundAttempts()+1, time.Now(), 400, "bad"), Error: "permanent"})
}

// leaseExactly leases every job due at now and expects exactly ids (in
// any order).
func leaseExactly(t testing.TB, s storage.Store, now time.Time, ids ...string) []*storage.Job {
	t.Helper()
	jobs := lease(t, s, now, 1000, time.Minute)
	if got := jobIDs(jobs); !sameSet(got, ids) {
		t.Fatalf("Lease = %v, want %v", got, ids)
	}
	return jobs
}

// wantWaiting checks the Waiting count of id's DLQ entry, as DLQGet and
// DLQList report it.
func wantWaiting(t testing.TB, s storage.Store, id string, want int) {
	t.Helper()
	if e := dlqGet(t, s, id); e.Waiting != want {
		t.Errorf("DLQGet(%s).Waiting = %d, want %d", id, e.Waiting, want)
	}
	for _, p := range listAll(t, s, storage.DLQFilter{}) {
		for _, e := range p.Entries {
			if e.ID == id && e.Waiting != want {
				t.Errorf("DLQList: entry %s Waiting = %d, want %d", id, e.Waiting, want)
			}
		}
	}
}

// testOrderedKeys: two keys, events interleaved. Only each key's head is
// leased, whatever n; a key is never held back by the other; a delivered
// head lets the next of its key go; each key's deliveries go out in the
// order the events were accepted. Waiting jobs count as queued.
func testOrderedKeys(t *testing.T, f Factory) {
	s := f.Open(t)
	ids := enqueueOrdered(t, s, "shop", false, "A", "B", "A", "B", "A", "B", "A")
	a, b := ids["A"], ids["B"]
	wantCounts(t, s, storage.Counts{Queued: 7})
	if info := lookup(t, s, "shop", "evt_"+a[1]); info.Status != storage.StatusQueued || !info.NextAttempt.IsZero() {
		t.Errorf("Lookup of a waiting job: %s, want queued", info.Status)
	}

	jobs := leaseExactly(t, s, time.Now(), a[0], b[0])
	leaseExactly(t, s, time.Now().Add(30*time.Second))
	wantCounts(t, s, storage.Counts{Queued: 5, InFlight: 2})
	if q, err := s.QueueBySource(t.Context()); err != nil || q["shop"] != (storage.Counts{Queued: 5, InFlight: 2}) {
		t.Errorf("QueueBySource = %+v, %v; want 5 queued, 2 in flight", q, err)
	}

	// B goes on while A's head is still in flight
	var order []string
	delivered(t, s, jobByID(t, jobs, b[0]))
	order = append(order, b[0])
	bj := leaseExactly(t, s, time.Now(), b[1])
	delivered(t, s, bj[0])
	order = append(order, b[1])
	delivered(t, s, jobByID(t, jobs, a[0]))
	order = append(order, a[0])
	for {
		jobs := lease(t, s, time.Now(), 1000, time.Minute)
		if len(jobs) == 0 {
			break
		}
		if len(jobs) > 2 || len(jobs) == 2 && jobs[0].OrderKey == jobs[1].OrderKey {
			t.Fatalf("leased %v: more than one job of a key", jobIDs(jobs))
		}
		for _, j := range jobs {
			order = append(order, j.ID)
			delivered(t, s, j)
		}
	}
	var gotA, gotB []string
	for _, id := range order {
		if slices.Contains(a, id) {
			gotA = append(gotA, id)
		} else {
			gotB = append(gotB, id)
		}
	}
	if !slices.Equal(gotA, a) || !slices.Equal(gotB, b) {
		t.Errorf("delivery order A %v B %v, want the acceptance order A %v B %v", gotA, gotB, a, b)
	}
	wantCounts(t, s, storage.Counts{})
}

// testOrderedRetry: a head rescheduled (Retry) or handed back (Release)
// keeps its place: it comes back before any job behind it, which are never
// leased meanwhile.
func testOrderedRetry(t *testing.T, f Factory) {
	s := f.Open(t)
	ids := enqueueOrdered(t, s, "shop", false, "A", "A", "A")["A"]
	j := leaseExactly(t, s, time.Now(), ids[0])[0]
	finish(t, s, j, storage.Outcome{Result: storage.Retry, Attempt: attempt(1, time.Now(), 503, ""), Due: time.Now().Add(time.Minute)})
	leaseExactly(t, s, time.Now())
	j = leaseExactly(t, s, time.Now().Add(2*time.Minute), ids[0])[0]
	finish(t, s, j, storage.Outcome{Result: storage.Release})
	j = leaseExactly(t, s, time.Now().Add(2*time.Minute), ids[0])[0]
	if len(j.Attempts) != 1 {
		t.Errorf("the head's attempts after a retry and a release: %+v", j.Attempts)
	}
	delivered(t, s, j)
	delivered(t, s, leaseExactly(t, s, time.Now(), ids[1])[0])
	leaseExactly(t, s, time.Now(), ids[2])
}

// testOrderedLeaseExpiry: a head whose worker died (its lease ran out) is
// leased again, not the job behind it.
func testOrderedLeaseExpiry(t *testing.T, f Factory) {
	s := f.Open(t)
	ids := enqueueOrdered(t, s, "shop", false, "A", "A")["A"]
	old := leaseExactly(t, s, time.Now(), ids[0])[0]
	j := leaseExactly(t, s, time.Now().Add(2*time.Minute), ids[0])[0]
	if err := s.Finish(t.Context(), old, storage.Outcome{Result: storage.Delivered}); !errors.Is(err, storage.ErrLeaseLost) {
		t.Fatalf("Finish under the expired lease: %v, want ErrLeaseLost", err)
	}
	leaseExactly(t, s, time.Now().Add(2*time.Minute))
	delivered(t, s, j)
	leaseExactly(t, s, time.Now(), ids[1])
}

// testOrderedDeadBlock: a dead head (on_dead block) keeps its key blocked,
// its entry telling how many wait; investigating keeps it blocked; a retry
// re-queues the head in its place, then the others follow in order. Other
// keys go on.
func testOrderedDeadBlock(t *testing.T, f Factory) {
	s := f.Open(t)
	ids := enqueueOrdered(t, s, "shop", false, "A", "B", "A", "A")
	a, b := ids["A"], ids["B"]
	jobs := leaseExactly(t, s, time.Now(), a[0], b[0])
	died(t, s, jobByID(t, jobs, a[0]))
	wantCounts(t, s, storage.Counts{Queued: 2, InFlight: 1, Dead: 1})
	delivered(t, s, jobByID(t, jobs, b[0]))
	leaseExactly(t, s, time.Now().Add(time.Hour))
	wantWaiting(t, s, a[0], 2)
	if e := dlqGet(t, s, a[0]); e.OrderKey != "A" || e.OrderSkip {
		t.Errorf("DLQ entry of an ordered delivery: order key %q skip %v", e.OrderKey, e.OrderSkip)
	}

	if err := s.DLQSetStatus(t.Context(), a[0], storage.DLQInvestigating, "", time.Now()); err != nil {
		t.Fatal(err)
	}
	leaseExactly(t, s, time.Now().Add(time.Hour))
	wantWaiting(t, s, a[0], 2)

	if err := s.DLQRetry(t.Context(), a[0], time.Now()); err != nil {
		t.Fatalf("DLQRetry: %v", err)
	}
	wantWaiting(t, s, a[0], 0)
	j := leaseExactly(t, s, time.Now(), a[0])[0]
	if j.OrderKey != "A" {
		t.Errorf("retried head: order key %q", j.OrderKey)
	}
	leaseExactly(t, s, time.Now())
	delivered(t, s, j)
	delivered(t, s, leaseExactly(t, s, time.Now(), a[1])[0])
	delivered(t, s, leaseExactly(t, s, time.Now(), a[2])[0])
	wantCounts(t, s, storage.Counts{})
}

// testOrderedDeadSettled: resolving or discarding a blocking head's entry
// lets the next job go at once; the entry then blocks nothing.
func testOrderedDeadSettled(t *testing.T, f Factory) {
	for _, st := range []storage.DLQStatus{storage.DLQResolved, storage.DLQDiscarded} {
		t.Run(string(st), func(t *testing.T) {
			s := f.Open(t)
			ids := enqueueOrdered(t, s, "shop", false, "A", "A", "A")["A"]
			died(t, s, leaseExactly(t, s, time.Now(), ids[0])[0])
			wantWaiting(t, s, ids[0], 2)
			if err := s.DLQSetStatus(t.Context(), ids[0], st, "settled", time.Now()); err != nil {
				t.Fatal(err)
			}
			wantWaiting(t, s, ids[0], 0)
			j := leaseExactly(t, s, time.Now(), ids[1])[0]
			if st == storage.DLQResolved {
				// a settled entry retried later goes out on its own
				if err := s.DLQRetry(t.Context(), ids[0], time.Now()); err != nil {
					t.Fatalf("DLQRetry of the resolved entry: %v", err)
				}
				delivered(t, s, leaseExactly(t, s, time.Now(), ids[0])[0])
			}
			leaseExactly(t, s, time.Now())
			delivered(t, s, j)
			leaseExactly(t, s, time.Now(), ids[2])
		})
	}
}

// testOrderedDeadSkip: with on_dead skip a dead head lets the next job go
// at once, and its entry blocks nothing.
func testOrderedDeadSkip(t *testing.T, f Factory) {
	s := f.Open(t)
	ids := enqueueOrdered(t, s, "shop", true, "A", "A")["A"]
	died(t, s, leaseExactly(t, s, time.Now(), ids[0])[0])
	wantWaiting(t, s, ids[0], 0)
	leaseExactly(t, s, time.Now(), ids[1])
	wantCounts(t, s, storage.Counts{InFlight: 1, Dead: 1})
}

// testOrderedFanOut: an event's unordered deliveries are not held back by
// its ordered one; a replay of an ordered delivery is never chained; two
// different order keys on one event are refused.
func testOrderedFanOut(t *testing.T, f Factory) {
	s := f.Open(t)
	var evs []*storage.Event
	for range 2 {
		ev := newEvent(t, "shop", "")
		ev.Deliveries = []storage.Delivery{
			{Destination: "default", Upstream: "http://127.0.0.1:8080/a", OrderKey: "K"},
			{Destination: "crm", Upstream: "http://127.0.0.1:8080/crm"},
		}
		mustEnqueue(t, s, ev, time.Now().Add(time.Hour))
		evs = append(evs, ev)
	}
	crm0, crm1 := storage.DeliveryID(evs[0].ID, "crm"), storage.DeliveryID(evs[1].ID, "crm")
	jobs := leaseExactly(t, s, time.Now(), evs[0].ID, crm0, crm1)
	for _, j := range jobs {
		delivered(t, s, j)
	}
	second := leaseExactly(t, s, time.Now(), evs[1].ID)[0]

	// the first event, delivered, is replayed while its key's chain has a
	// head in flight: the replay goes at once, and leaves the chain alone
	third := orderedEvent(t, "shop", "K", false)
	mustEnqueue(t, s, third, time.Now().Add(time.Hour))
	page, err := s.ListDelivered(t.Context(), storage.ReplayFilter{Source: "shop", Destination: "default"})
	infos := page.Events
	if err != nil || len(infos) != 1 || infos[0].ID != evs[0].ID {
		t.Fatalf("ListDelivered = %+v, %v", infos, err)
	}
	if err := s.Replay(t.Context(), &infos[0], time.Now()); err != nil {
		t.Fatalf("Replay: %v", err)
	}
	r := leaseExactly(t, s, time.Now(), evs[0].ID)[0]
	if !r.Replay {
		t.Errorf("leased %s is not the replay", r.ID)
	}
	delivered(t, s, r)
	leaseExactly(t, s, time.Now())
	delivered(t, s, second)
	delivered(t, s, leaseExactly(t, s, time.Now(), third.ID)[0])

	bad := newEvent(t, "shop", "")
	bad.Deliveries = []storage.Delivery{
		{Destination: "default", Upstream: "http://127.0.0.1:8080/a", OrderKey: "K"},
		{Destination: "crm", Upstream: "http://127.0.0.1:8080/crm", OrderKey: "J"},
	}
	if _, err := s.Enqueue(t.Context(), bad, time.Now().Add(time.Hour)); err == nil {
		t.Error("Enqueue of an event with two order keys succeeded")
	}
	wantCounts(t, s, storage.Counts{})
}

// testOrderedCleanup: a blocking head's DLQ entry removed past dlq
// retention releases its key; a blocking head whose record is past
// retention (its entry kept) is retried as the head.
func testOrderedCleanup(t *testing.T, f Factory) {
	s := f.Open(t)
	ids := enqueueOrdered(t, s, "shop", false, "A", "A", "B", "B")
	a, b := ids["A"], ids["B"]
	for _, j := range leaseExactly(t, s, time.Now(), a[0], b[0]) {
		died(t, s, j)
	}
	later := time.Now().Add(2 * time.Hour)
	// records past retention, entries kept
	if _, err := s.Cleanup(t.Context(), later, time.Hour, 0); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	leaseExactly(t, s, later)
	wantWaiting(t, s, a[0], 1)
	if err := s.DLQRetry(t.Context(), a[0], time.Now()); err != nil {
		t.Fatalf("DLQRetry after retention: %v", err)
	}
	delivered(t, s, leaseExactly(t, s, time.Now(), a[0])[0])
	delivered(t, s, leaseExactly(t, s, time.Now(), a[1])[0])

	// B's entry past dlq retention: as if discarded
	if _, err := s.Cleanup(t.Context(), later, time.Hour, time.Hour); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	if _, err := s.DLQGet(t.Context(), b[0]); !errors.Is(err, storage.ErrDLQNotFound) {
		t.Fatalf("DLQGet after dlq retention: %v", err)
	}
	leaseExactly(t, s, later, b[1])
}

// testOrderedConcurrent: workers lease and deliver three keys' backlogs
// concurrently: at no time is more than one job of a key leased, and each
// key's deliveries go out in the order they were accepted.
func testOrderedConcurrent(t *testing.T, f Factory) {
	s := f.Open(t)
	orderedConcurrent(t, []storage.Store{s}, 3, 50)
}

// RunOrderedNodes checks per-key ordering across nodes sharing one
// store: nodes are stores opened on the same data (a shared backend's
// clients); each runs two workers leasing and delivering the backlogs of
// keys keys of perKey events each, enqueued through the nodes in turn. No
// key has two jobs leased at once, on any node, and each key's deliveries
// go out in the order they were accepted.
func RunOrderedNodes(t *testing.T, nodes []storage.Store, keys, perKey int) {
	orderedConcurrent(t, nodes, keys, perKey)
}

// orderedConcurrent enqueues keys×perKey ordered events (keys interleaved,
// through stores in turn), then runs two workers per store until every
// job is delivered, checking that no key ever has two jobs leased and that
// each key's jobs are leased in acceptance order.
func orderedConcurrent(t *testing.T, stores []storage.Store, keys, perKey int) {
	t.Helper()
	want := map[string][]string{}
	total := 0
	for i := range perKey {
		for k := range keys {
			key := fmt.Sprintf("K%d", k)
			ev := orderedEvent(t, "shop", key, false)
			mustEnqueue(t, stores[(i*keys+k)%len(stores)], ev, time.Now().Add(time.Hour))
			want[key] = append(want[key], ev.ID)
			total++
		}
	}

	var mu sync.Mutex
	leased := map[string]bool{}
	got := map[string][]string{}
	done := 0
	deadline := time.Now().Add(time.Minute)
	var wg sync.WaitGroup
	for _, s := range stores {
		for range 2 {
			wg.Go(func() {
				for time.Now().Before(deadline) {
					mu.Lock()
					finished := done == total
					mu.Unlock()
					if finished {
						return
					}
					jobs, err := s.Lease(t.Context(), time.Now(), 5, time.Minute, nil)
					if err != nil {
						t.Errorf("Lease: %v", err)
						return
					}
					mu.Lock()
					for _, j := range jobs {
						if leased[j.OrderKey] {
							t.Errorf("job %s of key %s leased while another of its key is", j.ID, j.OrderKey)
						}
						leased[j.OrderKey] = true
						got[j.OrderKey] = append(got[j.OrderKey], j.ID)
					}
					mu.Unlock()
					for _, j := range jobs {
						// cleared before Finish: the next job of the key
						// is due once Finish has recorded this one
						mu.Lock()
						leased[j.OrderKey] = false
						mu.Unlock()
						if err := s.Finish(t.Context(), j, storage.Outcome{Result: storage.Delivered, Attempt: attempt(1, time.Now(), 200, "")}); err != nil {
							t.Errorf("Finish(%s): %v", j.ID, err)
							return
						}
						mu.Lock()
						done++
						mu.Unlock()
					}
					if len(jobs) == 0 {
						time.Sleep(time.Millisecond)
					}
				}
			})
		}
	}
	wg.Wait()
	if done != total {
		t.Fatalf("%d of %d deliveries done", done, total)
	}
	for key, ids := range want {
		if !slices.Equal(got[key], ids) {
			t.Errorf("key %s delivered in order %v, want %v", key, got[key], ids)
		}
	}
}

// testOrderedLookup: ordered events are found by every path that finds an
// event, wherever a backend places them (the Redis store places them by
// their order key, not their claim key): Lookup by provider id and by
// internal id, duplicates, DLQGet, DLQRetry, DLQSetStatus, Replay.
func testOrderedLookup(t *testing.T, f Factory) {
	s := f.Open(t)
	const n = 12
	var evs []*storage.Event
	for i := range n {
		ev := orderedEvent(t, "shop", fmt.Sprintf("key-%d", i), false)
		if i%3 == 0 { // no provider id: found by its internal id
			ev.EventID, ev.Dedupe = ev.ID, false
		}
		mustEnqueue(t, s, ev, time.Now().Add(time.Hour))
		evs = append(evs, ev)
	}
	for _, ev := range evs {
		checkInfo(t, lookup(t, s, "shop", ev.EventID), *ev, storage.StatusQueued)
		if !ev.Dedupe {
			continue
		}
		dup := orderedEvent(t, "shop", ev.OrderKey, false)
		dup.EventID = ev.EventID
		if res := enqueue(t, s, dup, time.Now().Add(time.Hour)); !res.Duplicate || res.ID != ev.ID {
			t.Errorf("resend of %s: %+v, want a duplicate", ev.EventID, res)
		}
	}
	jobs := lease(t, s, time.Now(), 1000, time.Minute)
	if len(jobs) != n {
		t.Fatalf("leased %d, want %d", len(jobs), n)
	}
	for i, ev := range evs {
		j := jobByID(t, jobs, ev.ID)
		if i%2 == 0 {
			died(t, s, j)
		} else {
			delivered(t, s, j)
		}
	}
	for i, ev := range evs {
		want := storage.StatusDelivered
		if i%2 == 0 {
			want = storage.StatusDead
			dlqGet(t, s, ev.ID)
		}
		checkInfo(t, lookup(t, s, "shop", ev.EventID), *ev, want)
	}
	for i, ev := range evs {
		switch i % 4 {
		case 0:
			if err := s.DLQRetry(t.Context(), ev.ID, time.Now()); err != nil {
				t.Errorf("DLQRetry(%s): %v", ev.ID, err)
			}
		case 2:
			if err := s.DLQSetStatus(t.Context(), ev.ID, storage.DLQDiscarded, "noise", time.Now()); err != nil {
				t.Errorf("DLQSetStatus(%s): %v", ev.ID, err)
			}
		}
	}
	page, err := s.ListDelivered(t.Context(), storage.ReplayFilter{Source: "shop"})
	infos := page.Events
	if err != nil || len(infos) != n/2 {
		t.Fatalf("ListDelivered = %d, %v; want %d", len(infos), err, n/2)
	}
	for i := range infos {
		if err := s.Replay(t.Context(), &infos[i], time.Now()); err != nil {
			t.Errorf("Replay(%s): %v", infos[i].ID, err)
		}
	}
	var wantIDs []string
	for i, ev := range evs {
		if i%4 != 2 {
			wantIDs = append(wantIDs, ev.ID)
		}
	}
	if got := jobIDs(lease(t, s, time.Now(), 1000, time.Minute)); !sameSet(got, wantIDs) {
		t.Errorf("leased after the retries and replays %v, want %v", got, wantIDs)
	}
}
