package webhooks

import (
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"

	"github.com/hookline/hookline/internal/operator"
)

// rangeFlags adds the window flags of `caddy webhooks stats`.
func rangeFlags(cmd *cobra.Command) {
	cmd.Flags().String("from", "", "Start of the window: an RFC 3339 time or a duration before now (15m, 24h, 7d)")
	cmd.Flags().String("to", "", "End of the window (default: now)")
	cmd.Flags().String("source", "", "Only this source")
	cmd.Flags().String("type", "", "Only this event type")
	cmd.Flags().String("tenant", "", "Only this tenant (counted while among its source's busiest; \"(other)\": the rest)")
}

// rangeQuery is the query of the window flags given (none: the plain stats).
func rangeQuery(fl caddycmd.Flags) url.Values {
	q := url.Values{}
	for _, name := range []string{"from", "to", "source", "type", "tenant"} {
		if v := fl.String(name); v != "" {
			q.Set(name, v)
		}
	}
	return q
}

// cmdRangeStats prints GET /webhooks/stats?<q> (operator.RangeStatsAnswer).
func cmdRangeStats(fl caddycmd.Flags, q url.Values) (int, error) {
	raw, err := adminCall(fl, "GET", "/webhooks/stats?"+q.Encode(), nil)
	if err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	var v operator.RangeStatsAnswer
	return output(fl, raw, &v, func(w io.Writer) { printRangeStats(w, &v) })
}

// printRangeStats is the table of `caddy webhooks stats --from ...`: the
// window's totals, then each source's counters and health.
func printRangeStats(w io.Writer, v *operator.RangeStatsAnswer) {
	fmt.Fprintf(w, "FROM\tTO\tBUCKETS\n%s\t%s\t%s\n", v.From.Format("2006-01-02T15:04:05Z07:00"), v.To.Format("2006-01-02T15:04:05Z07:00"), v.Resolution)
	fmt.Fprintln(w, "\nSOURCE\tTOTAL\tCOMPLETED\tPENDING\tFAILED\tDEAD\tRETRIES\tAVG RETRIES\tSUCCESS\tDLQ RATE\tOPEN DLQ\tOLDEST QUEUED\tPAUSED\tBREAKER")
	row := func(name string, c operator.RangeCounts, tail string) {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", name, c.Total, c.Completed, c.Pending, intOrDash(c.Failed),
			c.DeadLetter, intOrDash(c.TotalRetries), floatOrDash(c.AverageRetries, "%.2f"), floatOrDash(c.SuccessRate, "%.1f%%"),
			floatOrDash(c.DeadLetterRate, "%.1f%%"), tail)
	}
	for _, n := range slices.Sorted(maps.Keys(v.Sources)) {
		s := v.Sources[n]
		breaker := "closed"
		if s.BreakerOpen {
			breaker = "open"
		}
		row(n, s.RangeCounts, fmt.Sprintf("%d\t%.0fs\t%v\t%s", s.OpenDLQ, s.OldestQueuedAgeSeconds, s.Paused, breaker))
	}
	row("(total)", v.RangeCounts, "\t\t\t")
}

func intOrDash(n *int64) string {
	if n == nil {
		return "-"
	}
	return fmt.Sprint(*n)
}

func floatOrDash(f *float64, format string) string {
	if f == nil {
		return "-"
	}
	return fmt.Sprintf(format, *f)
}
