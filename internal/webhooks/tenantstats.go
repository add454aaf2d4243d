package webhooks

import (
	"cmp"
	"slices"
	"time"

	"github.com/hookline/hookline/internal/operator"
	"github.com/hookline/hookline/storage"
)

// Stats by tenant, bounded. Each node keeps, per source, a summary of
// which tenants send the most (the Space-Saving algorithm: a fixed number
// of tenants watched, each with its count and how much of it may belong
// to the tenant it replaced), and counts apart only the busiest tenants
// it watches whose count is certain enough (operator.TenantCounter); every
// other tenant's events count as operator.OtherTenant. The summary starts
// over with each hour bucket of the stats (storage.StatsHour), and at
// most tenantsAdmitted tenants are ever counted apart within one: so a
// bucket holds at most 3 × tenantsAdmitted names per source and node,
// whatever the number of tenants or how they send (a sender that makes
// up tenants fills that bound for the hour at worst; later ones count as
// "(other)"). With many tenants of about the same traffic none is
// busiest, and they all count as "(other)". The counts are each node's
// view: a tenant is counted apart from its tenantAdmitAt-th event of the
// hour on (its first ones count as "(other)"), and a node that delivers
// events it did not accept names their results by its own summary.

const (
	// tenantsWatched is how many tenants a source's summary watches.
	tenantsWatched = 4 * operator.MaxTenantsListed
	// tenantsAdmitted is how many tenants may be counted apart within
	// one hour bucket, per source and node.
	tenantsAdmitted = 2 * operator.MaxTenantsListed
	// tenantAdmitAt is how many events, for certain, a watched tenant
	// must have sent in the summary's hour to be counted apart.
	tenantAdmitAt = 3
	// tenantBusiestEvery is how often the busiest set is chosen again (and
	// whenever a tenant becomes certain enough).
	tenantBusiestEvery = time.Second
)

// tenantSummary is one source's summary (the caller holds statsNames.mu).
type tenantSummary struct {
	watched map[string]tenantWatch
	// hour is the stats hour bucket it counts (storage.StatsHour)
	hour int64
	// busiest are the tenants counted apart, chosen at chosen; stale is
	// set when a tenant became certain enough since (tenantAdmitAt)
	busiest map[string]bool
	chosen  time.Time
	stale   bool
	// admitted are the tenants counted apart at some time in the hour
	// (at most tenantsAdmitted)
	admitted map[string]bool
}

// tenantWatch is a watched tenant's count, and the part of it that may
// be the count of the tenant it replaced (its error).
type tenantWatch struct{ n, err int64 }

// at starts the summary over when now is in another hour bucket than
// the one it counts.
func (s *tenantSummary) at(now time.Time) {
	if h := storage.StatsHour(now); h != s.hour || s.watched == nil {
		*s = tenantSummary{watched: make(map[string]tenantWatch, tenantsWatched), hour: h, admitted: map[string]bool{}}
	}
}

// offer counts one event of tenant.
func (s *tenantSummary) offer(tenant string) {
	if w, ok := s.watched[tenant]; ok {
		w.n++
		s.watched[tenant] = w
		if w.n-w.err == tenantAdmitAt {
			s.stale = true // it may be among the busiest now
		}
		return
	}
	if len(s.watched) < tenantsWatched {
		s.watched[tenant] = tenantWatch{n: 1}
		return
	}
	// the least counted makes room, and the newcomer inherits its count
	// as its error
	least, lw := "", tenantWatch{}
	for t, w := range s.watched {
		if least == "" || w.n < lw.n || w.n == lw.n && t < least {
			least, lw = t, w
		}
	}
	delete(s.watched, least)
	s.watched[tenant] = tenantWatch{n: lw.n + 1, err: lw.n}
}

// counted is the name tenant's events are counted under at now: itself
// when it is among the busiest, else operator.OtherTenant.
func (s *tenantSummary) counted(tenant string, now time.Time) string {
	if s.stale || now.Sub(s.chosen) >= tenantBusiestEvery {
		s.choose(now)
	}
	if s.busiest[tenant] {
		return tenant
	}
	return operator.OtherTenant
}

// choose picks the busiest: the watched tenants with at least
// tenantAdmitAt events for certain (count less error), the most first,
// at most operator.MaxTenantsListed, among those admitted in the hour
// while tenantsAdmitted were not.
func (s *tenantSummary) choose(now time.Time) {
	type sure struct {
		tenant string
		n      int64
	}
	var list []sure
	for t, w := range s.watched {
		if n := w.n - w.err; n >= tenantAdmitAt {
			list = append(list, sure{t, n})
		}
	}
	slices.SortFunc(list, func(a, b sure) int { return cmp.Or(cmp.Compare(b.n, a.n), cmp.Compare(a.tenant, b.tenant)) })
	clear(s.busiest)
	if s.busiest == nil {
		s.busiest = make(map[string]bool, operator.MaxTenantsListed)
	}
	for _, e := range list {
		if len(s.busiest) == operator.MaxTenantsListed {
			break
		}
		if !s.admitted[e.tenant] {
			if len(s.admitted) == tenantsAdmitted {
				continue // the hour's bound is reached: only those admitted already
			}
			s.admitted[e.tenant] = true
		}
		s.busiest[e.tenant] = true
	}
	s.chosen, s.stale = now, false
}

// tenantName is the name the event of tenant of source is counted
// under for outcome (an accepted event is offered to the summary first).
func (n *statsNames) tenantName(source, outcome, tenant string, now time.Time) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.tenants == nil {
		n.tenants = map[string]*tenantSummary{}
	}
	s := n.tenants[source]
	if s == nil {
		s = new(tenantSummary)
		n.tenants[source] = s
	}
	s.at(now)
	if outcome == "accepted" {
		s.offer(tenant)
	}
	return s.counted(tenant, now)
}

// countTenant adds one to a source's counter of outcome (accepted,
// delivered, dead) for the events of tenant, counted apart when it is
// among the source's busiest; events without a tenant are counted only
// by source.
func (a *App) countTenant(source, outcome, tenant string) {
	if a.stats == nil || a.stats.names == nil || tenant == "" {
		return
	}
	name := a.stats.names.tenantName(source, outcome, tenant, time.Now())
	a.stats.add(source, operator.TenantCounter(outcome, name), 1)
}

// busy reports whether tenant is among the busiest of source at now, as
// its events are counted (tenantName).
func (n *statsNames) busy(source, tenant string, now time.Time) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	s := n.tenants[source]
	if s == nil || s.hour != storage.StatsHour(now) {
		return false // nothing counted yet this hour
	}
	return s.counted(tenant, now) == tenant
}

// BusyTenant reports whether tenant is among the busiest tenants of
// source, as this node counts them for the stats (at most
// operator.MaxTenantsListed a source, from the tenantAdmitAt-th event of
// the hour on). The ingress stores such a tenant's events apart
// (storage.Event.Apart): their deliveries wait in lanes of the tenant's
// own, so that its backlog holds back none of the tenants hashed to its
// share.
func (a *App) BusyTenant(source, tenant string) bool {
	if tenant == "" || a.stats == nil || a.stats.names == nil {
		return false
	}
	return a.stats.names.busy(source, tenant, time.Now())
}
