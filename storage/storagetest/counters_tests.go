package storagetest

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

// recounterOf is the storage.Recounter under s (a SealingStore's or a
// Faulty's backend), nil if the backend is none.
func recounterOf(s storage.Store) storage.Recounter {
	for {
		switch v := s.(type) {
		case *storage.SealingStore:
			s = v.Unwrap()
		case *Faulty:
			s = v.Inner()
		case storage.Recounter:
			return v
		default:
			return nil
		}
	}
}

// WantRecounted checks that the counters-based answers of s (QueueByLane,
// DLQCounts, Counts) are what reading every job and entry finds
// (storage.Recounter), after step: for a backend's own tests of the
// write paths the suite cannot reach (a poison record, a crash). It
// returns the recount.
func WantRecounted(t testing.TB, s storage.Store, step string) (map[string]storage.Counts, map[string]map[storage.DLQStatus]int) {
	t.Helper()
	r := recounterOf(s)
	if r == nil {
		t.Fatalf("%T (under %T) does not implement storage.Recounter", Unseal(s), s)
	}
	ctx := t.Context()
	wantLanes, wantDLQ, err := r.Recount(ctx)
	if err != nil {
		t.Fatalf("%s: Recount: %v", step, err)
	}
	lanes, err := s.QueueByLane(ctx)
	if err != nil {
		t.Fatalf("%s: QueueByLane: %v", step, err)
	}
	if !reflect.DeepEqual(lanes, wantLanes) {
		t.Errorf("%s: QueueByLane = %v, recounted %v", step, lanes, wantLanes)
	}
	dlq, err := s.DLQCounts(ctx)
	if err != nil {
		t.Fatalf("%s: DLQCounts: %v", step, err)
	}
	if !reflect.DeepEqual(dlq, wantDLQ) {
		t.Errorf("%s: DLQCounts = %v, recounted %v", step, dlq, wantDLQ)
	}
	want := storage.SumCounts(wantLanes, wantDLQ)
	got, err := s.Counts(ctx)
	if err != nil {
		t.Fatalf("%s: Counts: %v", step, err)
	}
	if got != want {
		t.Errorf("%s: Counts = %+v, recounted %+v", step, got, want)
	}
	return wantLanes, wantDLQ
}

