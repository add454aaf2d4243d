package storage

import (
	"strings"
	"time"
)

// StatsBatch is one AddStats write of a node's counter deltas, by source,
// then counter name.
type StatsBatch struct {
	// ID names the batch: the store applies a batch of one ID once within
	// StatsBatchMemory, so a writer that got no answer sends the same batch
	// again under its ID and it counts once. "" is applied every time.
	ID string
	// At is when the deltas were counted: its minute and hour buckets get
	// them.
	At time.Time
	// Counters are added to the all-time totals and to At's buckets.
	Counters map[string]map[string]int64
	// Window are added to At's buckets only: counters read over windows
	// (the time series'), whose all-time sums nobody reads and whose
	// names (error messages) would grow the all-time totals without end.
	Window map[string]map[string]int64
	// Latest are set in the all-time totals to the largest value any
	// batch gave them (times in Unix seconds, such as when a source's
	// secret last matched: the newest any node saw wins), and go to no
	// bucket. Their names are never those of Counters or Window.
	Latest map[string]map[string]int64
}

// StatsBatchMemory is how long a store remembers the ID of a batch it
// applied: far longer than a writer retries one (it retries every flush,
// and gives the batch up past this).
const StatsBatchMemory = time.Hour

// StatsRetention is how long the minute buckets of AddStats are kept (the
// all-time totals are kept forever).
const StatsRetention = 48 * time.Hour

// StatsHourRetention is how long the hour buckets of AddStats are kept:
// a week's window (the dashboard's longest) reads 168 of them, and a
// month's comparison still finds its first week.
const StatsHourRetention = 35 * 24 * time.Hour

// StatsMinute is the minute bucket of t (Unix minutes). Minute 0 holds the
// all-time totals in both backends.
func StatsMinute(t time.Time) int64 { return t.Unix() / 60 }

// StatsHour is the hour bucket of t (Unix hours).
func StatsHour(t time.Time) int64 { return t.Unix() / 3600 }

// StatsResolution is the width of the buckets StatsBuckets reads: every
// AddStats delta is added to its minute bucket and to its hour bucket.
type StatsResolution int

// The bucket widths the store keeps.
const (
	// StatsByMinute reads the minute buckets (kept StatsRetention).
	StatsByMinute StatsResolution = iota + 1
	// StatsByHour reads the hour buckets (kept StatsHourRetention).
	StatsByHour
)

// Width is the duration of one bucket (0 for an unknown resolution).
func (r StatsResolution) Width() time.Duration {
	switch r {
	case StatsByMinute:
		return time.Minute
	case StatsByHour:
		return time.Hour
	}
	return 0
}

// Retention is how long the store keeps the buckets of r.
func (r StatsResolution) Retention() time.Duration {
	if r == StatsByHour {
		return StatsHourRetention
	}
	return StatsRetention
}

// Index is the bucket of t at resolution r (StatsMinute or StatsHour).
func (r StatsResolution) Index(t time.Time) int64 {
	if r == StatsByHour {
		return StatsHour(t)
	}
	return StatsMinute(t)
}

// Start is the start time of bucket i at resolution r.
func (r StatsResolution) Start(i int64) time.Time {
	return time.Unix(i*int64(r.Width()/time.Second), 0).UTC()
}

// String names r: "minute" or "hour".
func (r StatsResolution) String() string {
	if r == StatsByHour {
		return "hour"
	}
	return "minute"
}

// StatsBucket is one bucket of counters, as StatsBuckets reads it.
type StatsBucket struct {
	// Start is the bucket's start (UTC).
	Start time.Time
	// Counters are the bucket's counters by source, then name: the
	// AddStats deltas added up, and the SetStatsGauges values last set.
	Counters map[string]map[string]int64
}

// StatsBucketRange is the first and last bucket index at resolution r that
// StatsBuckets(r, from, to) reads: those starting in [from, to), and never
// more than the retention of r holds (ok false: none).
func StatsBucketRange(r StatsResolution, from, to time.Time) (first, last int64, ok bool) {
	w := int64(r.Width())
	if w < int64(time.Second) || !from.Before(to) {
		return 0, 0, false
	}
	// in nanoseconds: in whole seconds, a to in the first second of a
	// minute (09:26:00.4) lost the bucket that minute starts
	first = (from.UnixNano() + w - 1) / w // the first bucket starting at or after from
	last = (to.UnixNano() - 1) / w        // the last bucket starting before to
	if n := int64(r.Retention()) / w; last-first+1 > n+1 {
		first = last - n
	}
	if first < 1 {
		first = 1 // bucket 0 is the all-time totals'
	}
	return first, last, first <= last
}

// StatsField names a counter within a bucket: source \x00 name.
func StatsField(source, name string) string { return source + "\x00" + name }

// SplitStatsField returns the source and counter name of a StatsField
// (ok false when f is not one).
func SplitStatsField(f string) (source, name string, ok bool) {
	return strings.Cut(f, "\x00")
}
