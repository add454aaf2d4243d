package storagetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

// testListByTenant: the DLQ list, the replay listing and the event
// browser select one tenant's events, exactly, whatever else they hold
// (a tenant is never a prefix match, an event of no tenant is no
// tenant's), and a DLQ entry keeps its tenant through its status changes.
func testListByTenant(t *testing.T, f Factory) {
	s := f.Open(t)
	tenants := []string{"shop-a.myshopify.com", "shop-b.myshopify.com", "", "shop-a"}
	var evs []*storage.Event
	for i := range 16 {
		ev := newEvent(t, "shopify", "")
		ev.Tenant = tenants[i%len(tenants)]
		mustEnqueue(t, s, ev, time.Now().Add(time.Hour))
		evs = append(evs, ev)
		time.Sleep(2 * time.Millisecond) // distinct times at millisecond precision
	}
	byID := map[string]*storage.Job{}
	for _, j := range lease(t, s, time.Now(), 100, time.Minute) {
		byID[j.ID] = j
	}
	// of each tenant: one left queued (the last), the rest dead and
	// delivered in turn
	want := map[string]struct{ dead, delivered, all []string }{}
	for i, ev := range evs {
		w := want[ev.Tenant]
		w.all = append(w.all, ev.ID)
		switch {
		case i >= 12:
			finish(t, s, byID[ev.ID], storage.Outcome{Result: storage.Retry, Attempt: attempt(1, time.Now(), 503, ""), Due: time.Now().Add(time.Hour)})
		case i%8 < 4:
			finish(t, s, byID[ev.ID], storage.Outcome{Result: storage.Dead, Attempt: attempt(1, time.Now(), 500, ""), Error: "boom"})
			w.dead = append(w.dead, ev.ID)
		default:
			finish(t, s, byID[ev.ID], storage.Outcome{Result: storage.Delivered, Attempt: attempt(1, time.Now(), 200, "")})
			w.delivered = append(w.delivered, ev.ID)
		}
		want[ev.Tenant] = w
		time.Sleep(2 * time.Millisecond)
	}
	for _, tenant := range tenants[:2] {
		if len(want[tenant].dead) == 0 || len(want[tenant].delivered) == 0 {
			t.Fatalf("the test's own mix: tenant %q has no dead or no delivered event", tenant)
		}
	}
	for _, tenant := range []string{"shop-a.myshopify.com", "shop-b.myshopify.com", "shop-a", "shop"} {
		w := want[tenant]
		got := dlqIDs(t, s, storage.DLQFilter{Tenant: tenant, Limit: 2})
		if !sameSet(got, w.dead) {
			t.Errorf("DLQList(tenant %q) = %v, want %v", tenant, got, w.dead)
		}
		if got := listDelivered(t, s, storage.ReplayFilter{Tenant: tenant, Limit: 2}); !sameSet(got, w.delivered) {
			t.Errorf("ListDelivered(tenant %q) = %v, want %v", tenant, got, w.delivered)
		}
		var listed []string
		for _, p := range ListAllEvents(t, s, storage.EventFilter{Tenant: tenant, Limit: 2}) {
			for _, info := range p.Events {
				if info.Tenant != tenant {
					t.Errorf("ListEvents(tenant %q) listed %s of tenant %q", tenant, info.ID, info.Tenant)
				}
				listed = append(listed, info.ID)
			}
		}
		if !sameSet(listed, w.all) {
			t.Errorf("ListEvents(tenant %q) = %v, want %v", tenant, listed, w.all)
		}
	}
	// with the other filters, and after a status change
	dead := want["shop-b.myshopify.com"].dead
	if err := s.DLQSetStatus(t.Context(), dead[0], storage.DLQResolved, "", time.Now()); err != nil {
		t.Fatal(err)
	}
	if got := dlqIDs(t, s, storage.DLQFilter{Tenant: "shop-b.myshopify.com", Status: storage.DLQResolved}); !slices.Equal(got, dead[:1]) {
		t.Errorf("DLQList(tenant, resolved) = %v, want %v", got, dead[:1])
	}
	if got := dlqIDs(t, s, storage.DLQFilter{Tenant: "shop-b.myshopify.com", Source: "other"}); len(got) != 0 {
		t.Errorf("DLQList(tenant, another source) = %v, want none", got)
	}
}

