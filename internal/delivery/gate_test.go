package delivery

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/storagetest"
)

// countingStore records what the dispatcher asks of the store: the jobs
// each Lease handed out and each Release, by source.
type countingStore struct{ *storagetest.Faulty }

func newCountingStore(st storage.Store) countingStore {
	return countingStore{storagetest.NewFaulty(st)}
}

func (c countingStore) leases(source string) int   { return c.Leased(source) }
func (c countingStore) releases(source string) int { return c.Released(source) }

// A rate-limited source is paced when its jobs are leased: no worker waits
// for it, other sources are not held back, and no job is leased and handed
// back for want of a slot.
func TestDispatcherPacesAtLease(t *testing.T) {
	st := newCountingStore(newStore(t))
	up := newUpstream(t, nil)
	targets := map[string]*Target{
		"paced": {URL: up.URL + "/paced", Policy: fastPolicy(3), Rate: storage.Rate{Events: 10, Per: time.Second}},
		"other": {URL: up.URL + "/other", Policy: fastPolicy(3)},
	}
	reports := make(chan Report, 100)
	for range 8 {
		enqueue(t, st, storage.Event{Source: "paced"})
	}
	for range 20 {
		enqueue(t, st, storage.Event{Source: "other"})
	}
	start := time.Now()
	startDispatcher(t, Config{Store: st, Workers: 2, Targets: targetsOf(targets), OnResult: reportsTo(reports)})
	var otherDone, pacedDone time.Time
	others, paced := 0, 0
	for others < 20 || paced < 8 {
		r := nextReport(t, reports, 5*time.Second)
		if r.Result != storage.Delivered {
			t.Fatalf("result %v, want delivered", r.Result)
		}
		switch r.Job.Source {
		case "other":
			if others++; others == 20 {
				otherDone = time.Now()
			}
		case "paced":
			if paced++; paced == 8 {
				pacedDone = time.Now()
			}
		}
	}
	// 8 paced jobs at 10/s take 700ms at least; the 20 others do not wait for them
	if took := pacedDone.Sub(start); took < 650*time.Millisecond {
		t.Errorf("8 jobs at 10/s delivered in %v, want at least 700ms", took)
	}
	if took := otherDone.Sub(start); took > 600*time.Millisecond {
		t.Errorf("the unpaced source's 20 jobs took %v: held back by the paced one", took)
	}
	var last time.Time
	for i, r := range up.requests() {
		if r.path != "/paced" {
			continue
		}
		if !last.IsZero() && r.at.Sub(last) < 80*time.Millisecond {
			t.Errorf("paced request %d came %v after the previous one, want about 100ms", i, r.at.Sub(last))
		}
		last = r.at
		if r.header.Get("X-Webhook-Attempt") != "1" {
			t.Errorf("paced request %d was attempt %s, want 1", i, r.header.Get("X-Webhook-Attempt"))
		}
	}
	if n := st.releases("paced") + st.releases("other"); n != 0 {
		t.Errorf("%d jobs were leased and handed back; pacing must not lease what it cannot send", n)
	}
	if n := st.leases("paced"); n != 8 {
		t.Errorf("paced jobs leased %d times, want 8 (each once)", n)
	}
}

// A paused source's backlog costs no store work: its jobs are not leased
// (so never released) while it is paused, other sources flow, and resume
// delivers them at once.
func TestDispatcherPausedSourceNotLeased(t *testing.T) {
	st := newCountingStore(newStore(t))
	up := newUpstream(t, nil)
	targets := map[string]*Target{
		"held": {URL: up.URL + "/held", Policy: fastPolicy(3)},
		"live": {URL: up.URL + "/live", Policy: fastPolicy(3)},
	}
	var paused atomic.Bool
	paused.Store(true)
	for i := range 50 {
		enqueue(t, st, storage.Event{Source: "held", Replay: i%2 == 0}) // its replays wait too
	}
	d := startDispatcher(t, Config{Store: st, Workers: 4, Targets: targetsOf(targets),
		Holds: pausedBy(func(s, _ string) bool { return s == "held" && paused.Load() })})
	for range 5 {
		enqueue(t, st, storage.Event{Source: "live"})
	}
	d.Notify()
	waitFor(t, 2*time.Second, "the live source's deliveries", func() bool { return up.count() >= 5 })
	time.Sleep(300 * time.Millisecond) // many lease rounds (Idle is 20ms)
	if n := st.leases("held"); n != 0 {
		t.Fatalf("paused source's jobs leased %d times while paused, want 0", n)
	}
	if n := st.releases("held"); n != 0 {
		t.Fatalf("paused source's jobs released %d times, want 0", n)
	}
	resumed := time.Now()
	paused.Store(false)
	d.Notify()
	waitFor(t, 2*time.Second, "the held backlog after resume", func() bool { return up.count() >= 55 })
	if took := time.Since(resumed); took > time.Second {
		t.Errorf("resume took %v to deliver the backlog", took)
	}
}

