package delivery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded"
)

// received is one request as the test upstream saw it.
type received struct {
	at     time.Time
	method string
	path   string
	header http.Header
	body   []byte
	length int64
}

// upstream is a real HTTP server that records what it receives; handle
// (nil: answer 200) gets the 1-based number of the request.
type upstream struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []received
}

func newUpstream(t *testing.T, handle func(n int, w http.ResponseWriter, r *http.Request)) *upstream {
	t.Helper()
	u := new(upstream)
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.reqs = append(u.reqs, received{
			at: time.Now(), method: r.Method, path: r.URL.Path,
			header: r.Header.Clone(), body: body, length: r.ContentLength,
		})
		n := len(u.reqs)
		u.mu.Unlock()
		if handle != nil {
			handle(n, w, r)
		}
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.reqs)
}

func (u *upstream) requests() []received {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.reqs)
}

func status(code int) func(int, http.ResponseWriter, *http.Request) {
	return func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }
}

// blockUntil makes a handler that holds each request until release is
// closed (or the client gives up), then answers 200.
func blockUntil(release <-chan struct{}) func(int, http.ResponseWriter, *http.Request) {
	return func(_ int, w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}
}

// newRelease returns a channel for blockUntil and a func closing it (once).
// Register unblock with t.Cleanup after the upstream is made, so that it
// runs before the upstream server closes (which waits for its handlers).
func newRelease() (release chan struct{}, unblock func()) {
	release = make(chan struct{})
	var once sync.Once
	return release, func() { once.Do(func() { close(release) }) }
}

func newStore(t *testing.T) *embedded.Store {
	t.Helper()
	st, err := embedded.Open(filepath.Join(t.TempDir(), "hookline.db"), embedded.Options{})
	if err != nil {
		t.Fatalf("opening the store: %v", err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("closing the store: %v", err)
		}
	})
	return st
}

