package operator

import (
	"strings"
	"testing"
	"time"
)

func TestSeriesCounterNames(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "latency:0"},
		{5 * time.Millisecond, "latency:0"},
		{6 * time.Millisecond, "latency:1"},
		{time.Second, "latency:7"},
		{59 * time.Second, "latency:12"},
		{2 * time.Minute, "latency:13"},
	} {
		if got := LatencyCounter(tc.d); got != tc.want {
			t.Errorf("LatencyCounter(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
	for status, want := range map[int]string{0: "connection", 404: "4xx", 429: "4xx", 500: "5xx", 503: "5xx", 302: "other", 101: "other"} {
		if got := FailureClass(status); got != want {
			t.Errorf("FailureClass(%d) = %q, want %q", status, got, want)
		}
	}
	for _, tc := range []struct {
		n    int
		want string
	}{{1, "attempts:delivered:1"}, {0, "attempts:delivered:1"}, {10, "attempts:delivered:10"}, {25, "attempts:delivered:10"}} {
		if got := AttemptsCounter("delivered", tc.n); got != tc.want {
			t.Errorf("AttemptsCounter(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
	for in, want := range map[string]string{
		"upstream answered 503 Service Unavailable":             "upstream answered 503 Service Unavailable",
		"dial tcp 127.0.0.1:41234: connect: connection refused": "dial tcp 127.0.0.1:N: connect: connection refused",
		"  timeout waiting for the upstream ":                   "timeout waiting for the upstream",
		"":                                                      "(no message)",
		strings.Repeat("é", 80):                                 strings.Repeat("é", 50),
	} {
		if got := NormalizeError(in); got != want {
			t.Errorf("NormalizeError(%q) = %q, want %q", in, got, want)
		}
	}
	// none of them is a plain counter: the stats windows leave them out
	var b breakdown
	c := map[string]int64{"accepted": 1, LatencyCounter(time.Second): 1, FailureCounter(500): 1, AttemptsCounter("dead", 2): 1,
		ErrorCounter("x"): 1, DLQSizeGauge: 3}
	if plain := b.split(c, false); len(plain) != 1 || plain["accepted"] != 1 {
		t.Errorf("split kept %v, want accepted only", plain)
	}
	if SeriesOnly(c) || !SeriesOnly(map[string]int64{DLQSizeGauge: 0, LatencyCounter(0): 1}) || !SeriesOnly(nil) {
		t.Error("SeriesOnly is wrong")
	}
}

func TestQuantile(t *testing.T) {
	counts := make([]int64, len(LatencyBounds)+1)
	counts[0] = 10 // (0, 0.005]
	if got := quantile(0.5, counts, 10); got != 0.0025 {
		t.Errorf("median of 10 in the first bucket = %v, want 0.0025", got)
	}
	counts[len(counts)-1] = 90 // over the last bound
	if got := quantile(0.99, counts, 100); got != LatencyBounds[len(LatencyBounds)-1] {
		t.Errorf("p99 past the last bound = %v, want the bound", got)
	}
	if got := quantile(0.1, counts, 100); got != 0.005 {
		t.Errorf("p10 at the first bucket's top = %v", got)
	}
}

func TestParseRangeDefaults(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 7, 30, 0, time.UTC)
	q := map[string][]string{}
	r, err := parseRange(q, now, true)
	if err != nil || r.step != time.Minute || !r.to.Equal(now) || !r.from.Equal(time.Date(2026, 11, 23, 9, 7, 0, 0, time.UTC)) {
		t.Errorf("defaults: %+v %v", r, err)
	}
	r, err = parseRange(map[string][]string{"from": {"2026-11-20T10:00:00Z"}}, now, false)
	if err != nil || r.res.String() != "hour" || !r.from.Equal(time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("a range past 48h: %+v %v", r, err)
	}
}
