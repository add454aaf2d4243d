package storage

import (
	"errors"
	"testing"
	"time"
)

func TestReplayLanes(t *testing.T) {
	live, replay := &Event{Source: "stripe"}, &Event{Source: "stripe", Replay: true}
	lanes := LanesOf("stripe")
	if len(lanes) != 2 || LaneOf(live) != lanes[0] || LaneOf(replay) != lanes[1] || lanes[0] == lanes[1] {
		t.Fatalf("LanesOf = %q, LaneOf live %q, replay %q", lanes, LaneOf(live), LaneOf(replay))
	}
	for _, lane := range lanes {
		if got := SourceOfLane(lane); got != "stripe" {
			t.Errorf("SourceOfLane(%q) = %q, want stripe", lane, got)
		}
	}
}

func TestReplayFilter(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ev := &Event{Source: "stripe", Type: "charge.succeeded"}
	tests := []struct {
		name string
		f    ReplayFilter
		st   Status
		fin  time.Time
		want bool
	}{
		{"any delivered", ReplayFilter{}, StatusDelivered, t0, true},
		{"queued", ReplayFilter{}, StatusQueued, t0, false},
		{"in flight", ReplayFilter{}, StatusInFlight, t0, false},
		{"dead", ReplayFilter{}, StatusDead, t0, false},
		{"source", ReplayFilter{Source: "stripe"}, StatusDelivered, t0, true},
		{"other source", ReplayFilter{Source: "github"}, StatusDelivered, t0, false},
		{"type", ReplayFilter{Type: "charge.succeeded"}, StatusDelivered, t0, true},
		{"other type", ReplayFilter{Type: "invoice.paid"}, StatusDelivered, t0, false},
		{"since, inclusive", ReplayFilter{Since: t0}, StatusDelivered, t0, true},
		{"before since", ReplayFilter{Since: t0.Add(time.Second)}, StatusDelivered, t0, false},
		{"until, inclusive", ReplayFilter{Until: t0}, StatusDelivered, t0, true},
		{"after until", ReplayFilter{Until: t0.Add(-time.Second)}, StatusDelivered, t0, false},
	}
	for _, tc := range tests {
		if got := tc.f.Matches(ev, tc.st, tc.fin); got != tc.want {
			t.Errorf("%s: Matches = %v, want %v", tc.name, got, tc.want)
		}
	}
	for limit, want := range map[int]int{0: ReplayDefaultLimit, -1: ReplayDefaultLimit, 5: 5, ReplayMaxLimit + 1: ReplayMaxLimit} {
		if got := (ReplayFilter{Limit: limit}).EffectiveLimit(); got != want {
			t.Errorf("EffectiveLimit(%d) = %d, want %d", limit, got, want)
		}
	}
}

func TestCheckReplayEvent(t *testing.T) {
	for st, want := range map[Status]error{
		StatusDelivered: nil, "": ErrNotFound, StatusQueued: ErrNotDelivered, StatusInFlight: ErrConflict, StatusDead: ErrConflict,
	} {
		if err := CheckReplayEvent(st); !errors.Is(err, want) || (want == nil && err != nil) {
			t.Errorf("CheckReplayEvent(%q) = %v, want %v", st, err, want)
		}
	}
}

func TestErrNotDelivered(t *testing.T) {
	if !errors.Is(ErrNotDelivered, ErrConflict) || errors.Is(ErrConflict, ErrNotDelivered) || ErrNotDelivered.Error() == ErrConflict.Error() {
		t.Errorf("ErrNotDelivered %q: want an ErrConflict with its own text", ErrNotDelivered)
	}
}

func TestReplayJob(t *testing.T) {
	j := &Job{Attempts: make([]Attempt, 3), RoundStart: 1, Lease: "x", LeaseUntil: time.Now()}
	ReplayJob(j)
	if !j.Replay || j.RoundStart != 3 || j.RoundAttempts() != 0 || j.Lease != "" || !j.LeaseUntil.IsZero() || len(j.Attempts) != 3 {
		t.Errorf("ReplayJob = %+v", j)
	}
}
