package storagetest

import (
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
		for _, p := range listAllEvents(t, s, storage.EventFilter{Tenant: tenant, Limit: 2}) {
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
