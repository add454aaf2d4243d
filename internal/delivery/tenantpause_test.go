package delivery

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

// tenantHolds is Config.Holds pausing the tenants in its set.
type tenantHolds struct {
	mu     sync.Mutex
	paused map[string]bool // source#tenant
}

func (h *tenantHolds) set(source, tenant string, paused bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.paused[storage.TenantPauseKey(source, tenant)] = paused
}

func (*tenantHolds) Paused(string, string) bool     { return false }
func (*tenantHolds) CatchingUp(string, string) bool { return false }
func (h *tenantHolds) TenantPaused(source, tenant string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.paused[storage.TenantPauseKey(source, tenant)]
}
func (h *tenantHolds) PausedTenants(source string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for k, on := range h.paused {
		if src, tenant, _ := strings.Cut(k, "#"); on && src == source {
			out = append(out, tenant)
		}
	}
	return out
}

// sharingTenants returns two tenants of one share (storage.TenantShare).
func sharingTenants() (string, string) {
	first := map[int]string{}
	for i := 0; ; i++ {
		name := fmt.Sprintf("shop-%d", i)
		if prev, ok := first[storage.TenantShare(name)]; ok {
			return prev, name
		}
		first[storage.TenantShare(name)] = name
	}
}

// TestTenantPause: a paused tenant's deliveries wait, moved into the
// tenant's own lane, while another tenant of the same share (and of the
// same destinations) is delivered; resumed, they go. Events accepted
// during the pause (marked apart by the ingress) wait there from the
// start.
func TestTenantPause(t *testing.T) {
	held, other := sharingTenants()
	st := newCountingStore(newStore(t))
	up := newUpstream(t, nil)
	holds := &tenantHolds{paused: map[string]bool{}}
	holds.set("shop", held, true)
	for range 3 {
		enqueue(t, st, storage.Event{Source: "shop", Tenant: held})
		enqueue(t, st, storage.Event{Source: "shop", Tenant: other})
	}
	enqueue(t, st, storage.Event{Source: "shop", Tenant: held, Apart: true})
	startDispatcher(t, Config{Store: st, Workers: 2, Holds: holds,
		Targets: targetsOf(map[string]*Target{"shop": {URL: up.URL, Policy: fastPolicy(3)}})})
	tenants := func() map[string]int {
		n := map[string]int{}
		for _, r := range up.requests() {
			n[r.header.Get("X-Webhook-Tenant")]++
		}
		return n
	}
	waitFor(t, 5*time.Second, "the other tenant's deliveries", func() bool { return tenants()[other] == 3 })
	waitFor(t, 5*time.Second, "the held tenant's deliveries moved apart", func() bool {
		byLane, err := st.QueueByLane(t.Context())
		return err == nil && byLane[storage.TenantLane("shop", held)].Queued == 4
	})
	time.Sleep(300 * time.Millisecond) // several lease rounds
	if n := tenants()[held]; n != 0 {
		t.Fatalf("%d deliveries of the paused tenant went", n)
	}
	// held by the gate: each of the three moved once, none leased since
	if n := st.releases("shop"); n != 3 {
		t.Errorf("%d releases of the paused tenant's deliveries, want 3 (one move apart each)", n)
	}
	holds.set("shop", held, false)
	waitFor(t, 5*time.Second, "the resumed tenant's deliveries", func() bool { return tenants()[held] == 4 })
}

// TestPausedTrialHandedBack: a half-open breaker's trial job that is
// handed back untried (its tenant paused) ends the trial, so that the
// destination's next trial goes at once instead of after an open period.
func TestPausedTrialHandedBack(t *testing.T) {
	st := newStore(t)
	holds := &tenantHolds{paused: map[string]bool{}}
	holds.set("shop", "held", true)
	const url = "http://127.0.0.1:1/shop"
	d := New(Config{Store: st, Holds: holds, BreakerOpen: time.Minute,
		Targets: targetsOf(map[string]*Target{"shop": {URL: url, Policy: fastPolicy(3)}})})
	enqueue(t, st, storage.Event{Source: "shop", Tenant: "held"})
	jobs, err := st.Lease(t.Context(), time.Now(), 1, time.Minute, nil)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Lease = %d jobs, %v", len(jobs), err)
	}
	d.breakers.leaseTrial(BreakerName(url))
	<-d.slots // the job's slot, as the lease loop takes it
	d.held.Add(1)
	d.run(jobs[0])
	if d.breakers.trialLeased(BreakerName(url)) {
		t.Error("the trial handed back untried still holds the destination")
	}
	byLane, err := st.QueueByLane(t.Context())
	if err != nil || byLane[storage.TenantLane("shop", "held")].Queued != 1 {
		t.Errorf("the paused tenant's job: lanes %v, %v; want it in its own lane", byLane, err)
	}
}
