package storage_test

import (
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

func TestPauseRules(t *testing.T) {
	now := time.Date(2026, 11, 23, 7, 0, 0, 0, time.UTC)
	if _, err := storage.NewPause("s", "", false, "", -time.Second, now); err == nil {
		t.Error("a negative duration was accepted")
	}
	refuse, _ := storage.NewPause("s", "", false, "r", 0, now)
	if refuse.Holds() || refuse.Mode() != storage.PauseRefuse || refuse.Expired(now.Add(24*time.Hour)) || refuse.RetryAfter(now) != 60 {
		t.Errorf("refuse with no end: %+v", refuse)
	}
	short, _ := storage.NewPause("s", "", false, "", 2500*time.Millisecond, now)
	for _, c := range []struct {
		at   time.Duration
		want int
	}{{0, 3}, {time.Second, 2}, {2400 * time.Millisecond, 1}, {5 * time.Second, 1}} {
		if got := short.RetryAfter(now.Add(c.at)); got != c.want {
			t.Errorf("RetryAfter at +%v = %d, want %d", c.at, got, c.want)
		}
	}
	if short.Expired(now.Add(2499*time.Millisecond)) || !short.Expired(now.Add(2500*time.Millisecond)) {
		t.Error("expiry is not at until")
	}
	dest, _ := storage.NewPause("s", "crm", false, "", 0, now)
	if !dest.Holds() || dest.Mode() != storage.PauseHold || dest.Key() != "s/crm" {
		t.Errorf("a destination's pause must hold: %+v %s", dest, dest.Key())
	}
	// stored and read back exactly; a legacy (empty) value is a refuse
	// pause of the key's source
	for _, p := range []storage.Pause{refuse, short, dest} {
		got, err := storage.DecodePause(p.Key(), storage.EncodePause(p))
		if err != nil || got != p {
			t.Errorf("round trip of %+v: %+v %v", p, got, err)
		}
	}
	if got, err := storage.DecodePause("legacy", nil); err != nil || got != (storage.Pause{Source: "legacy"}) {
		t.Errorf("legacy record: %+v %v", got, err)
	}
	if _, err := storage.DecodePause("bad", []byte("{")); err == nil {
		t.Error("a broken record decoded")
	}
}

func TestCountsOfDestination(t *testing.T) {
	lanes := map[string]storage.Counts{"s": {Queued: 1}, "s~replay": {Queued: 2}, "s/crm": {Queued: 4, InFlight: 1},
		"s/crm~replay": {Queued: 8}, "t": {Queued: 16}}
	for _, c := range []struct {
		dest string
		want int
	}{{"", 15}, {storage.DefaultDestination, 3}, {"crm", 12}, {"erp", 0}} {
		if got := storage.CountsOfDestination(lanes, "s", c.dest).Queued; got != c.want {
			t.Errorf("%q: %d queued, want %d", c.dest, got, c.want)
		}
	}
	if got := storage.CountsBySource(lanes); got["s"].Queued != 15 || got["s"].InFlight != 1 || got["t"].Queued != 16 {
		t.Errorf("by source %+v", got)
	}
	if d := storage.CatchUpFor(300, storage.DefaultCatchUpRate); d != 5*time.Second {
		t.Errorf("catch-up for 300 at 100/s: %v", d)
	}
}
