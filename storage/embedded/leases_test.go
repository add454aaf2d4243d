package embedded

import (
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

func TestLeasesTable(t *testing.T) {
	base := time.Unix(1_700_000_000, 0)
	l := newLeases()
	queued := func(lane string, due time.Time, id string) bool {
		return lane == "stripe" && due.Equal(base) && id == "a"
	}
	a := l.take("a", "stripe", base, base, base.Add(time.Minute))
	if a == "" {
		t.Fatal("take of a free job returned no token")
	}
	tests := []struct {
		name string
		got  any
		want any
	}{
		{"taken again before its end", l.take("a", "stripe", base, base.Add(59*time.Second), base.Add(2*time.Minute)), ""},
		{"leased before its end", l.leased("a", base.Add(59*time.Second)), true},
		{"leased at its end", l.leased("a", base.Add(time.Minute)), false},
		{"in flight while leased", l.status("a", storage.StatusQueued, base), storage.StatusInFlight},
		{"queued once it ran out", l.status("a", storage.StatusQueued, base.Add(time.Minute)), storage.StatusQueued},
		{"a delivered record is delivered", l.status("a", storage.StatusDelivered, base), storage.StatusDelivered},
		{"an earlier version's lease that ran out", l.status("x", storage.StatusInFlight, base), storage.StatusQueued},
		{"held under its token", holds(l, "a", a), true},
		{"held by no other token", holds(l, "a", "other"), false},
		{"no empty token", holds(l, "a", ""), false},
		{"counted by lane", l.byLane(base, queued)["stripe"], int64(1)},
		{"not counted once it ran out", len(l.byLane(base.Add(time.Minute), queued)), 0},
		{"not counted when the queue does not hold it", len(l.byLane(base, func(string, time.Time, string) bool { return false })), 0},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}

	// a lease that ran out is still held (a late Finish under it, with no
	// lease since) until another replaces it
	if !holds(l, "a", a) {
		t.Error("a lease that ran out, not replaced, is no longer held")
	}
	b := l.take("a", "stripe", base, base.Add(time.Minute), base.Add(2*time.Minute))
	if b == "" || b == a || holds(l, "a", a) || !holds(l, "a", b) {
		t.Errorf("a lease taken once the first ran out: token %q (first %q), first held %v", b, a, holds(l, "a", a))
	}
	l.drop("a", a) // the first lease's late Finish: the second stays
	if !holds(l, "a", b) {
		t.Error("dropping a replaced lease dropped its replacement")
	}
	if end, ok := l.firstEnd(base.Add(time.Minute)); !ok || !end.Equal(base.Add(2*time.Minute)) {
		t.Errorf("firstEnd = %v, %v", end, ok)
	}
	l.forget("a")
	if l.leased("a", base.Add(time.Minute)) {
		t.Error("forgotten lease still held")
	}
}

// TestLeasesSwept: the leases whose Finish never came (a stalled disk, a
// job erased while leased) do not pile up: once the table reaches its
// sweep size, a take removes those that ran out.
func TestLeasesSwept(t *testing.T) {
	base := time.Unix(1_700_000_000, 0)
	l := newLeases()
	for i := range minSweep - 1 {
		l.take(string(rune('a'+i%26))+time.Duration(i).String(), "stripe", base, base, base.Add(time.Second))
	}
	live := l.take("live", "stripe", base, base, base.Add(time.Hour))
	later := base.Add(2 * time.Second)
	l.take("next", "stripe", later, later, later.Add(time.Hour))
	if n := len(l.m); n != 2 {
		t.Errorf("after a sweep %d leases are kept, want the 2 that have not run out", n)
	}
	if !holds(l, "live", live) {
		t.Error("the sweep removed a lease that had not run out")
	}
}

// holds reports whether token is job id's lease.
func holds(l *leases, id, token string) bool {
	_, ok := l.held(id, token)
	return ok
}
