package storage

import (
	"strings"
	"time"
)

// StatsRetention is how long the minute buckets of AddStats are kept (the
// all-time totals are kept forever).
const StatsRetention = 48 * time.Hour

// StatsMinute is the minute bucket of t (Unix minutes). Minute 0 holds the
// all-time totals in both backends.
func StatsMinute(t time.Time) int64 { return t.Unix() / 60 }

// StatsField names a counter within a bucket: source \x00 name.
func StatsField(source, name string) string { return source + "\x00" + name }

// SplitStatsField returns the source and counter name of a StatsField
// (ok false when f is not one).
func SplitStatsField(f string) (source, name string, ok bool) {
	return strings.Cut(f, "\x00")
}
