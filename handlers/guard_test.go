package handlers

import (
	"testing"
	"time"
)

func TestGuard(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	g := newGuard(3, time.Minute, 5*time.Minute)
	steps := []struct {
		at          time.Duration
		ip          string
		fail        bool // record a failure (else just check)
		wantStarts  bool
		wantBlocked bool
	}{
		{0, "a", true, false, false},
		{time.Second, "a", true, false, false},
		{2 * time.Second, "b", true, false, false}, // another client counts apart
		{3 * time.Second, "a", true, true, true},   // third failure in the window: blocked
		{4 * time.Second, "b", false, false, false},
		{5*time.Minute + 2*time.Second, "a", false, false, true},  // still cooling down
		{5*time.Minute + 4*time.Second, "a", false, false, false}, // cool-down over
		// failures spread over more than the window never block
		{10 * time.Minute, "c", true, false, false},
		{11 * time.Minute, "c", true, false, false},
		{12 * time.Minute, "c", true, false, false},
		{12*time.Minute + time.Second, "c", false, false, false},
	}
	for i, s := range steps {
		now := t0.Add(s.at)
		if s.fail {
			if got := g.fail(s.ip, now); got != s.wantStarts {
				t.Errorf("step %d: fail() = %v, want %v", i, got, s.wantStarts)
			}
		}
		left, blocked := g.blocked(s.ip, now)
		if blocked != s.wantBlocked {
			t.Errorf("step %d: blocked = %v (%s left), want %v", i, blocked, left, s.wantBlocked)
		}
	}
	g2 := newGuard(1, time.Minute, 5*time.Minute)
	g2.fail("a", t0)
	if left, _ := g2.blocked("a", t0.Add(time.Second)); left != 5*time.Minute-time.Second {
		t.Errorf("cool-down left %s, want 4m59s", left)
	}
	// a nil guard (block_failures off) never blocks
	var off *guard
	if off.fail("x", t0) {
		t.Error("nil guard blocked")
	}
	if _, b := off.blocked("x", t0); b {
		t.Error("nil guard reports blocked")
	}
}

func TestGuardBoundedMemory(t *testing.T) {
	g := newGuard(5, time.Minute, time.Minute)
	now := time.Unix(1_700_000_000, 0)
	for i := range guardMaxClients + 100 {
		g.fail(string(rune(i)), now)
	}
	if n := len(g.clients); n > guardMaxClients {
		t.Fatalf("guard holds %d clients, cap %d", n, guardMaxClients)
	}
	// after the window, the sweep frees them
	g.fail("new", now.Add(2*time.Minute))
	if n := len(g.clients); n != 1 {
		t.Fatalf("after the window the guard holds %d clients, want 1", n)
	}
}
