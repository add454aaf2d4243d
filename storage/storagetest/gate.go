package storagetest

import (
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

// The gate: lanes skipped, paced and taking turns at lease time.

func gateLease(t testing.TB, s storage.Store, now time.Time, n int, d time.Duration, g *storage.Gate) []*storage.Job {
	t.Helper()
	jobs, err := s.Lease(t.Context(), now, n, d, g)
	if err != nil {
		t.Fatalf("Lease: %v", err)
	}
	if len(jobs) > n {
		t.Fatalf("Lease(n=%d) returned %d jobs", n, len(jobs))
	}
	return jobs
}

func sourcesOf(jobs []*storage.Job) map[string]int {
	out := map[string]int{}
	for _, j := range jobs {
		out[j.Source]++
	}
	return out
}

// testGateSkip: a skipped lane is neither leased nor touched, NextDue
// ignores it, and its jobs are leased as soon as it is let through.
func testGateSkip(t *testing.T, f Factory) {
	s := f.Open(t)
	until := time.Now().Add(time.Hour)
	var paused []string
	for range 5 {
		ev := newEvent(t, "paused", "")
		mustEnqueue(t, s, ev, until)
		paused = append(paused, ev.ID)
	}
	open := newEvent(t, "open", "")
	mustEnqueue(t, s, open, until)
	now := time.Now().Add(10 * time.Millisecond)
	gate := &storage.Gate{Skip: map[string]bool{"paused": true}}

	jobs := gateLease(t, s, now, 10, time.Minute, gate)
	if len(jobs) != 1 || jobs[0].ID != open.ID {
		t.Fatalf("Lease with lane %q skipped = %v, want only %s", "paused", jobIDs(jobs), open.ID)
	}
	// only skipped jobs are due: nothing to lease, and NextDue does not
	// report them (a dispatcher would spin on them otherwise)
	if jobs := gateLease(t, s, now, 10, time.Minute, gate); len(jobs) != 0 {
		t.Fatalf("second Lease = %v, want none", jobIDs(jobs))
	}
	if due, ok, err := s.NextDue(t.Context(), gate); err != nil || (ok && !due.After(now)) {
		t.Fatalf("NextDue with only skipped jobs due = %v, %v, %v; want none due now", due, ok, err)
	}
	if due, ok, err := s.NextDue(t.Context(), nil); err != nil || !ok || due.After(now) {
		t.Fatalf("NextDue without gate = %v, %v, %v; want the skipped jobs, due", due, ok, err)
	}
	// untouched: still queued, not leased
	qs, err := s.QueueBySource(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if qs["paused"].Queued != 5 || qs["paused"].InFlight != 0 {
		t.Fatalf("QueueBySource[paused] = %+v, want 5 queued, none in flight", qs["paused"])
	}
	// let through: all five at once
	jobs = gateLease(t, s, now, 10, time.Minute, nil)
	if !sameSet(jobIDs(jobs), paused) {
		t.Fatalf("Lease after the gate opened = %v, want %v", jobIDs(jobs), paused)
	}
}

// testGateFair: one lane's backlog does not starve another lane.
func testGateFair(t *testing.T, f Factory) {
	s := f.Open(t)
	until := time.Now().Add(time.Hour)
	for range 12 {
		mustEnqueue(t, s, newEvent(t, "backlog", ""), until)
	}
	time.Sleep(5 * time.Millisecond) // the other lane's jobs are younger
	var fresh []string
	for range 2 {
		ev := newEvent(t, "fresh", "")
		mustEnqueue(t, s, ev, until)
		fresh = append(fresh, ev.ID)
	}
	now := time.Now().Add(10 * time.Millisecond)
	jobs := gateLease(t, s, now, 4, time.Minute, nil)
	got := sourcesOf(jobs)
	if len(jobs) != 4 || got["fresh"] != 2 || got["backlog"] != 2 {
		t.Fatalf("Lease(4) = %v by source, want 2 backlog and both fresh jobs", got)
	}
	// the oldest job of the backlog goes first
	if jobs[0].Source != "backlog" {
		t.Fatalf("first leased job is from %q, want the lane with the oldest job", jobs[0].Source)
	}
}

// testGatePace: a paced lane leaves the store one slot at a time; NextDue
// reports its next slot; other lanes are not held back.
func testGatePace(t *testing.T, f Factory) {
	s := f.Open(t)
	until := time.Now().Add(time.Hour)
	for range 5 {
		mustEnqueue(t, s, newEvent(t, "slow", ""), until)
	}
	for range 3 {
		mustEnqueue(t, s, newEvent(t, "fast", ""), until)
	}
	gate := &storage.Gate{Pace: map[string]storage.Rate{"slow": {Events: 1, Per: time.Second}}}
	now := time.Now().Add(10 * time.Millisecond)

	got := sourcesOf(gateLease(t, s, now, 10, time.Minute, gate))
	if got["slow"] != 1 || got["fast"] != 3 {
		t.Fatalf("first Lease = %v by source, want 1 slow (paced 1/s) and all 3 fast", got)
	}
	if jobs := gateLease(t, s, now.Add(500*time.Millisecond), 10, time.Minute, gate); len(jobs) != 0 {
		t.Fatalf("Lease within the slot = %v, want none", jobIDs(jobs))
	}
	due, ok, err := s.NextDue(t.Context(), gate)
	if err != nil || !ok || due.Before(now.Add(time.Second-tolerance)) || due.After(now.Add(time.Second+tolerance)) {
		t.Fatalf("NextDue = %v, %v, %v; want the next slot %v", due, ok, err, now.Add(time.Second))
	}
	if got := sourcesOf(gateLease(t, s, now.Add(time.Second), 10, time.Minute, gate)); got["slow"] != 1 {
		t.Fatalf("Lease at the next slot = %v, want 1 slow", got)
	}
	// a fast pace grants a small batch at once, never more than it allows
	gate.Pace["slow"] = storage.Rate{Events: 20, Per: time.Second} // one every 50ms: 2 per 100ms
	if got := sourcesOf(gateLease(t, s, now.Add(3*time.Second), 10, time.Minute, gate)); got["slow"] != 2 {
		t.Fatalf("Lease at 20/s = %v, want 2 slow (its 100ms burst)", got)
	}
}

// testGatePaceEveryLane: every paced lane is held to its pace, also one
// the fair pick did not reach first (two lanes at 1/hour, one job a lease).
func testGatePaceEveryLane(t *testing.T, f Factory) {
	s := f.Open(t)
	until := time.Now().Add(time.Hour)
	for _, src := range []string{"a", "b"} {
		for range 5 {
			mustEnqueue(t, s, newEvent(t, src, ""), until)
		}
	}
	hourly := storage.Rate{Events: 1, Per: time.Hour}
	gate := &storage.Gate{Pace: map[string]storage.Rate{"a": hourly, "b": hourly}}
	now := time.Now().Add(10 * time.Millisecond)
	got := map[string]int{}
	for i := range 6 {
		for src, n := range sourcesOf(gateLease(t, s, now.Add(time.Duration(i)*time.Millisecond), 1, time.Minute, gate)) {
			got[src] += n
		}
	}
	if got["a"] != 1 || got["b"] != 1 {
		t.Fatalf("6 leases of one job = %v by source, want one of each lane (1/hour each)", got)
	}
}

// testGateCap: a capped lane gives at most its cap to one lease.
func testGateCap(t *testing.T, f Factory) {
	s := f.Open(t)
	until := time.Now().Add(time.Hour)
	for range 5 {
		mustEnqueue(t, s, newEvent(t, "trial", ""), until)
	}
	for range 3 {
		mustEnqueue(t, s, newEvent(t, "other", ""), until)
	}
	now := time.Now().Add(10 * time.Millisecond)
	got := sourcesOf(gateLease(t, s, now, 10, time.Minute, &storage.Gate{Cap: map[string]int{"trial": 1}}))
	if got["trial"] != 1 || got["other"] != 3 {
		t.Fatalf("Lease with lane %q capped at 1 = %v by source, want 1 trial and 3 other", "trial", got)
	}
}
