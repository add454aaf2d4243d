package webhooks

import (
	"fmt"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/operator"
)

// TestTenantSummary: the busiest tenants of a source are counted apart,
// never more than operator.MaxTenantsListed, and only with traffic above
// the rest; tenants of even traffic all count as "(other)"; the summary
// watches a bounded number of tenants and starts over every hour.
func TestTenantSummary(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	for _, tc := range []struct {
		name string
		// tenant is the tenant of the i-th of events
		tenant func(i int) string
		events int
		// apart are tenants that must be counted apart at the end, the
		// number of tenants counted apart
		apart     []string
		wantApart int
	}{
		{"one busy among many", func(i int) string {
			if i%2 == 0 {
				return "big.myshopify.com"
			}
			return fmt.Sprintf("small-%d", i)
		}, 5000, []string{"big.myshopify.com"}, 1},
		{"even traffic of many", func(i int) string { return fmt.Sprintf("t-%d", i) }, 5000, nil, 0},
		{"a few tenants", func(i int) string { return fmt.Sprintf("few-%d", i%5) }, 50, []string{"few-0", "few-4"}, 5},
		{"more busy tenants than listed", func(i int) string { return fmt.Sprintf("busy-%d", i%30) }, 3000, nil, operator.MaxTenantsListed},
		{"too few events to be sure", func(i int) string { return "once" }, tenantAdmitAt - 1, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := new(statsNames)
			for i := range tc.events {
				n.tenantName("shop", "accepted", tc.tenant(i), t0.Add(time.Duration(i)*time.Millisecond))
			}
			end := t0.Add(time.Duration(tc.events)*time.Millisecond + tenantBusiestEvery)
			s := n.tenants["shop"]
			if len(s.watched) > tenantsWatched {
				t.Errorf("%d tenants watched, more than %d", len(s.watched), tenantsWatched)
			}
			for _, tn := range tc.apart {
				if got := n.tenantName("shop", "delivered", tn, end); got != tn {
					t.Errorf("tenant %s counted as %q, want apart", tn, got)
				}
			}
			s.choose(end)
			if len(s.busiest) != tc.wantApart {
				t.Errorf("%d tenants counted apart, want %d: %v", len(s.busiest), tc.wantApart, s.busiest)
			}
			if got := n.tenantName("shop", "delivered", "never-seen", end); got != operator.OtherTenant {
				t.Errorf("a tenant never seen counted as %q, want %q", got, operator.OtherTenant)
			}
		})
	}
	// an hour later the summary starts over: yesterday's busiest is not
	n := new(statsNames)
	for i := range 10 {
		n.tenantName("shop", "accepted", "gone", t0.Add(time.Duration(i)*time.Millisecond))
	}
	later := t0.Add(tenantSummaryFor + time.Minute)
	if got := n.tenantName("shop", "accepted", "new", later); got != operator.OtherTenant {
		t.Errorf("a new tenant's first event after an hour counted as %q", got)
	}
	if got := n.tenantName("shop", "delivered", "gone", later.Add(tenantBusiestEvery)); got != operator.OtherTenant {
		t.Errorf("the busiest of an hour ago counted as %q, want %q", got, operator.OtherTenant)
	}
}