// While an upstream's breaker is open its source's jobs stay in the store:
// after the jobs already leased when it opened are handed back (once), none
// is leased again until the open period ends; then they are delivered.
func TestDispatcherOpenBreakerNotLeased(t *testing.T) {
	const open = 600 * time.Millisecond
	st := newCountingStore(newStore(t))
	var down atomic.Bool
	down.Store(true)
	up := newUpstream(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		if down.Load() {
			w.WriteHeader(http.StatusBadGateway)
		}
	})
	targets := map[string]*Target{"down": {URL: up.URL, Policy: fastPolicy(100)}}
	for range 30 {
		enqueue(t, st, storage.Event{Source: "down"})
	}
	// one worker: with two, the first to fail could lease its next job and
	// send it before the second's failure opened the breaker (a lease
	// costs no commit on the embedded store), a third request sent while
	// the breaker was still closed
	startDispatcher(t, Config{Store: st, Workers: 1, Prefetch: -1, Targets: targetsOf(targets),
		BreakerFailures: 2, BreakerOpen: open})
	waitFor(t, 2*time.Second, "the breaker to open", func() bool { return up.count() >= 2 })
	openedAt := time.Now()
	time.Sleep(100 * time.Millisecond) // the in-flight ones come back
	before := st.leases("down")
	releasedBefore := st.releases("down")
	time.Sleep(open - 250*time.Millisecond)
	if n := st.leases("down") - before; n != 0 {
		t.Errorf("%d jobs of the source leased while its breaker was open, want 0", n)
	}
	if n := st.releases("down") - releasedBefore; n != 0 {
		t.Errorf("%d jobs released while the breaker was open, want 0 (no store work per waiting event)", n)
	}
	if n := up.count(); n != 2 {
		t.Errorf("upstream got %d requests with the breaker open, want 2", n)
	}
	if time.Since(openedAt) >= open {
		t.Fatalf("checks ran past the open period (%v): machine too slow", time.Since(openedAt))
	}
	down.Store(false)
	waitFor(t, 5*time.Second, "all deliveries after the breaker closed", func() bool { return up.count() >= 32 })
}

// An event id that cannot travel in a header (written by another writer:
// hookline's ingress normalizes every id it finds) dead-letters at once,
// with no request to the upstream and no failure counted by its breaker,
// instead of failing every attempt; an id that can travel goes as it is.
func TestDispatcherRefusesUntravelableID(t *testing.T) {
	st := newStore(t)
	up := newUpstream(t, nil)
	reports := make(chan Report, 2)
	d := startDispatcher(t, Config{Store: st, Targets: targetsOf(map[string]*Target{"s": {URL: up.URL, Policy: fastPolicy(3)}}),
		OnResult: reportsTo(reports), BreakerFailures: 1})
	bad := "evt_1\r\nX-Injected: 1"
	ev := enqueue(t, st, storage.Event{Source: "s", EventID: bad})
	if r := nextReport(t, reports, 5*time.Second); r.Result != storage.Dead || r.Attempt != nil {
		t.Fatalf("result %v (%+v), want dead with no attempt", r.Result, r.Attempt)
	}
	if info := lookup(t, st, ev); info.Status != storage.StatusDead || len(info.Attempts) != 0 {
		t.Errorf("stored: %s with %d attempts, want dead with none", info.Status, len(info.Attempts))
	}
	if !d.breakers.closed(up.URL) {
		t.Errorf("the upstream's breaker counted the refused id")
	}
	enqueue(t, st, storage.Event{Source: "s", EventID: "evt_2"})
	if r := nextReport(t, reports, 5*time.Second); r.Result != storage.Delivered {
		t.Fatalf("the next event: %v (%+v), want delivered", r.Result, r.Attempt)
	}
	if n := up.count(); n != 1 || up.requests()[0].header.Get("Webhook-Id") != "evt_2" || up.requests()[0].header.Get("X-Injected") != "" {
		t.Fatalf("upstream got %d requests (Webhook-Id %q)", n, up.requests()[0].header.Get("Webhook-Id"))
	}
}