// testEraseBatch: EraseBatch erases each event it names (by internal id)
// as Erase does, answers a zero result for one of which nothing is stored
// or of another source, and leaves the others alone.
func testEraseBatch(t *testing.T, f Factory) {
	s := f.Open(t)
	until := time.Now().Add(time.Hour)
	fan := fanOutEvent(t, "shop", "evt_batch_fan")
	mustEnqueue(t, s, fan, until)
	ids := deliveryIDs(fan)
	jobs := leaseExactly(t, s, time.Now(), ids...)
	died(t, s, jobByID(t, jobs, ids[0]))
	delivered(t, s, jobByID(t, jobs, ids[1]))
	plain := newEvent(t, "shop", "evt_batch_plain")
	mustEnqueue(t, s, plain, until)
	other := newEvent(t, "other", "evt_batch_other")
	mustEnqueue(t, s, other, until)

	res, err := s.EraseBatch(t.Context(), "shop", []string{plain.ID, "no-such-event", fan.ID, other.ID}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 4 || res[0].ID != plain.ID || res[0].Deliveries != 1 || res[1].ID != "" ||
		res[2].ID != fan.ID || res[2].Deliveries != len(ids) || res[2].DLQEntries != 1 || res[3].ID != "" {
		t.Fatalf("EraseBatch = %+v", res)
	}
	if res[0].DedupeUntil.IsZero() {
		t.Errorf("EraseBatch kept no claim: %+v", res[0])
	}
	wantErased(t, s, plain, res[0].DedupeUntil)
	wantErased(t, s, fan, res[2].DedupeUntil)
	if info := lookup(t, s, "other", "evt_batch_other"); info.ID != other.ID {
		t.Errorf("the other source's event: %+v", info)
	}

	// an id names the event with that internal id, never one whose
	// provider id is the same string (a sender that knows an internal id)
	named := newEvent(t, "shop", "evt_batch_named")
	mustEnqueue(t, s, named, until)
	mimic := newEvent(t, "shop", named.ID)
	mustEnqueue(t, s, mimic, until)
	res, err = s.EraseBatch(t.Context(), "shop", []string{named.ID}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].ID != named.ID {
		t.Fatalf("EraseBatch of an internal id that is another event's provider id = %+v; want %s erased", res, named.ID)
	}
	wantErased(t, s, named, res[0].DedupeUntil)
	if info := lookup(t, s, "shop", named.ID); info.ID != mimic.ID || info.Status == storage.StatusErased {
		t.Errorf("the event whose provider id is the erased one's internal id: %+v; want %s kept", info, mimic.ID)
	}
}

// testEraseTenant: EraseTenant erases every event of one tenant of a
// source (queued, dead, delivered), no other tenant's or source's, saves
// its progress, resumes an erasure cut short where it stopped, and an
// erasure started again once done takes the events that came since.
func testEraseTenant(t *testing.T, f Factory) {
	s := f.Open(t)
	until := time.Now().Add(time.Hour)
	var mine, others []*storage.Event
	for i := range 24 {
		source, tenant := "shop", "gone.myshopify.com"
		switch i % 4 {
		case 1:
			tenant = "kept.myshopify.com"
		case 2:
			tenant = ""
		case 3:
			if i%8 == 3 {
				source = "other" // the same tenant of another source
			}
		}
		ev := newEvent(t, source, "")
		ev.Tenant = tenant
		mustEnqueue(t, s, ev, until)
		if source == "shop" && tenant == "gone.myshopify.com" {
			mine = append(mine, ev)
		} else {
			others = append(others, ev)
		}
		time.Sleep(time.Millisecond)
	}
	// some of each dead or delivered
	for i, j := range lease(t, s, time.Now(), 100, time.Minute) {
		switch i % 3 {
		case 0:
			died(t, s, j)
		case 1:
			delivered(t, s, j)
		default:
			finish(t, s, j, storage.Outcome{Result: storage.Retry, Attempt: attempt(1, time.Now(), 503, ""), Due: time.Now()})
		}
	}

	// cut short after its first batch
	ctx, cancel := context.WithCancel(t.Context())
	p, err := storage.EraseTenant(ctx, s, "shop", "gone.myshopify.com", storage.TenantEraseOptions{Batch: 3}, nil,
		func(storage.TenantErasure) { cancel() })
	cancel()
	if !errors.Is(err, context.Canceled) || p.Erased != 3 || p.Cursor == "" {
		t.Fatalf("an erasure cut short: %+v, %v; want 3 erased, a cursor, context.Canceled", p, err)
	}
	saved, err := s.TenantErasure(t.Context(), "shop", "gone.myshopify.com")
	if err != nil || saved.State != storage.TenantErasureFailed || saved.Error == "" || saved.Erased != 3 || saved.Cursor != p.Cursor {
		t.Fatalf("saved progress %+v, %v; want failed (interrupted), 3 erased, its cursor", saved, err)
	}
	// resumed: the rest, each event reported once, the walk going on at
	// the saved cursor (erased events are not listed again, so only the
	// listing's filter tells a resumed walk from one started over)
	seen := map[string]bool{}
	walk := &recordingBrowser{TenantEraseStore: s}
	p, err = storage.EraseTenant(t.Context(), walk, "shop", "gone.myshopify.com", storage.TenantEraseOptions{Batch: 3},
		func(info *storage.EventInfo, res storage.EraseResult) {
			if seen[info.ID] || info.Tenant != "gone.myshopify.com" || info.Source != "shop" || res.ID != info.ID {
				t.Errorf("erased %s (%s/%s) as %+v", info.ID, info.Source, info.Tenant, res)
			}
			seen[info.ID] = true
		}, nil)
	if err != nil || p.State != storage.TenantErasureDone || p.Erased != len(mine) || p.FinishedAt.IsZero() || !p.StartedAt.Equal(saved.StartedAt) {
		t.Fatalf("resumed erasure: %+v, %v; want done, %d erased, started when the first", p, err, len(mine))
	}
	if len(seen) != len(mine)-3 {
		t.Errorf("the resumed erasure erased %d events, want %d", len(seen), len(mine)-3)
	}
	if len(walk.filters) == 0 || walk.filters[0].Cursor != saved.Cursor || !walk.filters[0].Until.Equal(saved.Until) {
		t.Errorf("the resumed walk listed first %+v; want the saved cursor %q and cutoff %v", walk.filters, saved.Cursor, saved.Until)
	}
	for _, ev := range mine {
		wantErased(t, s, ev, until)
	}
	for _, ev := range others {
		if info := lookup(t, s, ev.Source, ev.EventID); info.ID != ev.ID {
			t.Errorf("event %s of %s/%q: %+v", ev.ID, ev.Source, ev.Tenant, info)
		}
	}
	if saved, err := s.TenantErasure(t.Context(), "shop", "gone.myshopify.com"); err != nil || saved.State != storage.TenantErasureDone || saved.Erased != len(mine) {
		t.Errorf("saved progress %+v, %v; want done, %d erased", saved, err, len(mine))
	}
	if _, err := s.TenantErasure(t.Context(), "shop", "kept.myshopify.com"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("the progress of an erasure never started: %v, want ErrNotFound", err)
	}

	// an event that came after: a new erasure (the last one is done) takes it
	late := newEvent(t, "shop", "")
	late.Tenant = "gone.myshopify.com"
	mustEnqueue(t, s, late, until)
	p, err = storage.EraseTenant(t.Context(), s, "shop", "gone.myshopify.com", storage.TenantEraseOptions{}, nil, nil)
	if err != nil || p.State != storage.TenantErasureDone || p.Erased != 1 {
		t.Fatalf("a second erasure: %+v, %v; want done, 1 erased", p, err)
	}
	wantErased(t, s, late, until)
}

// recordingBrowser records the filters of the listings a tenant's erasure
// asks for.
type recordingBrowser struct {
	storage.TenantEraseStore
	filters []storage.EventFilter
}

func (r *recordingBrowser) ListEvents(ctx context.Context, f storage.EventFilter) (storage.EventPage, error) {
	r.filters = append(r.filters, f)
	return r.TenantEraseStore.ListEvents(ctx, f)
}

// testTenantErasureLive: an erasure saved as running and saved recently
// is live (on another node): it is not started a second time; one that
// stopped saving (its node killed) reads as failed and is resumed.
func testTenantErasureLive(t *testing.T, f Factory) {
	s := f.Open(t)
	now := time.Now()
	ev := newEvent(t, "shop", "")
	ev.Tenant = "busy"
	mustEnqueue(t, s, ev, now.Add(time.Hour))
	live := storage.TenantErasure{Source: "shop", Tenant: "busy", State: storage.TenantErasureRunning, Until: now.Add(time.Second),
		StartedAt: now.Add(-time.Minute), UpdatedAt: now.Add(-time.Second)}
	if err := s.SaveTenantErasure(t.Context(), live); err != nil {
		t.Fatal(err)
	}
	p, started, err := storage.StartTenantErasure(t.Context(), s, "shop", "busy", now)
	if err != nil || started || p.State != storage.TenantErasureRunning || !p.UpdatedAt.Equal(live.UpdatedAt) {
		t.Fatalf("StartTenantErasure of a live erasure = %+v, %v, %v; want it as it is, not started", p, started, err)
	}
	if _, err := storage.EraseTenant(t.Context(), s, "shop", "busy", storage.TenantEraseOptions{}, nil, nil); !errors.Is(err, storage.ErrTenantErasureRunning) {
		t.Fatalf("EraseTenant of a live erasure: %v, want ErrTenantErasureRunning", err)
	}
	if info := lookup(t, s, "shop", ev.EventID); info.ID != ev.ID {
		t.Fatalf("the event of a live erasure elsewhere was erased here: %+v", info)
	}

	later := now.Add(storage.TenantErasureStale + time.Second)
	if got := live.Settled(later); got.State != storage.TenantErasureFailed || got.Error == "" {
		t.Errorf("a stale running erasure reads %+v, want failed, with why", got)
	}
	if got := live.Settled(now); got.State != storage.TenantErasureRunning || got.Error != "" {
		t.Errorf("a live erasure reads %+v, want running", got)
	}
	p, started, err = storage.StartTenantErasure(t.Context(), s, "shop", "busy", later)
	if err != nil || !started || p.State != storage.TenantErasureRunning || !p.StartedAt.Equal(live.StartedAt) || !p.UpdatedAt.Equal(later) {
		t.Fatalf("StartTenantErasure of a stale erasure = %+v, %v, %v; want it resumed", p, started, err)
	}
	p, err = storage.RunTenantErasure(t.Context(), s, p, storage.TenantEraseOptions{}, nil, nil)
	if err != nil || p.State != storage.TenantErasureDone || p.Erased != 1 {
		t.Fatalf("the resumed erasure: %+v, %v; want done, 1 erased", p, err)
	}
}