// enqueue stores ev as a due job, filling in its ID, event ID and time.
func enqueue(t *testing.T, st storage.Store, ev storage.Event) storage.Event {
	t.Helper()
	id, err := uuid.NewV7()
	if err != nil {
		t.Fatalf("uuid: %v", err)
	}
	ev.ID = id.String()
	if ev.EventID == "" {
		ev.EventID = "evt-" + ev.ID
	}
	ev.Dedupe = true
	if ev.ReceivedAt.IsZero() {
		ev.ReceivedAt = time.Now()
	}
	res, err := st.Enqueue(context.Background(), &ev, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	if res.Duplicate {
		t.Fatalf("Enqueue: %s/%s is a duplicate", ev.Source, ev.EventID)
	}
	return ev
}

func lookup(t *testing.T, st storage.Store, ev storage.Event) *storage.EventInfo {
	t.Helper()
	info, err := st.Lookup(context.Background(), ev.Source, ev.EventID)
	if err != nil {
		t.Fatalf("Lookup(%s, %s): %v", ev.Source, ev.EventID, err)
	}
	return info
}

func counts(t *testing.T, st storage.Store) storage.Counts {
	t.Helper()
	c, err := st.Counts(context.Background())
	if err != nil {
		t.Fatalf("Counts: %v", err)
	}
	return c
}

// targetsOf is Config.Targets of targets keyed "source" (its default
// destination) or "source/destination"; a nil target is left out (not
// configured).
func targetsOf(targets map[string]*Target) map[string]map[string]*Target {
	out := map[string]map[string]*Target{}
	for key, t := range targets {
		if t == nil {
			continue
		}
		src, dest, ok := strings.Cut(key, "/")
		if !ok {
			dest = storage.DefaultDestination
		}
		if out[src] == nil {
			out[src] = map[string]*Target{}
		}
		out[src][dest] = t
	}
	return out
}

// fitTimeouts gives the targets written by hand without a timeout the one
// NewTarget would give them under cfg's lease.
func fitTimeouts(cfg Config) Config {
	for _, dests := range cfg.Targets {
		for _, target := range dests {
			if target.Timeout == 0 {
				target.Timeout = EffectiveTimeout(0, cfg.Lease)
			}
		}
	}
	return cfg
}

// pausedBy is Config.Holds pausing as paused says, with no catch-up.
type pausedBy func(source, destination string) bool

func (p pausedBy) Paused(source, destination string) bool { return p(source, destination) }
func (pausedBy) CatchingUp(string, string) bool           { return false }
func (pausedBy) TenantPaused(string, string) bool         { return false }
func (pausedBy) PausedTenants(string) []string            { return nil }

// fastPolicy retries after 10ms, up to attempts attempts.
func fastPolicy(attempts int) Policy {
	return Policy{MaxAttempts: attempts, Initial: 10 * time.Millisecond, Max: 10 * time.Millisecond, Multiplier: 2}
}

// startDispatcher starts a dispatcher polling the store every 20ms, with
// the circuit breaker out of the way unless cfg sets it; it is stopped
// when the test ends.
func startDispatcher(t *testing.T, cfg Config) *Dispatcher {
	t.Helper()
	if cfg.Idle == 0 {
		cfg.Idle = 20 * time.Millisecond
	}
	if cfg.BreakerFailures == 0 {
		cfg.BreakerFailures = 1000
	}
	d := New(fitTimeouts(cfg))
	d.Start()
	t.Cleanup(func() { d.Stop(100 * time.Millisecond) })
	return d
}

func reportsTo(ch chan<- Report) func(Report) {
	return func(r Report) { ch <- r }
}

func nextReport(t *testing.T, ch <-chan Report, timeout time.Duration) Report {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(timeout):
		t.Fatalf("no delivery report within %v", timeout)
		return Report{}
	}
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestDispatcherDelivers(t *testing.T) {
	st := newStore(t)
	up := newUpstream(t, status(http.StatusNoContent))
	reports := make(chan Report, 10)
	d := startDispatcher(t, Config{
		Store: st,
		Targets: targetsOf(map[string]*Target{
			"github": {URL: up.URL + "/hooks/github", Timeout: time.Second, Policy: fastPolicy(3)},
		}),
		OnResult: reportsTo(reports),
	})

	body := []byte("{\"action\":\"opened\",\"n\":1}\n\x00\xff not only JSON")
	receivedAt := time.Date(2025, 6, 1, 13, 4, 5, 999, time.FixedZone("CET", 3600))
	ev := enqueue(t, st, storage.Event{
		EventID:  "delivery-42",
		Source:   "github",
		Type:     "pull_request.opened",
		Upstream: "http://127.0.0.1:1/not-used-when-resolved",
		Headers: http.Header{
			"Content-Type":         {"application/json"},
			"X-Webhook-Event-Type": {"forged.by.the.sender"}, // replaced by the stored type
			"X-Github-Delivery":    {"delivery-42"},
			"X-Hub-Signature-256":  {"sha256=abc"},
			"X-Multi":              {"one", "two"},
			"Content-Length":       {"3"}, // stale: must not cut the body
		},
		Body:       body,
		ReceivedAt: receivedAt,
	})
	d.Notify()

	rep := nextReport(t, reports, 5*time.Second)
	if rep.Result != storage.Delivered || rep.Class != Success {
		t.Fatalf("report: result %v class %v, expected delivered", rep.Result, rep.Class)
	}

	reqs := up.requests()
	if len(reqs) != 1 {
		t.Fatalf("upstream got %d requests, expected 1", len(reqs))
	}
	r := reqs[0]
	if r.method != http.MethodPost {
		t.Errorf("method %s, expected POST", r.method)
	}
	if r.path != "/hooks/github" {
		t.Errorf("path %q, expected the resolved target's /hooks/github", r.path)
	}
	if !bytes.Equal(r.body, body) {
		t.Errorf("body %q, expected %q", r.body, body)
	}
	if r.length != int64(len(body)) {
		t.Errorf("Content-Length %d, expected %d", r.length, len(body))
	}
	for i, tc := range []struct {
		header string
		expect []string
	}{
		{header: "Webhook-Id", expect: []string{"delivery-42"}},
		{header: "X-Webhook-Source", expect: []string{"github"}},
		{header: "X-Webhook-Event-Type", expect: []string{"pull_request.opened"}},
		{header: "X-Webhook-Attempt", expect: []string{"1"}},
		{header: "X-Webhook-Received-At", expect: []string{"2025-06-01T12:04:05Z"}},
		{header: "Content-Type", expect: []string{"application/json"}},
		{header: "X-Github-Delivery", expect: []string{"delivery-42"}},
		{header: "X-Hub-Signature-256", expect: []string{"sha256=abc"}},
		{header: "X-Multi", expect: []string{"one", "two"}},
	} {
		if actual := r.header.Values(tc.header); !slices.Equal(actual, tc.expect) {
			t.Errorf("Test %d: header %s = %q, expected %q", i, tc.header, actual, tc.expect)
		}
	}

	info := lookup(t, st, ev)
	if info.Status != storage.StatusDelivered {
		t.Errorf("status %s, expected delivered", info.Status)
	}
	if len(info.Attempts) != 1 || info.Attempts[0].N != 1 || info.Attempts[0].Status != http.StatusNoContent || info.Attempts[0].Error != "" {
		t.Errorf("attempts %+v, expected one successful attempt with status 204", info.Attempts)
	}
	if c := counts(t, st); c.Queued != 0 || c.InFlight != 0 || c.Dead != 0 {
		t.Errorf("counts %+v, expected an empty queue", c)
	}
}

func TestDispatcherRetriesTransient(t *testing.T) {
	st := newStore(t)
	up := newUpstream(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	reports := make(chan Report, 10)
	d := startDispatcher(t, Config{
		Store:    st,
		Targets:  targetsOf(map[string]*Target{"stripe": {URL: up.URL, Policy: fastPolicy(5)}}),
		OnResult: reportsTo(reports),
	})
	ev := enqueue(t, st, storage.Event{Source: "stripe", Body: []byte(`{}`)})
	d.Notify()

	for i, expect := range []struct {
		result storage.Result
		class  Class
		status int
	}{
		{result: storage.Retry, class: Transient, status: http.StatusServiceUnavailable},
		{result: storage.Delivered, class: Success, status: http.StatusOK},
	} {
		rep := nextReport(t, reports, 5*time.Second)
		if rep.Result != expect.result || rep.Class != expect.class {
			t.Fatalf("report %d: result %v class %v, expected %v %v", i, rep.Result, rep.Class, expect.result, expect.class)
		}
		if rep.Attempt == nil || rep.Attempt.N != i+1 || rep.Attempt.Status != expect.status {
			t.Errorf("report %d: attempt %+v, expected number %d with status %d", i, rep.Attempt, i+1, expect.status)
		}
	}

	info := lookup(t, st, ev)
	if info.Status != storage.StatusDelivered {
		t.Errorf("status %s, expected delivered", info.Status)
	}
	expect := []storage.Attempt{
		{N: 1, Status: http.StatusServiceUnavailable, Error: "upstream answered 503 Service Unavailable"},
		{N: 2, Status: http.StatusOK},
	}
	if len(info.Attempts) != len(expect) {
		t.Fatalf("attempts %+v, expected %d", info.Attempts, len(expect))
	}
	for i, a := range info.Attempts {
		if a.N != expect[i].N || a.Status != expect[i].Status || a.Error != expect[i].Error || a.At.IsZero() {
			t.Errorf("attempt %d: %+v, expected %+v", i, a, expect[i])
		}
	}
	var attemptHeaders []string
	for _, r := range up.requests() {
		attemptHeaders = append(attemptHeaders, r.header.Get("X-Webhook-Attempt"))
	}
	if !slices.Equal(attemptHeaders, []string{"1", "2"}) {
		t.Errorf("X-Webhook-Attempt headers %q, expected [1 2]", attemptHeaders)
	}
}

func TestDispatcherGivesUp(t *testing.T) {
	st := newStore(t)
	up := newUpstream(t, status(http.StatusInternalServerError))
	reports := make(chan Report, 10)
	d := startDispatcher(t, Config{
		Store:    st,
		Targets:  targetsOf(map[string]*Target{"shop": {URL: up.URL, Policy: fastPolicy(3)}}),
		OnResult: reportsTo(reports),
	})
	ev := enqueue(t, st, storage.Event{Source: "shop", Body: []byte(`{"order":1}`)})
	d.Notify()

	var results []storage.Result
	for range 3 {
		results = append(results, nextReport(t, reports, 5*time.Second).Result)
	}
	if expect := []storage.Result{storage.Retry, storage.Retry, storage.Dead}; !slices.Equal(results, expect) {
		t.Fatalf("results %v, expected %v", results, expect)
	}
	time.Sleep(100 * time.Millisecond) // a fourth attempt would come within 10ms
	if n := up.count(); n != 3 {
		t.Errorf("upstream got %d requests, expected 3", n)
	}

	info := lookup(t, st, ev)
	if info.Status != storage.StatusDead || len(info.Attempts) != 3 {
		t.Errorf("status %s with %d attempts, expected dead after 3", info.Status, len(info.Attempts))
	}
	e, err := st.DLQGet(context.Background(), ev.ID)
	if err != nil {
		t.Fatalf("DLQGet: %v", err)
	}
	if expect := "gave up after 3 attempts: upstream answered 500 Internal Server Error"; e.Error != expect {
		t.Errorf("DLQ error %q, expected %q", e.Error, expect)
	}
	if !bytes.Equal(e.Payload, []byte(`{"order":1}`)) || e.LastStatus != http.StatusInternalServerError {
		t.Errorf("DLQ entry payload %q, last status %d", e.Payload, e.LastStatus)
	}
	if c := counts(t, st); c.Dead != 1 || c.Queued != 0 || c.InFlight != 0 {
		t.Errorf("counts %+v, expected one dead entry and nothing queued", c)
	}
}

// Retry-After defers the retry past the policy's delay, but only on 429
// and 503.
func TestDispatcherRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		atLeast,
		atMost time.Duration
	}{
		{name: "429", status: http.StatusTooManyRequests, atLeast: time.Second, atMost: 3 * time.Second},
		{name: "503", status: http.StatusServiceUnavailable, atLeast: time.Second, atMost: 3 * time.Second},
		{name: "500 ignores it", status: http.StatusInternalServerError, atMost: 700 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := newStore(t)
			up := newUpstream(t, func(n int, w http.ResponseWriter, r *http.Request) {
				if n == 1 {
					w.Header().Set("Retry-After", "1")
					w.WriteHeader(tc.status)
				}
			})
			reports := make(chan Report, 10)
			d := startDispatcher(t, Config{
				Store:    st,
				Targets:  targetsOf(map[string]*Target{"api": {URL: up.URL, Policy: fastPolicy(5)}}),
				OnResult: reportsTo(reports),
			})
			ev := enqueue(t, st, storage.Event{Source: "api"})
			d.Notify()

			if r := nextReport(t, reports, 5*time.Second); r.Result != storage.Retry {
				t.Fatalf("first result %v, expected retry", r.Result)
			}
			if tc.atLeast > 0 {
				info := lookup(t, st, ev)
				if wait := time.Until(info.NextAttempt); info.Status != storage.StatusQueued || wait < 500*time.Millisecond {
					t.Errorf("after the first attempt: status %s, next attempt in %v, expected queued for about 1s", info.Status, wait)
				}
			}
			if r := nextReport(t, reports, 5*time.Second); r.Result != storage.Delivered {
				t.Fatalf("second result %v, expected delivered", r.Result)
			}
			reqs := up.requests()
			if len(reqs) != 2 {
				t.Fatalf("upstream got %d requests, expected 2", len(reqs))
			}
			gap := reqs[1].at.Sub(reqs[0].at)
			if gap < tc.atLeast || gap > tc.atMost {
				t.Errorf("retry came %v after the first attempt, expected within [%v, %v]", gap, tc.atLeast, tc.atMost)
			}
		})
	}
}

