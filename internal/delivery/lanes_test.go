package delivery

import (
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

// holdsOf is Config.Holds with fixed answers, keyed "source" or
// "source/destination".
type holdsOf struct{ paused, catchingUp map[string]bool }

func (h holdsOf) Paused(source, destination string) bool {
	return h.paused[source] || (destination != "" && h.paused[source+"/"+destination])
}

func (h holdsOf) CatchingUp(source, destination string) bool {
	return h.catchingUp[source] || h.catchingUp[source+"/"+destination]
}

func (holdsOf) TenantPaused(string, string) bool { return false }
func (holdsOf) PausedTenants(string) []string    { return nil }

// decide is the one answer to "may this delivery go now": an operator's
// pause first, then the upstream's breaker, then the pace (the
// destination's rate, else a resumed pause's catch-up pace).
func TestDecide(t *testing.T) {
	own := storage.Rate{Events: 5, Per: time.Second}
	d := New(Config{Store: newStore(t), BreakerFailures: 1, BreakerOpen: time.Minute, Holds: holdsOf{
		paused:     map[string]bool{"held": true, "shop/crm": true},
		catchingUp: map[string]bool{"resumed": true, "paced": true},
	}})
	down := &Target{URL: "http://down.invalid/"}
	d.breakers.get(down.URL).Execute(func() (int, error) { return 0, errTransient }) // open
	up := &Target{URL: "http://up.invalid/"}
	for _, tc := range []struct {
		name, source, destination string
		target                    *Target
		want                      verdict
	}{
		{"goes", "shop", "default", up, verdict{}},
		{"source paused", "held", "default", up, verdict{wait: true, paused: true}},
		{"source paused, asked for the source", "held", "", nil, verdict{wait: true, paused: true}},
		{"source paused, destination not configured", "held", "gone", nil, verdict{wait: true, paused: true}},
		{"destination paused", "shop", "crm", up, verdict{wait: true, paused: true}},
		{"another destination of it goes", "shop", "erp", up, verdict{}},
		{"a pause comes before the breaker", "held", "default", down, verdict{wait: true, paused: true}},
		{"breaker open", "shop", "default", down, verdict{wait: true}},
		{"not configured, not paused", "shop", "gone", nil, verdict{}},
		{"own rate", "shop", "default", &Target{URL: up.URL, Rate: own}, verdict{rate: own}},
		{"catching up: the catch-up pace", "resumed", "default", up, verdict{rate: storage.DefaultCatchUpRate}},
		{"catching up with a rate of its own: its own", "paced", "default", &Target{URL: up.URL, Rate: own}, verdict{rate: own}},
	} {
		if got := d.decide(tc.source, tc.destination, tc.target); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// A half-open breaker lets one trial go, and holds the rest while that
// trial is leased.
func TestDecideTrial(t *testing.T) {
	d := New(Config{Store: newStore(t), BreakerFailures: 1, BreakerOpen: 20 * time.Millisecond})
	tgt := &Target{URL: "http://flaky.invalid/"}
	d.breakers.get(tgt.URL).Execute(func() (int, error) { return 0, errTransient })
	time.Sleep(30 * time.Millisecond) // open period over: half-open at the next look
	if got := d.decide("s", "default", tgt); got != (verdict{trial: true}) {
		t.Fatalf("half-open: %+v, want one trial", got)
	}
	d.breakers.leaseTrial(BreakerName(tgt.URL))
	if got := d.decide("s", "default", tgt); got != (verdict{wait: true}) {
		t.Fatalf("half-open, trial leased: %+v, want the rest held", got)
	}
}