// A source's replay lane is gated as its own lane: skipped while the
// source is paused or its breaker open, capped while half open, paced at
// its rate (the stores give both lanes one pace: storage.PaceOf).
func TestGateReplayLane(t *testing.T) {
	rate := storage.Rate{Events: 2, Per: time.Second}
	targets := map[string]*Target{
		"paced":  {URL: "http://paced.invalid/", Rate: rate},
		"paused": {URL: "http://paused.invalid/"},
		"plain":  {URL: "http://plain.invalid/"},
	}
	d := New(Config{Store: newStore(t), Targets: targetsOf(targets),
		Holds: pausedBy(func(s, _ string) bool { return s == "paused" })})
	g := d.gate()
	for _, src := range []string{"paced", "paused", "plain"} {
		live, replay := storage.LanesOf(src)[0], storage.LanesOf(src)[1]
		if g.Skip[live] != g.Skip[replay] || g.Skip[live] != (src == "paused") {
			t.Errorf("%s: skip live %v replay %v", src, g.Skip[live], g.Skip[replay])
		}
		lr, lok := g.RateOf(live)
		rr, rok := g.RateOf(replay)
		if lok != rok || lr != rr || lok != (src == "paced") {
			t.Errorf("%s: pace live %v %v replay %v %v", src, lr, lok, rr, rok)
		}
	}
}

// A destination's pause holds back that destination's lanes only; the
// source's other destinations keep flowing.
func TestGateDestinationPause(t *testing.T) {
	d := New(Config{Store: newStore(t),
		Targets: targetsOf(map[string]*Target{
			"shop": {URL: "http://up.invalid/"}, "shop/crm": {URL: "http://up.invalid/"}, "shop/erp": {URL: "http://up.invalid/"}}),
		Holds: pausedBy(func(s, dest string) bool { return s == "shop" && dest == "crm" })})
	g := d.gate()
	for _, dest := range []string{storage.DefaultDestination, "crm", "erp"} {
		for _, lane := range storage.DestinationLanes("shop", dest) {
			if g.Skipped(lane) != (dest == "crm") {
				t.Errorf("lane %s skipped %v", lane, g.Skipped(lane))
			}
		}
	}
}

