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

func TestStatsBucketRange(t *testing.T) {
	t0 := time.Unix(1_700_000_040, 0) // a minute boundary
	m0 := StatsMinute(t0)
	for _, tc := range []struct {
		name        string
		res         StatsResolution
		from, to    time.Time
		first, last int64
		ok          bool
	}{
		{"one minute", StatsByMinute, t0, t0.Add(time.Minute), m0, m0, true},
		{"from mid-minute starts at the next", StatsByMinute, t0.Add(time.Second), t0.Add(3 * time.Minute), m0 + 1, m0 + 2, true},
		{"to mid-minute holds its minute", StatsByMinute, t0, t0.Add(90 * time.Second), m0, m0 + 1, true},
		{"to in a minute's first second holds that minute", StatsByMinute, t0.Add(-time.Hour), t0.Add(400 * time.Millisecond), m0 - 60, m0, true},
		{"from in a minute's first second starts at the next", StatsByMinute, t0.Add(400 * time.Millisecond), t0.Add(2 * time.Minute), m0 + 1, m0 + 1, true},
		{"empty", StatsByMinute, t0, t0, 0, 0, false},
		{"reversed", StatsByMinute, t0.Add(time.Hour), t0, 0, 0, false},
		{"clamped to the retention", StatsByMinute, t0.Add(-30 * 24 * time.Hour), t0, m0 - 48*60 - 1, m0 - 1, true},
		{"a week by hour", StatsByHour, t0.Add(-7 * 24 * time.Hour), t0, StatsHour(t0) - 7*24 + 1, StatsHour(t0), true},
		{"unknown resolution", StatsResolution(0), t0, t0.Add(time.Hour), 0, 0, false},
	} {
		first, last, ok := StatsBucketRange(tc.res, tc.from, tc.to)
		if first != tc.first || last != tc.last || ok != tc.ok {
			t.Errorf("%s: StatsBucketRange = %d, %d, %v; want %d, %d, %v", tc.name, first, last, ok, tc.first, tc.last, tc.ok)
		}
	}
	if got := StatsByHour.Start(StatsHour(t0)); got.Unix()%3600 != 0 || t0.Sub(got) >= time.Hour || got.After(t0) {
		t.Errorf("StatsByHour.Start = %v, want the start of t0's hour", got)
	}
}