// An upstream that keeps failing opens its breaker: while it is open no
// request reaches the upstream and jobs are released without using up
// their attempts.
func TestDispatcherCircuitBreaker(t *testing.T) {
	const open = 500 * time.Millisecond
	st := newCountingStore(newStore(t))
	up := newUpstream(t, status(http.StatusBadGateway))
	reports := make(chan Report, 100)
	d := startDispatcher(t, Config{
		Store:           st,
		Targets:         targetsOf(map[string]*Target{"down": {URL: up.URL, Policy: fastPolicy(100)}}),
		OnResult:        reportsTo(reports),
		BreakerFailures: 2,
		BreakerOpen:     open,
	})
	a := enqueue(t, st, storage.Event{Source: "down"})
	d.Notify()
	waitFor(t, 2*time.Second, "two failed attempts", func() bool { return up.count() >= 2 })
	secondAt := up.requests()[1].at

	// the breaker is open now: a new job waits, attempt-free (its lane is
	// held back at the lease: it is not even leased)
	leased := st.leases("down")
	b := enqueue(t, st, storage.Event{Source: "down"})
	d.Notify()
	time.Sleep(100 * time.Millisecond) // lease rounds that must leave a and b alone
	if n := st.leases("down") - leased; n != 0 {
		t.Errorf("%d jobs of the held lane leased while the breaker is open", n)
	}
	if elapsed := time.Since(secondAt); elapsed >= open {
		t.Fatalf("too slow: the checks below must run within the %v the breaker is open (took %v)", open, elapsed)
	}
	if n := up.count(); n != 2 {
		t.Errorf("upstream got %d requests while the breaker was open, expected 2", n)
	}
	if info := lookup(t, st, a); len(info.Attempts) != 2 {
		t.Errorf("first job has %d attempts while the breaker is open, expected 2", len(info.Attempts))
	}
	if info := lookup(t, st, b); len(info.Attempts) != 0 {
		t.Errorf("released job has %d attempts, expected none", len(info.Attempts))
	}

	// after the open period one probe goes through
	waitFor(t, 3*time.Second, "a request after the open period", func() bool { return up.count() >= 3 })
	reqs := up.requests()
	if gap := reqs[2].at.Sub(secondAt); gap < open {
		t.Errorf("upstream was called again %v after the breaker opened, expected no request for %v", gap, open)
	}

	// every recorded attempt is a request the upstream saw: releases cost none
	d.Stop(time.Second)
	attempts := len(lookup(t, st, a).Attempts) + len(lookup(t, st, b).Attempts)
	if n := up.count(); attempts != n {
		t.Errorf("%d attempts recorded for %d upstream requests", attempts, n)
	}
	close(reports)
	nReports := 0
	for r := range reports {
		nReports++
		if r.Attempt == nil {
			t.Errorf("report without an attempt: %+v (releases are not reported)", r)
		}
	}
	if nReports != attempts {
		t.Errorf("%d reports for %d attempts", nReports, attempts)
	}
}

