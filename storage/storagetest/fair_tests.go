package storagetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

// Fair delivery across tenants: a lane's deliveries wait in their
// tenant's share (storage.LaneOf), and the shares take turns at lease
// time, while the gate and the ordered chains see the lane as one.

// tenantsApart returns n tenant names whose shares (storage.TenantShare)
// all differ.
func tenantsApart(n int) []string {
	var out []string
	used := map[int]bool{}
	for i := 0; len(out) < n; i++ {
		name := fmt.Sprintf("shop-%d.myshopify.com", i)
		if sh := storage.TenantShare(name); !used[sh] {
			used[sh] = true
			out = append(out, name)
		}
	}
	return out
}

// testFairTenants: behind a backlog of one tenant's events, another
// tenant's event is in the first lease, on the default destination and
// on another; the lane's cap, skip and pace hold for its shares together;
// an order key's events keep their order across tenants.
func testFairTenants(t *testing.T, f Factory) {
	s := f.Open(t)
	names := tenantsApart(3)
	noisy, quiet, third := names[0], names[1], names[2]
	until := time.Now().Add(time.Hour)
	enqueueTenant := func(tenant, dest string, k int) []*storage.Event {
		var evs []*storage.Event
		for range k {
			ev := newEvent(t, "shop", "")
			ev.Tenant = tenant
			ev.Deliveries = []storage.Delivery{{Destination: dest, Upstream: "http://127.0.0.1:8080/" + dest}}
			mustEnqueue(t, s, ev, until)
			evs = append(evs, ev)
		}
		return evs
	}
	const backlog = 120
	enqueueTenant(noisy, "", backlog)
	enqueueTenant(noisy, "crm", backlog)
	time.Sleep(2 * time.Millisecond) // the quiet tenants' events come after
	late := append(enqueueTenant(quiet, "", 1), enqueueTenant(third, "crm", 1)...)
	now := time.Now().Add(time.Second)

	// a gate that caps the default lane to one job a lease and skips the
	// other: its shares together, not one each
	capped := &storage.Gate{Cap: map[string]int{"shop": 1}, Skip: map[string]bool{"shop/crm": true}}
	jobs, err := s.Lease(t.Context(), now, 8, time.Minute, capped)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].Destination != "" || jobs[0].Tenant != noisy {
		t.Fatalf("Lease under a cap of 1 and a skip = %d jobs %v; want the oldest of the capped lane only", len(jobs), tenantsOf(jobs))
	}

	// four at a time: the quiet tenants' events go within the first few
	// leases, not behind the backlog (the embedded store takes them in the
	// first; Redis, whose leases peek two partitions at a time while every
	// partition holds a backlog, within partitions/2)
	const fewLeases = 1 + 16/2
	pending := map[string]*storage.Event{}
	for _, ev := range late {
		pending[storage.DeliveryID(ev.ID, ev.Deliveries[0].Destination)] = ev
	}
	var leased []*storage.Job
	for i := 0; i < fewLeases && len(pending) > 0; i++ {
		jobs, err := s.Lease(t.Context(), now, 4, time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			delete(pending, j.ID)
		}
		leased = append(leased, jobs...)
	}
	for _, ev := range pending {
		t.Errorf("the event of tenant %s (destination %q) is not in the first %d leases of 4 behind a backlog of %d: %v",
			ev.Tenant, ev.Deliveries[0].Destination, fewLeases, 2*backlog, tenantsOf(leased))
	}

	// an order key's events keep their order, whatever their tenants
	a := orderedEvent(t, "ordered", "K", false)
	a.Tenant = noisy
	mustEnqueue(t, s, a, until)
	b := orderedEvent(t, "ordered", "K", false)
	b.Tenant = quiet
	mustEnqueue(t, s, b, until)
	gate := &storage.Gate{Skip: map[string]bool{"shop": true, "shop/crm": true}}
	jobs, err = s.Lease(t.Context(), now, 10, time.Minute, gate)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].ID != a.ID {
		t.Fatalf("ordered events of two tenants: leased %v, want only the first, %s", jobIDs(jobs), a.ID)
	}
	delivered(t, s, jobs[0])
	jobs, err = s.Lease(t.Context(), now.Add(time.Second), 10, time.Minute, gate)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].ID != b.ID {
		t.Fatalf("after the first ordered event: leased %v, want %s", jobIDs(jobs), b.ID)
	}

	// counts by lane: every job of a lane is counted, whatever its share
	byLane, err := s.QueueByLane(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if c := storage.CountsOfDestination(byLane, "shop", "crm"); c.Queued+c.InFlight != backlog+1 {
		t.Errorf("counts of shop/crm: %+v, want %d jobs", c, backlog+1)
	}
	if c := storage.ByBaseLane(byLane)["shop"]; c.Queued+c.InFlight != backlog+1 {
		t.Errorf("counts of shop: %+v, want %d jobs", c, backlog+1)
	}
	if len(byLane) <= len(storage.ByBaseLane(byLane)) {
		t.Errorf("QueueByLane %v: no tenant share of its own", byLane)
	}
}

