package webhooks

import (
	"cmp"
	"slices"
	"time"

	"github.com/hookline/hookline/internal/operator"
)

// Stats by tenant, bounded. Each node keeps, per source, a summary of
// which tenants send the most (the Space-Saving algorithm: a fixed number
// of tenants watched, each with its count and how much of it may belong
// to the tenant it replaced), and counts apart only the busiest tenants
// it watches whose count is certain enough (operator.TenantCounter); every
// other tenant's events count as operator.OtherTenant. So the stats hold
// a bounded number of names per source, whatever the number of tenants:
// with many tenants of about the same traffic none is busiest, and they
// all count as "(other)". The counts are this node's view: a tenant is
// counted apart from its tenantAdmitAt-th event of the summary's hour on
// (its first ones count as "(other)").

const (
	// tenantsWatched is how many tenants a source's summary watches.
	tenantsWatched = 4 * operator.MaxTenantsListed
	// tenantAdmitAt is how many events, for certain, a watched tenant
	// must have sent in the summary's hour to be counted apart.
	tenantAdmitAt = 3
	// tenantSummaryFor is how long a summary counts before it starts
	// over: the busiest of an hour ago need not be the busiest now.
	tenantSummaryFor = time.Hour
	// tenantBusiestEvery is how often the busiest set is chosen again (and
	// whenever a tenant becomes certain enough).
	tenantBusiestEvery = time.Second
)

// tenantSummary is one source's summary (the caller holds statsNames.mu).
type tenantSummary struct {
	watched map[string]tenantWatch
	since   time.Time
	// busiest are the tenants counted apart, chosen at chosen; stale is
	// set when a tenant became certain enough since (tenantAdmitAt)
	busiest map[string]bool
	chosen  time.Time
	stale   bool
}

// tenantWatch is a watched tenant's count, and the part of it that may
// be the count of the tenant it replaced (its error).
type tenantWatch struct{ n, err int64 }

// offer counts one event of tenant at now.
func (s *tenantSummary) offer(tenant string, now time.Time) {
	if now.Sub(s.since) >= tenantSummaryFor {
		s.watched, s.since, s.busiest, s.chosen = make(map[string]tenantWatch, tenantsWatched), now, nil, time.Time{}
	}
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
// at most operator.MaxTenantsListed.
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
	s.busiest = make(map[string]bool, min(len(list), operator.MaxTenantsListed))
	for _, e := range list[:min(len(list), operator.MaxTenantsListed)] {
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
		s = &tenantSummary{watched: make(map[string]tenantWatch, tenantsWatched), since: now}
		n.tenants[source] = s
	}
	if outcome == "accepted" {
		s.offer(tenant, now)
	}
	return s.counted(tenant, now)
}

// countTenant adds one to a source's counter of outcome (accepted,
// delivered, dead) for the events of tenant, counted apart when it is
// among the source's busiest; events without a tenant are counted only
// by source.
func (a *App) countTenant(source, outcome, tenant string) {
	if a.stats == nil || tenant == "" {
		return
	}
	if a.stats.names == nil {
		a.stats.names = new(statsNames)
	}
	name := a.stats.names.tenantName(source, outcome, tenant, time.Now())
	a.stats.add(source, operator.TenantCounter(outcome, name), 1)
}
