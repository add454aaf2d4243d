package delivery

import (
	"net/http"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

// Each delivery of an event goes to its own destination's target (URL,
// retry policy), says which destination it is in X-Webhook-Destination,
// and has its own outcome: a permanent failure at one destination leaves
// the others delivered.
func TestDispatcherDeliversEachDestination(t *testing.T) {
	st := newStore(t)
	def := newUpstream(t, nil)
	billing := newUpstream(t, status(http.StatusUnprocessableEntity))
	flaky := newUpstream(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n < 3 {
			w.WriteHeader(http.StatusBadGateway)
		}
	})
	reports := make(chan Report, 20)
	d := startDispatcher(t, Config{
		Store: st,
		Targets: targetsOf(map[string]*Target{
			"shop":         {URL: def.URL + "/default", Policy: fastPolicy(1)},
			"shop/billing": {URL: billing.URL + "/billing", Policy: fastPolicy(5)},
			"shop/flaky":   {URL: flaky.URL + "/flaky", Policy: fastPolicy(3)},
		}),
		OnResult: reportsTo(reports),
	})
	ev := enqueue(t, st, storage.Event{Source: "shop", Body: []byte(`{"n":1}`), Deliveries: []storage.Delivery{
		{Destination: "default", Upstream: "http://127.0.0.1:1/stale"},
		{Destination: "billing", Upstream: "http://127.0.0.1:1/stale"},
		{Destination: "flaky", Upstream: "http://127.0.0.1:1/stale"},
	}})
	d.Notify()
	results := map[string]storage.Result{}
	for len(results) < 3 || results["flaky"] == storage.Retry {
		r := nextReport(t, reports, 5*time.Second)
		results[storage.DestinationOf(&r.Job.Event)] = r.Result
	}
	if results["default"] != storage.Delivered || results["billing"] != storage.Dead || results["flaky"] != storage.Delivered {
		t.Errorf("results %v: want default delivered, billing dead (permanent), flaky delivered on its third attempt", results)
	}
	for name, up := range map[string]*upstream{"default": def, "billing": billing, "flaky": flaky} {
		reqs := up.requests()
		want := map[string]int{"default": 1, "billing": 1, "flaky": 3}[name]
		if len(reqs) != want {
			t.Errorf("%s got %d requests, want %d", name, len(reqs), want)
			continue
		}
		for _, r := range reqs {
			if r.path != "/"+name || r.header.Get("X-Webhook-Destination") != name || r.header.Get("Webhook-Id") != ev.EventID {
				t.Errorf("%s got path %s, X-Webhook-Destination %q, Webhook-Id %q", name, r.path,
					r.header.Get("X-Webhook-Destination"), r.header.Get("Webhook-Id"))
			}
		}
	}
	info := lookup(t, st, ev)
	got := map[string]storage.Status{}
	for _, di := range info.Deliveries {
		got[storage.DestinationOf(&storage.Event{Destination: di.Destination})] = di.Status
	}
	if got["default"] != storage.StatusDelivered || got["billing"] != storage.StatusDead || got["flaky"] != storage.StatusDelivered {
		t.Errorf("lookup deliveries %v", got)
	}
}

// A destination's upstream that is down opens its own breaker: the gate
// holds back that destination's lane only, and the source's other
// destinations keep flowing; a destination's rate paces its own lane.
func TestGateHoldsEachDestination(t *testing.T) {
	down := newUpstream(t, status(http.StatusBadGateway))
	up := newUpstream(t, nil)
	targets := map[string]*Target{
		"src":         {URL: down.URL, Policy: fastPolicy(100)},
		"src/fine":    {URL: up.URL, Policy: fastPolicy(3)},
		"src/slow":    {URL: up.URL + "/slow", Policy: fastPolicy(3), Rate: storage.Rate{Events: 1, Per: time.Hour}},
		"src/removed": nil,
	}
	d := New(Config{Store: newStore(t), Targets: targetsOf(targets),
		BreakerFailures: 1, BreakerOpen: time.Minute})
	d.breakers.get(down.URL).Execute(func() (int, error) { return 0, errTransient }) // open
	g := d.gate()
	for lane, want := range map[string]bool{"src": true, "src~replay": true, "src/fine": false, "src/fine~replay": false, "src/slow": false, "src/removed": true} {
		if g.Skipped(lane) != want {
			t.Errorf("lane %s skipped %v, want %v", lane, !want, want)
		}
	}
	if r, ok := g.RateOf("src/slow~replay"); !ok || r.Events != 1 {
		t.Errorf("src/slow~replay paced %v %v, want its destination's rate", r, ok)
	}
	if _, ok := g.RateOf("src/fine"); ok {
		t.Errorf("src/fine paced")
	}
	if storage.PaceOf("src/slow~replay") == storage.PaceOf("src") {
		t.Errorf("a destination shares its source's pace")
	}
}