// testCountersExact drives every write path that changes a count
// (enqueue, fan-out, ordered chains, lease, lease expiry and re-lease,
// finish delivered / retry / release / dead, the DLQ's retry, resolve,
// discard and investigate, replay, erase, cleanup, rekey) and after each
// step compares the counts the store maintains with a recount
// (WantRecounted).
func testCountersExact(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := t.Context()
	step := func(name string) { t.Helper(); WantRecounted(t, s, name) }
	until := time.Now().Add(time.Hour)
	step("empty")

	var plain []*storage.Event
	for _, src := range []string{"stripe", "stripe", "stripe", "stripe", "github", "github"} {
		ev := newEvent(t, src, "")
		mustEnqueue(t, s, ev, until)
		plain = append(plain, ev)
	}
	step("enqueue")
	fan := newEvent(t, "shop", "")
	fan.Deliveries = []storage.Delivery{
		{Destination: "default", Upstream: "http://127.0.0.1:8080/a"},
		{Destination: "crm", Upstream: "http://127.0.0.1:8080/crm"},
		{Destination: "erp", Upstream: "http://127.0.0.1:8080/erp"},
	}
	mustEnqueue(t, s, fan, until)
	step("enqueue fan-out")
	chain := enqueueOrdered(t, s, "orders", false, "K", "K", "K", "L")["K"]
	step("enqueue ordered")
	if r := enqueue(t, s, newEvent(t, "stripe", plain[0].EventID), until); !r.Duplicate {
		t.Fatalf("duplicate enqueued: %+v", r)
	}
	step("duplicate")

	// lease everything due (fan-out records expand), a minute's lease
	now := time.Now()
	jobs := lease(t, s, now, 1000, time.Minute)
	step("lease")
	byID := map[string]*storage.Job{}
	for _, j := range jobs {
		byID[j.ID] = j
	}
	for _, id := range []string{plain[0].ID, plain[1].ID, plain[2].ID, plain[3].ID, plain[4].ID, chain[0]} {
		if byID[id] == nil {
			t.Fatalf("job %s not leased (leased %v)", id, jobIDs(jobs))
		}
	}
	finish(t, s, byID[plain[0].ID], storage.Outcome{Result: storage.Delivered, Attempt: attempt(1, now, 200, "")})
	step("finish delivered")
	finish(t, s, byID[plain[1].ID], storage.Outcome{Result: storage.Retry, Attempt: attempt(1, now, 500, ""), Due: now.Add(time.Hour)})
	step("finish retry")
	finish(t, s, byID[plain[2].ID], storage.Outcome{Result: storage.Release})
	step("finish release")
	finish(t, s, byID[plain[3].ID], storage.Outcome{Result: storage.Dead, Attempt: attempt(1, now, 400, ""), Error: "bad"})
	step("finish dead")
	died(t, s, byID[chain[0]])
	step("ordered head dead (blocks its key)")
	for _, id := range []string{fan.ID, storage.DeliveryID(fan.ID, "crm"), storage.DeliveryID(fan.ID, "erp")} {
		if byID[id] == nil {
			t.Fatalf("fan-out delivery %s not leased (leased %v)", id, jobIDs(jobs))
		}
	}
	delivered(t, s, byID[fan.ID])
	died(t, s, byID[storage.DeliveryID(fan.ID, "crm")])
	step("fan-out delivered and dead")

	// leases expire; the jobs are leased again by another worker
	later := now.Add(2 * time.Minute)
	again := lease(t, s, later, 1000, time.Minute)
	if len(again) == 0 {
		t.Fatal("no job leased again after its lease expired")
	}
	step("lease again after expiry")
	for _, j := range again {
		finish(t, s, j, storage.Outcome{Result: storage.Release, Due: later})
	}
	step("release the re-leased")

	// the DLQ
	if err := s.DLQSetStatus(ctx, plain[3].ID, storage.DLQInvestigating, "", time.Now()); err != nil {
		t.Fatal(err)
	}
	step("dlq investigate")
	if err := s.DLQRetry(ctx, plain[3].ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	step("dlq retry")
	if err := s.DLQSetStatus(ctx, storage.DeliveryID(fan.ID, "crm"), storage.DLQDiscarded, "noise", time.Now()); err != nil {
		t.Fatal(err)
	}
	step("dlq discard")
	if err := s.DLQSetStatus(ctx, chain[0], storage.DLQResolved, "fixed by hand", time.Now()); err != nil {
		t.Fatal(err)
	}
	step("dlq resolve (releases its chain)")

	// replay the delivered event
	info := lookup(t, s, plain[0].Source, plain[0].EventID)
	if err := s.Replay(ctx, info, time.Now()); err != nil {
		t.Fatalf("Replay: %v", err)
	}
	step("replay")

	// erase a queued event, a leased one and a dead one
	if _, err := s.Erase(ctx, plain[5].Source, plain[5].EventID, time.Now()); err != nil {
		t.Fatalf("Erase queued: %v", err)
	}
	step("erase queued")
	held := lease(t, s, time.Now().Add(3*time.Minute), 1, time.Minute)
	if len(held) != 1 {
		t.Fatalf("leased %d jobs, want 1", len(held))
	}
	step("lease one")
	if src, eid := eventOf(t, s, held[0]); src != "" {
		if _, err := s.Erase(ctx, src, eid, time.Now()); err != nil {
			t.Fatalf("Erase leased: %v", err)
		}
		step("erase leased")
	}
	if _, err := s.Erase(ctx, fan.Source, fan.EventID, time.Now()); err != nil {
		t.Fatalf("Erase fan-out with a DLQ entry: %v", err)
	}
	step("erase fan-out (delivered, dead, leased)")

	// a dead event past DLQ retention, and finished records past theirs
	dead := newEvent(t, "github", "")
	mustEnqueue(t, s, dead, until)
	finish(t, s, leaseOneOf(t, s, dead.ID), storage.Outcome{Result: storage.Dead, Attempt: attempt(1, time.Now(), 400, ""), Error: "bad"})
	step("dead")
	if _, err := s.Cleanup(ctx, time.Now().Add(48*time.Hour), time.Hour, time.Hour); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	step("cleanup")

	if ss, ok := s.(*storage.SealingStore); ok {
		if _, err := ss.Rekey(ctx, storage.RekeyOptions{Batch: 2}, nil); err != nil {
			t.Fatalf("Rekey: %v", err)
		}
		step("rekey")
	}

	// drain what is left
	for range 10 {
		js := lease(t, s, time.Now().Add(time.Hour), 1000, time.Minute)
		if len(js) == 0 {
			break
		}
		for _, j := range js {
			delivered(t, s, j)
		}
		step("drain")
	}
	if f.Reopen != nil {
		s = f.Reopen(t, s)
		step("reopen")
	}
}

// eventOf is the source and provider event id of job's event ("" when its
// event id is not known to Lookup).
func eventOf(t testing.TB, s storage.Store, job *storage.Job) (string, string) {
	t.Helper()
	if _, err := s.Lookup(t.Context(), job.Source, job.EventID); err != nil {
		return "", ""
	}
	return job.Source, job.EventID
}

// testCountersRebuilt: a store written by a version without counters
// (Factory.Uncounted), holding queued, leased, chained, fanned-out and
// dead jobs, answers what it answered before, exactly, once opened by
// this one; and keeps counting from there.
func testCountersRebuilt(t *testing.T, f Factory) {
	s := f.Open(t)
	if f.Uncounted == nil {
		if recounterOf(s) != nil {
			t.Fatal("Factory.Uncounted is nil for a backend keeping counters")
		}
		return
	}
	ctx := t.Context()
	until := time.Now().Add(time.Hour)
	var evs []*storage.Event
	for _, src := range []string{"stripe", "stripe", "stripe", "github"} {
		ev := newEvent(t, src, "")
		mustEnqueue(t, s, ev, until)
		evs = append(evs, ev)
	}
	enqueueOrdered(t, s, "orders", false, "K", "K", "K")
	jobs := lease(t, s, time.Now(), 3, 10*time.Minute)
	if len(jobs) != 3 {
		t.Fatalf("leased %d jobs, want 3", len(jobs))
	}
	died(t, s, jobs[0])
	fan := newEvent(t, "shop", "")
	fan.Deliveries = []storage.Delivery{
		{Destination: "default", Upstream: "http://127.0.0.1:8080/a"},
		{Destination: "crm", Upstream: "http://127.0.0.1:8080/crm"},
	}
	mustEnqueue(t, s, fan, until)
	WantRecounted(t, s, "before")
	lanes, err := s.QueueByLane(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dlq, err := s.DLQCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}

	s = f.Uncounted(t, s)
	WantRecounted(t, s, "rebuilt")
	if f.ProcessLeases {
		// the restart ended the leases: those jobs are queued again
		lanes = unleased(lanes)
	}
	if got, err := s.QueueByLane(ctx); err != nil || !reflect.DeepEqual(got, lanes) {
		t.Errorf("QueueByLane after the upgrade = %v, %v; want %v", got, err, lanes)
	}
	if got, err := s.DLQCounts(ctx); err != nil || !reflect.DeepEqual(got, dlq) {
		t.Errorf("DLQCounts after the upgrade = %v, %v; want %v", got, err, dlq)
	}
	// the jobs leased before the upgrade are finished after it (leased
	// again first where the restart ended their leases)
	if f.ProcessLeases {
		var kept []*storage.Job
		for _, j := range lease(t, s, time.Now(), 1000, time.Minute) {
			if slices.ContainsFunc(jobs[1:], func(o *storage.Job) bool { return o.ID == j.ID }) {
				kept = append(kept, j)
			} else {
				finish(t, s, j, storage.Outcome{Result: storage.Release})
			}
		}
		if len(kept) != 2 {
			t.Fatalf("leased again %d of the 2 jobs leased before the upgrade", len(kept))
		}
		jobs = append([]*storage.Job{nil}, kept...)
	}
	for _, j := range jobs[1:] {
		died(t, s, j)
		WantRecounted(t, s, "finished after the upgrade")
	}
	for _, j := range lease(t, s, time.Now(), 1000, time.Minute) {
		delivered(t, s, j)
	}
	WantRecounted(t, s, "drained after the upgrade")
}

// unleased is lanes with their jobs in flight queued again.
func unleased(lanes map[string]storage.Counts) map[string]storage.Counts {
	out := make(map[string]storage.Counts, len(lanes))
	for lane, c := range lanes {
		c.Queued, c.InFlight = c.Queued+c.InFlight, 0
		out[lane] = c
	}
	return out
}