// A job of a source no longer configured (not gated) whose upstream's
// breaker is open is leased, and handed back at once without an attempt,
// due again after half the open period: it does not spin through leases.
func TestDispatcherCircuitBreakerUngated(t *testing.T) {
	const open = 2 * time.Second
	st := newStore(t)
	up := newUpstream(t, status(http.StatusBadGateway))
	reports := make(chan Report, 10)
	d := startDispatcher(t, Config{Store: st, OnResult: reportsTo(reports), BreakerFailures: 1, BreakerOpen: open})
	d.breakers.get(up.URL).Execute(func() (int, error) { return 0, errTransient }) // open
	ev := enqueue(t, st, storage.Event{Source: "removed", Upstream: up.URL})
	d.Notify()
	waitFor(t, time.Second, "the job handed back for a while", func() bool {
		info := lookup(t, st, ev)
		return info.Status == storage.StatusQueued && time.Until(info.NextAttempt) > open/4
	})
	if info := lookup(t, st, ev); len(info.Attempts) != 0 || up.count() != 0 {
		t.Errorf("%d attempts, %d requests while the breaker is open; want none", len(info.Attempts), up.count())
	}
}

// newConcurrencyUpstream is an upstream answering with handle that also
// tracks how many requests it serves at once; maxActive is the most so far.
func newConcurrencyUpstream(t *testing.T, handle func(n int, w http.ResponseWriter, r *http.Request)) (up *upstream, maxActive func() int) {
	var (
		mu             sync.Mutex
		active, maxAct int
	)
	up = newUpstream(t, func(n int, w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		active++
		maxAct = max(maxAct, active)
		mu.Unlock()
		handle(n, w, r)
		mu.Lock()
		active--
		mu.Unlock()
	})
	return up, func() int {
		mu.Lock()
		defer mu.Unlock()
		return maxAct
	}
}

