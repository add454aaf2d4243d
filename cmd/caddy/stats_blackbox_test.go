package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// stop stops the node gracefully, by POST /stop on its admin API ("admin")
// or by SIGTERM ("sigterm"), and waits for the process to exit with
// status 0. A node still running after 20s is killed and the test fails.
func (n *node) stop(t *testing.T, how string) {
	t.Helper()
	var stopped bool
	n.exitOnce.Do(func() {
		switch how {
		case "sigterm":
			if err := n.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Errorf("SIGTERM: %v", err)
			}
		case "admin":
			if code := adminDo(t, n.adminP, "POST", "/stop", "", nil); code != http.StatusOK {
				t.Errorf("POST /stop: %d", code)
			}
		default:
			t.Errorf("stop %q: want admin or sigterm", how)
		}
		select {
		case <-n.exited:
			stopped = true
		case <-time.After(20 * time.Second):
			_ = n.cmd.Process.Signal(syscall.SIGKILL)
			<-n.exited
		}
	})
	if !stopped {
		t.Fatalf("caddy did not stop within 20s (%s):\n%s", how, n.logs)
	}
	if code := n.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("caddy stopped (%s) with status %d:\n%s", how, code, n.logs)
	}
}

// statsUpstream answers 422 (permanent: dead-lettered) to the events whose
// id starts with "dead-", 503 to the first attempt of those starting with
// "flaky-" (then 200: a retry), and 200 to the others; it counts the
// attempts by id.
type statsUpstream struct {
	*httptest.Server
	mu       sync.Mutex
	attempts map[string]int
}

func newStatsUpstream(t *testing.T) *statsUpstream {
	u := &statsUpstream{attempts: map[string]int{}}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		id := r.Header.Get("Webhook-Id")
		u.mu.Lock()
		u.attempts[id]++
		n := u.attempts[id]
		u.mu.Unlock()
		switch {
		case strings.HasPrefix(id, "dead-"):
			w.WriteHeader(http.StatusUnprocessableEntity)
		case strings.HasPrefix(id, "flaky-") && n == 1:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(u.Close)
	return u
}

// statsSnapshot is what the test compares across restarts: the range
// stats and the series of one fixed window, as the admin API answers them.
type statsSnapshot struct {
	Range  map[string]any
	Series map[string]any
}

// snapshot reads the range stats and the series (1m steps) of [from, to),
// the series' points without their dlq_size: a gauge each node samples at
// start and every minute, not a counter.
func snapshot(t *testing.T, adminP int, from, to time.Time) statsSnapshot {
	t.Helper()
	q := url.Values{"from": {from.Format(time.RFC3339)}, "to": {to.Format(time.RFC3339)}}
	var s statsSnapshot
	// a node just started may listen before its webhooks app has started
	// (Caddy starts its apps in no set order): 404 "not running" until then
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		s.Range = nil // an answer is decoded into a fresh map
		code := adminDo(t, adminP, "GET", "/webhooks/stats?"+q.Encode(), "", &s.Range)
		if code == http.StatusOK {
			break
		}
		if code != http.StatusNotFound || time.Now().After(deadline) {
			t.Fatalf("range stats: %d %v", code, s.Range)
		}
	}
	q.Set("step", "1m")
	if code := adminDo(t, adminP, "GET", "/webhooks/stats/series?"+q.Encode(), "", &s.Series); code != http.StatusOK {
		t.Fatalf("series: %d %v", code, s.Series)
	}
	points, _ := s.Series["points"].([]any)
	if len(points) == 0 {
		t.Fatalf("series without points: %v", s.Series)
	}
	for _, p := range points {
		delete(p.(map[string]any), "dlq_size")
	}
	return s
}

// seriesTotals sums the series' points' counters by name (failed by
// class as "failed.<class>").
func seriesTotals(s map[string]any) map[string]float64 {
	tot := map[string]float64{}
	points, _ := s["points"].([]any)
	for _, p := range points {
		for k, v := range p.(map[string]any) {
			switch v := v.(type) {
			case float64:
				if k == "received" || k == "delivered" || k == "dead" || k == "retries" {
					tot[k] += v
				}
			case map[string]any:
				if k == "failed" {
					for class, n := range v {
						tot["failed."+class] += n.(float64)
					}
				}
			}
		}
	}
	return tot
}