// TestBreakerPerDestination: two sources behind one host:port (one local
// reverse proxy), /a failing and /b healthy: once /a's breaker opens, /b's
// deliveries go on at once, never held or handed back, and /a's trials
// reach /a only. With one breaker per host, /b waited out /a's open period
// again and again.
func TestBreakerPerDestination(t *testing.T) {
	const open = time.Minute // far longer than the test: no trial reaches /a
	st := newCountingStore(newStore(t))
	up := newUpstream(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/a" {
			w.WriteHeader(http.StatusInternalServerError)
		}
	})
	targets := map[string]*Target{
		"a": {URL: up.URL + "/a", Policy: fastPolicy(100)},
		"b": {URL: up.URL + "/b", Policy: fastPolicy(100)},
	}
	reports := make(chan Report, 200)
	for range 10 {
		enqueue(t, st, storage.Event{Source: "a"})
	}
	d := startDispatcher(t, Config{Store: st, Workers: 2, Targets: targetsOf(targets),
		OnResult: reportsTo(reports), BreakerFailures: 2, BreakerOpen: open})
	waitFor(t, 2*time.Second, "/a's breaker to open", func() bool { return d.breakers.States()[BreakerName(up.URL+"/a")] })
	// a job the breaker let through before it opened may still be on its
	// way to /a: wait until every /a job leased so far has finished (its
	// report) or been handed back, and only then count /a's requests
	aFinished := 0
	waitFor(t, 2*time.Second, "/a's jobs in hand to finish", func() bool {
		for {
			select {
			case r := <-reports:
				if r.Job.Source == "a" {
					aFinished++
				}
			default:
				return st.leases("a") == aFinished+st.releases("a")
			}
		}
	})
	aRequests := up.count()
	for i := range 20 {
		enqueue(t, st, storage.Event{Source: "b"})
		d.Notify()
		start := time.Now()
		for {
			r := nextReport(t, reports, 2*time.Second)
			if r.Job.Source != "b" {
				continue
			}
			if r.Result != storage.Delivered {
				t.Fatalf("b's delivery %d: %v", i, r.Result)
			}
			break
		}
		if took := time.Since(start); took > 500*time.Millisecond {
			t.Fatalf("b's delivery %d took %v while /a's breaker was open: held by another destination's breaker", i, took)
		}
	}
	if n := st.releases("b"); n != 0 {
		t.Errorf("b's jobs were handed back %d times, want 0", n)
	}
	if open := d.breakers.States(); open[BreakerName(up.URL+"/b")] || !open[BreakerName(up.URL+"/a")] {
		t.Errorf("breakers %v: want /a open and /b closed", open)
	}
	for _, r := range up.requests()[aRequests:] {
		if r.path == "/a" {
			t.Errorf("/a got a request while its breaker was open")
		}
	}
}

// TestFirstDeliveryAfterRecovery: with a backlog waiting behind an open
// breaker (the default open period, 2 s), the first delivery reaches the
// upstream within 2 s of its recovery: the breaker lets a trial through
// every 2 s, and the lease loop looks again at that moment rather than at
// its next idle tick. The upstream recovers 1 s after a failed trial, so
// the next trial is due 1 s later; it must come then (the old 10 s period,
// or a loop waking at its idle tick, comes later than the bound).
func TestFirstDeliveryAfterRecovery(t *testing.T) {
	st := newStore(t)
	var down atomic.Bool
	down.Store(true)
	failed := make(chan time.Time, 1000)
	firstOK := make(chan time.Time, 1)
	up := newUpstream(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		if down.Load() {
			failed <- time.Now()
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		select {
		case firstOK <- time.Now():
		default:
		}
	})
	targets := map[string]*Target{"s": {URL: up.URL, Policy: fastPolicy(1000)}}
	for range 200 {
		enqueue(t, st, storage.Event{Source: "s"})
	}
	// the defaults a user gets: the breaker's, and a lease loop that idles
	// a second between looks when nothing is due
	d := startDispatcher(t, Config{Store: st, Workers: 4, Targets: targetsOf(targets),
		Idle: DefaultIdle, BreakerFailures: DefaultBreakerFailures})
	waitFor(t, 3*time.Second, "the breaker to open", func() bool { return d.breakers.States()[BreakerName(up.URL)] })
	// wait for a trial (a request once the breaker is open), then recover
	// halfway to the next one
	for len(failed) > 0 {
		<-failed
	}
	var trial time.Time
	select {
	case trial = <-failed:
	case <-time.After(5 * time.Second):
		t.Fatal("no trial while the breaker was open")
	}
	time.Sleep(time.Until(trial.Add(DefaultBreakerOpen / 2)))
	down.Store(false)
	recovered := time.Now()
	select {
	case at := <-firstOK:
		late := at.Sub(recovered)
		t.Logf("first delivery %v after the upstream recovered (the trial after it was due in %v)", late, time.Until(trial.Add(DefaultBreakerOpen))+late)
		if late > 2*time.Second {
			t.Errorf("first delivery %v after the upstream recovered, want within 2s", late)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no delivery after the upstream recovered")
	}
}