// Without prefetch the dispatcher leases no more jobs than it has workers:
// the rest stay queued, not held under lease.
func TestDispatcherWorkersBound(t *testing.T) {
	st := newStore(t)
	release, unblock := newRelease()
	up, maxActive := newConcurrencyUpstream(t, blockUntil(release))
	t.Cleanup(unblock) // before the upstream closes, after the dispatcher stops
	reports := make(chan Report, 10)
	d := startDispatcher(t, Config{
		Store:    st,
		Workers:  2,
		Prefetch: -1,
		Targets:  targetsOf(map[string]*Target{"busy": {URL: up.URL, Policy: fastPolicy(3)}}),
		OnResult: reportsTo(reports),
	})
	var evs []storage.Event
	for range 5 {
		evs = append(evs, enqueue(t, st, storage.Event{Source: "busy"}))
	}
	d.Notify()

	waitFor(t, 2*time.Second, "two requests", func() bool { return up.count() >= 2 })
	time.Sleep(200 * time.Millisecond) // room for a third one, if it were to come
	if n := up.count(); n != 2 {
		t.Errorf("upstream got %d requests with 2 workers, expected 2", n)
	}
	if c := counts(t, st); c.InFlight != 2 || c.Queued != 3 {
		t.Errorf("counts %+v, expected 2 in flight and 3 queued", c)
	}

	unblock()
	for range 5 {
		if r := nextReport(t, reports, 5*time.Second); r.Result != storage.Delivered {
			t.Errorf("result %v, expected delivered", r.Result)
		}
	}
	for _, ev := range evs {
		if info := lookup(t, st, ev); info.Status != storage.StatusDelivered || len(info.Attempts) != 1 {
			t.Errorf("%s: status %s with %d attempts, expected delivered at the first", ev.EventID, info.Status, len(info.Attempts))
		}
	}
	if n := maxActive(); n > 2 {
		t.Errorf("%d concurrent upstream requests with 2 workers", n)
	}
}

// Stop waits up to grace for a delivery in progress, then cancels it; the
// job is handed back at once, without an attempt, for another instance.
func TestDispatcherStopReleases(t *testing.T) {
	const grace = 300 * time.Millisecond
	st := newStore(t)
	release, unblock := newRelease()
	hung := newUpstream(t, blockUntil(release))
	t.Cleanup(unblock)
	reports := make(chan Report, 10)
	d := startDispatcher(t, Config{
		Store:    st,
		Targets:  targetsOf(map[string]*Target{"slow": {URL: hung.URL, Timeout: 30 * time.Second, Policy: fastPolicy(3)}}),
		OnResult: reportsTo(reports),
	})
	ev := enqueue(t, st, storage.Event{Source: "slow", Body: []byte(`{"id":7}`)})
	d.Notify()
	waitFor(t, 2*time.Second, "the delivery to start", func() bool { return hung.count() == 1 })

	start := time.Now()
	d.Stop(grace)
	if took := time.Since(start); took < grace || took > grace+time.Second {
		t.Errorf("Stop(%v) took %v", grace, took)
	}
	select {
	case r := <-reports:
		t.Errorf("a cancelled delivery was reported: %+v", r)
	default:
	}
	info := lookup(t, st, ev)
	if info.Status != storage.StatusQueued || len(info.Attempts) != 0 {
		t.Errorf("after Stop: status %s with %d attempts, expected queued with none", info.Status, len(info.Attempts))
	}
	if info.NextAttempt.After(time.Now()) {
		t.Errorf("after Stop: next attempt at %v, expected due now", info.NextAttempt)
	}

	// another dispatcher on the same store delivers it right away (the
	// lease of the first one would have lasted a minute)
	good := newUpstream(t, nil)
	reports2 := make(chan Report, 10)
	d2 := startDispatcher(t, Config{
		Store:    st,
		Targets:  targetsOf(map[string]*Target{"slow": {URL: good.URL, Policy: fastPolicy(3)}}),
		OnResult: reportsTo(reports2),
	})
	d2.Notify()
	if r := nextReport(t, reports2, 2*time.Second); r.Result != storage.Delivered {
		t.Fatalf("result %v, expected delivered", r.Result)
	}
	reqs := good.requests()
	if len(reqs) != 1 || reqs[0].header.Get("X-Webhook-Attempt") != "1" || string(reqs[0].body) != `{"id":7}` {
		t.Errorf("second upstream got %d requests (%+v), expected one first attempt", len(reqs), reqs)
	}
	if info := lookup(t, st, ev); info.Status != storage.StatusDelivered || len(info.Attempts) != 1 {
		t.Errorf("status %s with %d attempts, expected delivered with one", info.Status, len(info.Attempts))
	}
	if n := hung.count(); n != 1 {
		t.Errorf("hung upstream got %d requests, expected 1", n)
	}
}

func TestDispatcherStopIdle(t *testing.T) {
	// Stop before Start does nothing
	New(Config{Store: newStore(t)}).Stop(time.Second)

	d := startDispatcher(t, Config{Store: newStore(t), Targets: targetsOf(nil)})
	start := time.Now()
	d.Stop(5 * time.Second)
	if took := time.Since(start); took > time.Second {
		t.Errorf("Stop with nothing in flight took %v, expected no wait for the grace period", took)
	}
}