func tenantsOf(jobs []*storage.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.Destination + ":" + j.Tenant
	}
	return out
}

// tenantsSharing returns two tenant names of one share
// (storage.TenantShare).
func tenantsSharing() (string, string) {
	first := map[int]string{}
	for i := 0; ; i++ {
		name := fmt.Sprintf("acct-%d", i)
		sh := storage.TenantShare(name)
		if prev, ok := first[sh]; ok {
			return prev, name
		}
		first[sh] = name
	}
}

// testTenantApart: a job released apart (storage.Outcome.Apart) waits in
// its tenant's own lane from then on, as an event enqueued Apart does:
// the gate holds that lane by name without holding back the other tenant
// of its share, the counts see it (folded into its lane), it survives
// reopening, and once no longer skipped it is leased and delivered; jobs
// apart that died and are retried from the DLQ are apart again.
func testTenantApart(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := t.Context()
	held, other := tenantsSharing()
	until := time.Now().Add(time.Hour)
	enqueue := func(tenant string, apart bool) *storage.Event {
		ev := newEvent(t, "shop", "")
		ev.Tenant, ev.Apart = tenant, apart
		mustEnqueue(t, s, ev, until)
		time.Sleep(2 * time.Millisecond) // in this order
		return ev
	}
	first := enqueue(held, false)
	second := enqueue(held, true) // held from the start
	third := enqueue(other, false)
	now := time.Now().Add(time.Second)
	jobs, err := s.Lease(ctx, now, 1, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].ID != first.ID {
		t.Fatalf("first lease = %v, want %s", jobIDs(jobs), first.ID)
	}
	if err := s.Finish(ctx, jobs[0], storage.Outcome{Result: storage.Release, Apart: true}); err != nil {
		t.Fatal(err)
	}
	if f.Reopen != nil {
		s = f.Reopen(t, s)
	}
	lane := storage.TenantLane("shop", held)
	gate := &storage.Gate{Skip: map[string]bool{lane: true}}
	jobs, err = s.Lease(ctx, now, 10, time.Minute, gate)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].ID != third.ID {
		t.Fatalf("lease with %s's lane skipped = %v, want only %s's %s", held, tenantsOf(jobs), other, third.ID)
	}
	delivered(t, s, jobs[0])
	if due, ok, err := s.NextDue(ctx, gate); err != nil || ok {
		t.Errorf("NextDue with the tenant's lane skipped = %v, %v, %v; want none", due, ok, err)
	}
	byLane, err := s.QueueByLane(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c := byLane[lane]; c.Queued != 2 {
		t.Errorf("counts of %s = %+v, want 2 queued (%v)", lane, c, byLane)
	}
	if c := storage.ByBaseLane(byLane)["shop"]; c.Queued+c.InFlight != 2 {
		t.Errorf("counts of shop = %+v, want 2 jobs", c)
	}
	// no longer skipped: both go (the released one due since its
	// release, after the other), still apart
	jobs, err = s.Lease(ctx, now.Add(time.Second), 10, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 || jobs[0].ID != second.ID || jobs[1].ID != first.ID || !jobs[0].Apart || !jobs[1].Apart {
		t.Fatalf("lease without the skip = %v, want %s then %s, apart", jobIDs(jobs), second.ID, first.ID)
	}

	// both die (one enqueued apart, one moved apart); retried from the
	// DLQ, each waits in its tenant's own lane again
	for _, j := range jobs {
		if err := s.Finish(ctx, j, storage.Outcome{Result: storage.Dead, Error: "410",
			Attempt: &storage.Attempt{Status: 410, Error: "410"}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, ev := range []*storage.Event{second, first} {
		if err := s.DLQRetry(ctx, ev.ID, now); err != nil {
			t.Fatal(err)
		}
	}
	if jobs, err = s.Lease(ctx, now.Add(2*time.Second), 10, time.Minute, gate); err != nil || len(jobs) != 0 {
		t.Fatalf("lease of the retried jobs with their tenant's lane skipped = %v, %v; want none", jobIDs(jobs), err)
	}
	jobs, err = s.Lease(ctx, now.Add(2*time.Second), 10, time.Minute, nil)
	if err != nil || len(jobs) != 2 || !jobs[0].Apart || !jobs[1].Apart {
		t.Fatalf("lease of the retried jobs = %v, %v; want %s and %s, apart", jobIDs(jobs), err, second.ID, first.ID)
	}
	for _, j := range jobs {
		delivered(t, s, j)
	}
	if info, err := s.Lookup(ctx, "shop", first.EventID); err != nil || info.Status != storage.StatusDelivered {
		t.Errorf("Lookup of the job moved apart = %+v, %v; want delivered", info, err)
	}
	wantCounts(t, s, storage.Counts{})
}
