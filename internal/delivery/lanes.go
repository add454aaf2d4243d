package delivery

import (
	"github.com/hookline/hookline/storage"
)

// This file holds the one answer to "may this delivery go now" (decide),
// which the lease loop's gate, the hints and the workers all ask, and the
// gate it builds for the store at each lease.

// Holds is the operators' say on deliveries: their pauses, and the
// catch-up pace of a resumed pause's backlog. Its answers change while the
// dispatcher runs (a pause set on any node); the dispatcher asks them at
// every lease, hint and attempt, through decide.
type Holds interface {
	// Paused reports whether source's deliveries to destination wait
	// (destination "": whether the whole source's do).
	Paused(source, destination string) bool
	// CatchingUp reports whether source's deliveries to destination drain
	// a resumed pause's backlog: without a rate of their own they go at
	// storage.DefaultCatchUpRate meanwhile.
	CatchingUp(source, destination string) bool
	// TenantPaused reports whether the deliveries of one tenant of source
	// wait (to every destination).
	TenantPaused(source, tenant string) bool
	// PausedTenants lists the tenants of source whose deliveries wait.
	PausedTenants(source string) []string
}

// verdict is whether a lane's deliveries may go now, and how.
type verdict struct {
	// wait: none may go (an operator's pause, or the breaker open or
	// its one trial under way)
	wait bool
	// paused: the wait is an operator's pause (not the upstream's state)
	paused bool
	// trial: the breaker is half-open; one delivery may go, as its trial
	trial bool
	// rate is the pace the deliveries go at (zero: none)
	rate storage.Rate
}

// decide is the one answer to "may a delivery of source to destination go
// now" through t (nil: the destination is not configured; only a pause
// holds it): paused by an operator, its upstream's breaker, its pace (its
// rate, else a resumed pause's catch-up). The order of a key's deliveries
// and a pace's next slot are the store's to keep (storage.Gate); the
// breaker's last word on an attempt is its own (attempt's Execute admits
// the one trial request and counts the outcome).
func (d *Dispatcher) decide(source, destination string, t *Target) verdict {
	if d.paused(source, destination) {
		return verdict{wait: true, paused: true}
	}
	if t == nil {
		return verdict{}
	}
	wait, trial := d.breakers.holds(t.URL)
	if wait {
		return verdict{wait: true}
	}
	v := verdict{trial: trial, rate: t.Rate}
	if !v.rate.Valid() && d.cfg.Holds != nil && d.cfg.Holds.CatchingUp(source, destination) {
		v.rate = storage.DefaultCatchUpRate
	}
	return v
}

// paused is decide's first question alone: whether an operator holds
// source's deliveries to destination ("": the whole source's). The worker
// and Hint ask only this (the rest is the gate's, and the breaker's own at
// the attempt).
func (d *Dispatcher) paused(source, destination string) bool {
	return d.cfg.Holds != nil && d.cfg.Holds.Paused(source, destination)
}

// tenantPaused is whether an operator holds the deliveries of one tenant
// of source. The gate holds the tenant's own lanes (storage.TenantLane);
// the worker moves a delivery it leased from a tenants' share there.
func (d *Dispatcher) tenantPaused(source, tenant string) bool {
	return tenant != "" && d.cfg.Holds != nil && d.cfg.Holds.TenantPaused(source, tenant)
}

// target is the configured target of a source's destination (nil: not
// configured).
func (d *Dispatcher) target(source, destination string) *Target {
	return (*d.targets.Load())[source][destination]
}

// gate is what the store must hold back at this lease, each configured
// lane as decide says: the lanes that wait skipped, a half-open breaker's
// capped to its one trial, the paced ones paced. Jobs of sources no longer
// configured are not gated (they are delivered with the defaults, as run
// decides).
func (d *Dispatcher) gate() *storage.Gate {
	targets := *d.targets.Load()
	if len(targets) == 0 {
		return nil
	}
	g := &storage.Gate{Skip: map[string]bool{}, Pace: map[string]storage.Rate{}, Cap: map[string]int{}}
	clear(d.trialLanes)
	for src, dests := range targets {
		if d.decide(src, "", nil).wait {
			// every destination of a paused source waits, those no longer
			// configured too (their lanes follow the source's: GateLaneOf)
			for _, lane := range storage.LanesOf(src) {
				g.Skip[lane] = true
			}
		}
		for dest, t := range dests {
			d.gateDestination(g, src, dest, t)
		}
		d.gateTenants(g, src, dests)
	}
	return g
}

// gateTenants skips the own lanes (storage.TenantLane) of source's paused
// tenants on each configured destination's live lane. A paused tenant's
// delivery that waits in a tenants' share is moved to its own lane when
// leased (run); one to a destination no longer configured is handed back
// and looked at again later.
func (d *Dispatcher) gateTenants(g *storage.Gate, src string, dests map[string]*Target) {
	if d.cfg.Holds == nil {
		return
	}
	for _, tenant := range d.cfg.Holds.PausedTenants(src) {
		for dest := range dests {
			g.Skip[storage.TenantLane(storage.DestinationLanes(src, dest)[0], tenant)] = true
		}
	}
}

// gateDestination adds the entries of one destination's lanes (its live
// and replay lanes are gated alike). A named destination's lanes get
// entries of their own even when nothing holds them (not skipped, no cap,
// unpaced), so they never follow the default destination's.
func (d *Dispatcher) gateDestination(g *storage.Gate, src, dest string, t *Target) {
	v := d.decide(src, dest, t)
	own := !storage.IsDefaultDestination(dest)
	for _, lane := range storage.DestinationLanes(src, dest) {
		switch {
		case v.wait:
			g.Skip[lane] = true
			continue
		case v.trial:
			g.Cap[lane] = 1 // one trial request: the rest would be handed back
			d.trialLanes[lane] = BreakerName(t.URL)
		case own:
			g.Skip[lane], g.Cap[lane] = false, -1
		}
		if v.rate.Valid() || own {
			g.Pace[lane] = v.rate
		}
	}
}