// TestDispatcherStopEndsGoroutines: once Stop returns after deliveries,
// none of the dispatcher's goroutines (lease loop, workers, recorders) is
// left: a reload stops one dispatcher and starts another, so one left
// behind per reload would pile up.
func TestDispatcherStopEndsGoroutines(t *testing.T) {
	st := newStore(t)
	up := newUpstream(t, status(http.StatusOK))
	reports := make(chan Report, 10)
	d := startDispatcher(t, Config{Store: st, Workers: 3, OnResult: reportsTo(reports),
		Targets: targetsOf(map[string]*Target{"s": {URL: up.URL, Timeout: time.Second, Policy: fastPolicy(3)}})})
	if n := dispatcherGoroutines(); n < 3+cap(d.slots) {
		t.Fatalf("%d dispatcher goroutines running, expected at least the workers and a recorder per slot (%d)", n, 3+cap(d.slots))
	}
	deliverAll(t, st, d, reports, up.URL, 5)
	d.Stop(time.Second)
	waitFor(t, 2*time.Second, "the dispatcher's goroutines to end after Stop", func() bool { return dispatcherGoroutines() == 0 })
}

// deliverAll enqueues n events of source s for upstream and waits for the
// reports of their delivery.
func deliverAll(t *testing.T, st storage.Store, d *Dispatcher, reports <-chan Report, upstream string, n int) {
	t.Helper()
	for i := range n {
		enqueue(t, st, storage.Event{EventID: fmt.Sprint("e", i), Source: "s", Upstream: upstream, ReceivedAt: time.Now()})
	}
	d.Notify()
	for range n {
		if rep := nextReport(t, reports, 5*time.Second); rep.Result != storage.Delivered {
			t.Fatalf("report %+v, expected delivered", rep)
		}
	}
}

// TestDispatcherStopClosesConnections: Stop closes the idle keep-alive
// connections of the dispatcher's own client to the upstreams, instead of
// leaving them to their idle timeout after a reload.
func TestDispatcherStopClosesConnections(t *testing.T) {
	var mu sync.Mutex
	open := map[net.Conn]bool{}
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	up.Config.ConnState = func(c net.Conn, s http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		switch s {
		case http.StateNew:
			open[c] = true
		case http.StateClosed, http.StateHijacked:
			delete(open, c)
		}
	}
	up.Start()
	t.Cleanup(up.Close)
	openConns := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(open)
	}
	st := newStore(t)
	reports := make(chan Report, 10)
	d := startDispatcher(t, Config{Store: st, Workers: 3, OnResult: reportsTo(reports), Targets: targetsOf(nil)})
	deliverAll(t, st, d, reports, up.URL, 5)
	if openConns() == 0 {
		t.Fatal("no connection to the upstream open after the deliveries: the check below proves nothing")
	}
	d.Stop(time.Second)
	waitFor(t, 2*time.Second, "the connections to the upstream to close after Stop", func() bool { return openConns() == 0 })
}

// TestDispatcherRecordersBounded: a dispatcher with many workers starts
// maxRecorders recorders, not one per slot (Workers+Prefetch: 1,000 here).
func TestDispatcherRecordersBounded(t *testing.T) {
	d := startDispatcher(t, Config{Store: newStore(t), Workers: 200, Targets: targetsOf(nil)})
	if cap(d.slots) <= maxRecorders {
		t.Fatalf("%d slots: the test needs more than maxRecorders (%d)", cap(d.slots), maxRecorders)
	}
	// the workers, the recorders, the lease loop and the goroutine that
	// ends the recorders (a former test's may take a moment to end)
	want := 200 + maxRecorders + 2
	waitFor(t, 2*time.Second, fmt.Sprintf("%d dispatcher goroutines, not one recorder per slot", want),
		func() bool { return dispatcherGoroutines() == want })
	d.Stop(time.Second)
}

// dispatcherGoroutines counts the goroutines running a Dispatcher method.
func dispatcherGoroutines() int {
	buf := make([]byte, 1<<20)
	n := 0
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "delivery.(*Dispatcher)") && !strings.Contains(g, "dispatcherGoroutines") {
			n++
		}
	}
	return n
}

// Without a resolved target the job's stored upstream is used.
func TestDispatcherUnresolvedUsesStoredUpstream(t *testing.T) {
	for i, targets := range []map[string]*Target{
		nil,
		{"other": {URL: "http://127.0.0.1:1/wrong"}},
		{"removed/other": {URL: "http://127.0.0.1:1/wrong"}},
	} {
		st := newStore(t)
		up := newUpstream(t, nil)
		reports := make(chan Report, 10)
		d := startDispatcher(t, Config{Store: st, Targets: targetsOf(targets), OnResult: reportsTo(reports)})
		ev := enqueue(t, st, storage.Event{Source: "removed", Upstream: up.URL + "/stored/path", Body: []byte("x")})
		d.Notify()
		r := nextReport(t, reports, 5*time.Second)
		if r.Result != storage.Delivered {
			t.Errorf("Test %d: result %v (%+v), expected delivered", i, r.Result, r.Attempt)
			continue
		}
		if r.Upstream != ev.Upstream {
			t.Errorf("Test %d: reported upstream %q, expected %q", i, r.Upstream, ev.Upstream)
		}
		if reqs := up.requests(); len(reqs) != 1 || reqs[0].path != "/stored/path" {
			t.Errorf("Test %d: stored upstream got %+v, expected one request to /stored/path", i, reqs)
		}
		d.Stop(time.Second)
	}
}