// rangeCounts are the range stats' sums the test expects.
func rangeCounts(r map[string]any) string {
	return fmt.Sprintf("total=%v completed=%v dead_letter=%v failed=%v total_retries=%v pending=%v",
		r["total"], r["completed"], r["dead_letter"], r["failed"], r["total_retries"], r["pending"])
}

// TestStatsSurviveRestart: on the embedded store, the counters behind the
// range stats and the series are the same after Caddy is stopped
// gracefully and started again on the same data: nothing lost, nothing
// counted twice. The counts of deliveries that finished just before a
// graceful stop (SIGTERM), not yet written by the 2s flush, are written
// at the stop.
func TestStatsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	up := newStatsUpstream(t)
	adminP, httpP := freePort(t), freePort(t)
	cfg := writeConfig(t, dir, adminP, httpP, up.URL, "", "")
	n1 := startNode(t, dir, cfg, adminP, httpP)

	// a window around the test, its end in the future: anything counted
	// again after a restart would land in it
	from := time.Now().Add(-time.Minute)
	to := from.Add(15 * time.Minute)
	postEvents(t, httpP, "ok", 12)
	postEvents(t, httpP, "flaky", 3) // fewer than the 5 transient failures that open the breaker
	postEvents(t, httpP, "dead", 3)
	const want = "total=18 completed=15 dead_letter=3 failed=6 total_retries=3 pending=0"
	var before statsSnapshot
	deadline := time.Now().Add(30 * time.Second)
	for { // settled: every delivery finished and its counts flushed (2s)
		before = snapshot(t, adminP, from, to)
		if rangeCounts(before.Range) == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("range stats %s, want %s; logs:\n%s", rangeCounts(before.Range), want, n1.logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	wantTotals := map[string]float64{"received": 18, "delivered": 15, "dead": 3, "retries": 3,
		"failed.4xx": 3, "failed.5xx": 3, "failed.connection": 0, "failed.other": 0}
	if got := seriesTotals(before.Series); !reflect.DeepEqual(got, wantTotals) {
		t.Fatalf("series totals %v, want %v", got, wantTotals)
	}

	n1.stop(t, "admin")
	n2 := startNode(t, dir, cfg, adminP, httpP)
	after := snapshot(t, adminP, from, to)
	if !reflect.DeepEqual(after.Range, before.Range) {
		b, _ := json.Marshal(before.Range)
		a, _ := json.Marshal(after.Range)
		t.Errorf("range stats changed across a graceful restart:\nbefore %s\nafter  %s", b, a)
	}
	if got := seriesTotals(after.Series); !reflect.DeepEqual(got, wantTotals) {
		t.Errorf("series totals after the restart %v, want %v", got, wantTotals)
	}
	if !reflect.DeepEqual(after.Series, before.Series) {
		b, _ := json.Marshal(before.Series)
		a, _ := json.Marshal(after.Series)
		t.Errorf("series changed across a graceful restart:\nbefore %s\nafter  %s", b, a)
	}

	// deliveries finished just before a SIGTERM: their counts are written
	// at the stop, whether or not a 2s flush came first
	acked := postEvents(t, httpP, "last", 3)
	for _, id := range acked {
		waitEvent := time.Now().Add(10 * time.Second)
		for {
			var info map[string]any
			adminDo(t, adminP, "GET", "/webhooks/events/t/"+id, "", &info)
			if info["status"] == "delivered" {
				break
			}
			if time.Now().After(waitEvent) {
				t.Fatalf("%s not delivered: %v", id, info)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	n2.stop(t, "sigterm")
	startNode(t, dir, cfg, adminP, httpP)
	last := snapshot(t, adminP, from, to)
	if got, want := rangeCounts(last.Range), "total=21 completed=18 dead_letter=3 failed=6 total_retries=3 pending=0"; got != want {
		t.Errorf("range stats after deliveries and a SIGTERM: %s, want %s", got, want)
	}
	wantTotals["received"] += 3
	wantTotals["delivered"] += 3
	if got := seriesTotals(last.Series); !reflect.DeepEqual(got, wantTotals) {
		t.Errorf("series totals after deliveries and a SIGTERM %v, want %v", got, wantTotals)
	}
}
