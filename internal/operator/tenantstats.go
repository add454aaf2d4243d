package operator

import (
	"cmp"
	"slices"
	"strings"
)

// Stats by tenant. A node counts the events of each source's busiest
// tenants apart, "tenant:<outcome>:<tenant>" (outcome accepted, delivered
// or dead), and those of every other tenant as "tenant:<outcome>:(other)",
// in the windows only (storage.StatsBatch.Window: never as all-time
// totals). The stats list a source's busiest tenants of the last hour,
// at most MaxTenantsListed, and the rest as OtherTenant.

// tenantCounterPrefix begins the names of the counters by tenant.
const tenantCounterPrefix = "tenant:"

// OtherTenant is the tenant the tenants not counted apart are counted
// as, and those past MaxTenantsListed are listed as (an account really
// named so is counted with them).
const OtherTenant = "(other)"

// MaxTenantsListed bounds the tenants a source's stats list.
const MaxTenantsListed = 20

// TenantCounter is the name of the stats counter of outcome (accepted,
// delivered, dead) for the events of tenant.
func TenantCounter(outcome, tenant string) string {
	return tenantCounterPrefix + outcome + ":" + tenant
}

// TenantStats is one of a source's busiest tenants in StatsAnswer, over
// the last hour.
type TenantStats struct {
	// Tenant is the tenant as stored, or "(other)": every tenant not
	// listed.
	Tenant string `json:"tenant"`
	// TypeCounts count its events accepted (received), their deliveries
	// delivered and dead-lettered.
	TypeCounts
}

// addTenant adds n to the tenant counter named "<outcome>:<tenant>".
func (b *breakdown) addTenant(counter string, n int64) {
	outcome, tenant, ok := strings.Cut(counter, ":")
	if !ok || tenant == "" {
		return
	}
	if b.tenants == nil {
		b.tenants = map[string]TenantStats{}
	}
	ts := b.tenants[tenant]
	if !ts.add(outcome, n) {
		return
	}
	ts.Tenant = tenant
	b.tenants[tenant] = ts
}

// tenantList is the tenants counted apart, busiest first (by events
// received, then delivered), at most MaxTenantsListed, then OtherTenant
// with the rest (nil when none was counted).
func (b *breakdown) tenantList() []TenantStats {
	if len(b.tenants) == 0 {
		return nil
	}
	other := b.tenants[OtherTenant]
	other.Tenant = OtherTenant
	list := make([]TenantStats, 0, len(b.tenants))
	for name, ts := range b.tenants {
		if name != OtherTenant {
			list = append(list, ts)
		}
	}
	slices.SortFunc(list, func(x, y TenantStats) int {
		return cmp.Or(cmp.Compare(y.Received, x.Received), cmp.Compare(y.Delivered, x.Delivered), cmp.Compare(x.Tenant, y.Tenant))
	})
	if len(list) > MaxTenantsListed {
		for _, ts := range list[MaxTenantsListed:] {
			other.Received, other.Delivered, other.Dead = other.Received+ts.Received, other.Delivered+ts.Delivered, other.Dead+ts.Dead
		}
		list = list[:MaxTenantsListed]
	}
	if other != (TenantStats{Tenant: OtherTenant}) {
		list = append(list, other)
	}
	return list
}