func TestDispatcherOnResult(t *testing.T) {
	st := newStore(t)
	ok := newUpstream(t, status(http.StatusAccepted))
	bad := newUpstream(t, status(http.StatusUnprocessableEntity))
	reports := make(chan Report, 10)
	targets := map[string]*Target{
		"ok":  {URL: ok.URL + "/ok", Policy: fastPolicy(5)},
		"bad": {URL: bad.URL + "/bad", Policy: fastPolicy(5)},
	}
	d := startDispatcher(t, Config{Store: st, Targets: targetsOf(targets), OnResult: reportsTo(reports)})
	evs := map[string]storage.Event{
		"ok":  enqueue(t, st, storage.Event{Source: "ok", EventID: "e-ok"}),
		"bad": enqueue(t, st, storage.Event{Source: "bad", EventID: "e-bad"}),
	}
	d.Notify()

	got := make(map[string]Report)
	for range 2 {
		r := nextReport(t, reports, 5*time.Second)
		if r.Job == nil {
			t.Fatalf("report without a job: %+v", r)
		}
		got[r.Job.Source] = r
	}
	for i, tc := range []struct {
		source string
		result storage.Result
		class  Class
		status int
		error  string
	}{
		{source: "ok", result: storage.Delivered, class: Success, status: http.StatusAccepted},
		{source: "bad", result: storage.Dead, class: Permanent, status: http.StatusUnprocessableEntity,
			error: "upstream answered 422 Unprocessable Entity"},
	} {
		r, found := got[tc.source]
		if !found {
			t.Errorf("Test %d: no report for %s", i, tc.source)
			continue
		}
		if r.Result != tc.result || r.Class != tc.class {
			t.Errorf("Test %d: result %v class %v, expected %v %v", i, r.Result, r.Class, tc.result, tc.class)
		}
		if r.Job.EventID != evs[tc.source].EventID || r.Upstream != targets[tc.source].URL {
			t.Errorf("Test %d: report for event %q upstream %q", i, r.Job.EventID, r.Upstream)
		}
		if r.Attempt == nil || r.Attempt.N != 1 || r.Attempt.Status != tc.status || r.Attempt.Error != tc.error {
			t.Errorf("Test %d: attempt %+v, expected the first with status %d and error %q", i, r.Attempt, tc.status, tc.error)
		}
	}
	// a permanent failure is not retried
	time.Sleep(100 * time.Millisecond)
	if n := bad.count(); n != 1 {
		t.Errorf("permanently failing upstream got %d requests, expected 1", n)
	}
	e, err := st.DLQGet(context.Background(), evs["bad"].ID)
	if err != nil {
		t.Fatalf("DLQGet: %v", err)
	}
	if expect := "permanent failure: upstream answered 422 Unprocessable Entity"; e.Error != expect {
		t.Errorf("DLQ error %q, expected %q", e.Error, expect)
	}
	if _, err := st.DLQGet(context.Background(), evs["ok"].ID); !errors.Is(err, storage.ErrDLQNotFound) {
		t.Errorf("DLQGet of the delivered event: %v, expected storage.ErrDLQNotFound", err)
	}
}

// With prefetch, at most Workers+Prefetch jobs are leased (the rest stay
// queued), concurrency stays at Workers, and every job is delivered once.
func TestDispatcherPrefetchBound(t *testing.T) {
	st := newStore(t)
	release, unblock := newRelease()
	up, maxActive := newConcurrencyUpstream(t, blockUntil(release))
	t.Cleanup(unblock)
	reports := make(chan Report, 20)
	// all queued before the dispatcher starts: its first lease takes a full
	// batch (with some of them leased early, while the workers hang, the
	// last free slot waits for a batch worth a lease and is never used)
	for range 8 {
		enqueue(t, st, storage.Event{Source: "busy"})
	}
	startDispatcher(t, Config{
		Store:    st,
		Workers:  2,
		Prefetch: 3,
		Targets:  targetsOf(map[string]*Target{"busy": {URL: up.URL, Policy: fastPolicy(3)}}),
		OnResult: reportsTo(reports),
	})
	waitFor(t, 2*time.Second, "two requests", func() bool { return up.count() >= 2 })
	waitFor(t, 2*time.Second, "prefetch", func() bool { return counts(t, st).InFlight == 5 })
	time.Sleep(200 * time.Millisecond)
	if c := counts(t, st); c.InFlight != 5 || c.Queued != 3 {
		t.Errorf("counts %+v, expected 5 leased (2 workers + 3 prefetched) and 3 queued", c)
	}
	if n := up.count(); n != 2 {
		t.Errorf("upstream got %d requests with 2 workers", n)
	}
	unblock()
	for range 8 {
		if r := nextReport(t, reports, 5*time.Second); r.Result != storage.Delivered {
			t.Errorf("result %v, expected delivered", r.Result)
		}
	}
	if n := up.count(); n != 8 {
		t.Errorf("upstream got %d requests for 8 jobs", n)
	}
	if n := maxActive(); n > 2 {
		t.Errorf("%d concurrent upstream requests with 2 workers", n)
	}
}

