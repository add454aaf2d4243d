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
	t0 := time.Unix(1_800_000_000-1_800_000_000%3600, 0) // an hour bucket's start
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
	// the next hour bucket starts over: the last hour's busiest is not
	n := new(statsNames)
	for i := range 10 {
		n.tenantName("shop", "accepted", "gone", t0.Add(time.Duration(i)*time.Millisecond))
	}
	if got := n.tenantName("shop", "delivered", "gone", t0.Add(time.Second)); got != "gone" {
		t.Fatalf("a busy tenant counted as %q", got)
	}
	later := t0.Add(time.Hour)
	if got := n.tenantName("shop", "delivered", "gone", later); got != operator.OtherTenant {
		t.Errorf("the busiest of the last hour, in the next one, counted as %q, want %q", got, operator.OtherTenant)
	}

	// a sender making up tenants, each sending three events in a row, gets
	// at most tenantsAdmitted names counted apart in the hour
	n = new(statsNames)
	apart := map[string]bool{}
	for i := range 300 {
		tn := fmt.Sprintf("made-up-%03d", i)
		for j := range tenantAdmitAt {
			if got := n.tenantName("shop", "accepted", tn, t0.Add(time.Duration(i*10+j)*time.Millisecond)); got != operator.OtherTenant {
				apart[got] = true
			}
		}
	}
	if len(apart) == 0 || len(apart) > tenantsAdmitted {
		t.Errorf("%d names counted apart in an hour, want 1 to %d", len(apart), tenantsAdmitted)
	}
}

// TestBusyTenant: a tenant is busy (its events stored apart) once the
// stats count it apart, from its tenantAdmitAt-th event of the hour, and
// no longer in the next hour; a tenant of one event, another source's, or
// none, is not.
func TestBusyTenant(t *testing.T) {
	t0 := time.Unix(1_800_000_000-1_800_000_000%3600, 0)
	n := new(statsNames)
	if n.busy("shop", "big", t0) {
		t.Fatal("busy before any event")
	}
	for i := range tenantAdmitAt {
		if n.busy("shop", "big", t0.Add(time.Duration(i)*time.Millisecond)) {
			t.Fatalf("busy after %d events", i)
		}
		n.tenantName("shop", "accepted", "big", t0.Add(time.Duration(i)*time.Millisecond))
	}
	n.tenantName("shop", "accepted", "once", t0)
	at := t0.Add(10 * time.Millisecond)
	if !n.busy("shop", "big", at) || n.busy("shop", "once", at) || n.busy("other", "big", at) {
		t.Errorf("after %d events: big %v, once %v, another source's %v", tenantAdmitAt,
			n.busy("shop", "big", at), n.busy("shop", "once", at), n.busy("other", "big", at))
	}
	if n.busy("shop", "big", t0.Add(time.Hour)) {
		t.Error("still busy in the next hour, before any event of it")
	}
}
