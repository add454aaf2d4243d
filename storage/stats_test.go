package storage

import (
	"testing"
	"time"
)

func TestStatsMinute(t *testing.T) {
	t0 := time.Unix(1_700_000_040, 0) // a minute boundary
	for _, tc := range []struct {
		at   time.Time
		want int64
	}{
		{t0, 1_700_000_040 / 60},
		{t0.Add(59*time.Second + 999*time.Millisecond), 1_700_000_040 / 60},
		{t0.Add(time.Minute), 1_700_000_040/60 + 1},
		{t0.Add(-time.Nanosecond), 1_700_000_040/60 - 1},
		{t0.In(time.FixedZone("x", 3600)), 1_700_000_040 / 60}, // the zone does not matter
	} {
		if got := StatsMinute(tc.at); got != tc.want {
			t.Errorf("StatsMinute(%v) = %d, want %d", tc.at, got, tc.want)
		}
	}
	if StatsRetention < 24*time.Hour {
		t.Errorf("StatsRetention %v is shorter than the 24h the dashboard shows", StatsRetention)
	}
}

func TestStatsField(t *testing.T) {
	for _, tc := range []struct {
		source, name string
		want         string
	}{
		{"stripe", "accepted", "stripe\x00accepted"},
		{"", "accepted", "\x00accepted"},
		{"github", "", "github\x00"},
	} {
		f := StatsField(tc.source, tc.name)
		if f != tc.want {
			t.Errorf("StatsField(%q, %q) = %q, want %q", tc.source, tc.name, f, tc.want)
		}
		source, name, ok := SplitStatsField(f)
		if !ok || source != tc.source || name != tc.name {
			t.Errorf("SplitStatsField(%q) = %q, %q, %v", f, source, name, ok)
		}
	}
	if _, _, ok := SplitStatsField("garbage"); ok {
		t.Error("SplitStatsField of a field without \\x00 succeeded")
	}
}