// BenchmarkDrain measures how fast a backlog of 2000 jobs in the embedded
// store is delivered to a local upstream, with and without prefetch.
func BenchmarkDrain(b *testing.B) {
	for _, prefetch := range []int{-1, 0} {
		name := "prefetch=workers"
		if prefetch < 0 {
			name = "prefetch=none"
		}
		b.Run(name, func(b *testing.B) {
			const backlog = 2000
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
			}))
			defer up.Close()
			var total time.Duration
			for range b.N {
				st, err := embedded.Open(filepath.Join(b.TempDir(), "d.db"), embedded.Options{})
				if err != nil {
					b.Fatal(err)
				}
				for i := range backlog {
					ev := &storage.Event{ID: fmt.Sprintf("%08d", i), EventID: fmt.Sprint(i), Source: "s", Upstream: up.URL, Body: make([]byte, 1024)}
					if _, err := st.Enqueue(context.Background(), ev, time.Now()); err != nil {
						b.Fatal(err)
					}
				}
				var done atomic.Int64
				finished := make(chan struct{})
				d := New(Config{Store: st, Workers: 16, Prefetch: prefetch,
					OnResult: func(Report) {
						if done.Add(1) == backlog {
							close(finished)
						}
					}})
				start := time.Now()
				d.Start()
				<-finished
				total += time.Since(start)
				d.Stop(time.Second)
				st.Close()
			}
			b.ReportMetric(float64(backlog*b.N)/total.Seconds(), "events/s")
		})
	}
}

// A prefetched job that waited so long that its lease could run out during
// the attempt is handed back, not delivered: every job reaches the upstream
// exactly once and no outcome is lost to an expired lease.
func TestDispatcherReleasesJobsNearLeaseEnd(t *testing.T) {
	st := newStore(t)
	var mu sync.Mutex
	seen := map[string]int{}
	up := newUpstream(t, func(n int, w http.ResponseWriter, r *http.Request) {
		time.Sleep(400 * time.Millisecond)
		mu.Lock()
		seen[r.Header.Get("Webhook-Id")]++
		mu.Unlock()
	})
	reports := make(chan Report, 20)
	startDispatcher(t, Config{
		Store:    st,
		Workers:  1,
		Prefetch: 4,
		Lease:    1500 * time.Millisecond,
		Targets:  targetsOf(map[string]*Target{"slow": {URL: up.URL, Timeout: time.Second, Policy: fastPolicy(3)}}),
		OnResult: reportsTo(reports),
	}).Notify()
	for range 5 {
		enqueue(t, st, storage.Event{Source: "slow"})
	}
	for range 5 {
		if r := nextReport(t, reports, 20*time.Second); r.Result != storage.Delivered {
			t.Fatalf("result %v", r.Result)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s delivered %d times", id, n)
		}
	}
	if len(seen) != 5 {
		t.Errorf("%d distinct events delivered, want 5", len(seen))
	}
}

// While ingest is busy (Config.Busy), at most Yield jobs are under lease
// and in flight, and deliveries still go on at that width; once it is not,
// the workers catch up at full width.
func TestDispatcherYieldsToBusyIngest(t *testing.T) {
	st := newStore(t)
	up, maxActive := newConcurrencyUpstream(t, func(int, http.ResponseWriter, *http.Request) {
		time.Sleep(20 * time.Millisecond)
	})
	const jobs = 60
	for range jobs {
		enqueue(t, st, storage.Event{Source: "s"})
	}
	var busy atomic.Bool
	busy.Store(true)
	reports := make(chan Report, jobs)
	startDispatcher(t, Config{
		Store:    st,
		Workers:  8,
		Yield:    2,
		Busy:     busy.Load,
		Targets:  targetsOf(map[string]*Target{"s": {URL: up.URL, Policy: fastPolicy(3)}}),
		OnResult: reportsTo(reports),
	})
	for i := range 10 {
		if r := nextReport(t, reports, 5*time.Second); r.Result != storage.Delivered {
			t.Fatalf("report %d: result %v, expected delivered", i, r.Result)
		}
		if c := counts(t, st); c.InFlight > 2 {
			t.Errorf("%d jobs under lease while ingest is busy, want at most Yield (2)", c.InFlight)
		}
	}
	if n := maxActive(); n > 2 {
		t.Errorf("%d concurrent deliveries while ingest is busy, want at most Yield (2)", n)
	}
	busy.Store(false)
	for i := range jobs - 10 {
		if r := nextReport(t, reports, 5*time.Second); r.Result != storage.Delivered {
			t.Fatalf("report %d: result %v, expected delivered", 10+i, r.Result)
		}
	}
	if n := maxActive(); n < 4 {
		t.Errorf("at most %d concurrent deliveries once ingest is calm, want the workers' width (8)", n)
	}
	if n := up.count(); n != jobs {
		t.Errorf("upstream got %d requests for %d jobs", n, jobs)
	}
}
