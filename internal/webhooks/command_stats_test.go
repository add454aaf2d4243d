package webhooks

import (
	"bytes"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/hookline/hookline/internal/operator"
)

// TestPrintRangeStats: the window's table has a row per source with its
// health, and the total; what is not counted (by type) reads "-".
func TestPrintRangeStats(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	n := func(v int64) *int64 { return &v }
	v := operator.RangeStatsAnswer{From: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC), To: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC),
		Resolution: "minute", RangeCounts: operator.RangeCounts{Total: 10, Completed: 9, DeadLetter: 1, SuccessRate: f(90)},
		Sources: map[string]operator.SourceRange{
			"shop": {RangeCounts: operator.RangeCounts{Total: 10, Completed: 9, Pending: 2, Failed: n(3), DeadLetter: 1, TotalRetries: n(2),
				AverageRetries: f(0.2), SuccessRate: f(90), DeadLetterRate: f(10)}, OpenDLQ: 1, OldestQueuedAgeSeconds: 42, BreakerOpen: true},
		}}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 1, ' ', 0)
	printRangeStats(tw, &v)
	tw.Flush()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := map[int]string{
		1: "2026-11-22T10:00:00Z 2026-11-23T10:00:00Z minute",
		4: "shop 10 9 2 3 1 2 0.20 90.0% 10.0% 1 42s false open",
		5: "(total) 10 9 0 - 1 - - 90.0% -",
	}
	for i, w := range want {
		if i >= len(lines) || strings.Join(strings.Fields(lines[i]), " ") != w {
			t.Errorf("line %d of\n%s\nwant %q", i, buf.String(), w)
		}
	}
}
