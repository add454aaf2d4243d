package operator

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/hookline/hookline/storage"
)

// statsRange is the window of a range stats or time series request.
type statsRange struct {
	from, to time.Time
	// step is the series' point width (0 for the range stats).
	step time.Duration
	// asked is the step the request gave when it was rounded up to step
	// (0 when it was used as given, or none was given).
	asked time.Duration
	// res is the resolution of the buckets read.
	res storage.StatsResolution
}

// defaultStatsWindow is the window when from is not given.
const defaultStatsWindow = time.Hour

// maxSeriesPoints bounds the points of a series: a smaller step is
// refused (400), not clamped, so a chart never silently changes scale.
const maxSeriesPoints = 1500

// seriesTargetPoints is at most how many points the default step gives.
const seriesTargetPoints = 200

// seriesSteps are the default steps, the smallest one giving at most
// seriesTargetPoints wins: 15m and 1h by the minute, 24h by 15 minutes,
// 7d by the hour.
var seriesSteps = []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour, 6 * time.Hour, 24 * time.Hour}

// badParam is the 400 answer of an invalid query parameter.
func badParam(name, format string, args ...any) error {
	return newError(http.StatusBadRequest, name+": "+fmt.Sprintf(format, args...))
}

// parseRange reads from and to (RFC 3339 times, or durations meaning that
// long before now; defaults: the hour up to now) and, when withStep, step
// (a duration, rounded up to whole minutes, or to whole hours when the
// window reaches past the minute buckets' retention; default from
// seriesSteps). The resolution read is the hour buckets' when the step is
// whole hours, else the minutes'.
func parseRange(q url.Values, now time.Time, withStep bool) (statsRange, error) {
	var r statsRange
	var err error
	if r.to, err = parseTimeFilter("to", q.Get("to"), now); err != nil {
		return r, err
	}
	if r.to.IsZero() {
		r.to = now
	}
	if r.from, err = parseTimeFilter("from", q.Get("from"), now); err != nil {
		return r, err
	}
	if r.from.IsZero() {
		r.from = r.to.Add(-defaultStatsWindow)
	}
	if !r.from.Before(r.to) {
		return r, badParam("from", "must be before to (%s, %s)", r.from.Format(time.RFC3339), r.to.Format(time.RFC3339))
	}
	if r.from.Before(now.Add(-storage.StatsHourRetention)) {
		return r, badParam("from", "counters are kept %s: from must be after %s", storage.StatsHourRetention, now.Add(-storage.StatsHourRetention).Format(time.RFC3339))
	}
	minutesKept := !r.from.Before(now.Add(-storage.StatsRetention + time.Minute))
	if !withStep {
		r.res = storage.StatsByHour
		if minutesKept {
			r.res = storage.StatsByMinute
		}
		r.from = alignDown(r.from, r.res.Width())
		return r, nil
	}
	if s := q.Get("step"); s != "" {
		asked, err := caddy.ParseDuration(s)
		if err != nil || asked <= 0 || asked > storage.StatsHourRetention {
			return r, badParam("step", "want a duration up to %s, got %q", storage.StatsHourRetention, s)
		}
		// a chart asks for what its width gives: the step is rounded up
		// to the buckets the window can be read from, and the answer
		// says so (SeriesAnswer.StepRoundedFrom)
		unit := time.Minute
		if !minutesKept {
			unit = time.Hour
		}
		r.step = (asked + unit - 1) / unit * unit
		if r.step != asked {
			r.asked = asked
		}
	} else {
		r.step = seriesSteps[len(seriesSteps)-1]
		for _, st := range seriesSteps {
			// a window older than the minute counters takes whole hours
			if (minutesKept || st%time.Hour == 0) && points(r.from, r.to, st) <= seriesTargetPoints {
				r.step = st
				break
			}
		}
	}
	if n := points(r.from, r.to, r.step); n > maxSeriesPoints {
		return r, badParam("step", "%s over this window makes %d points, more than %d: take a larger step", r.step, n, maxSeriesPoints)
	}
	r.res = storage.StatsByMinute
	if r.step%time.Hour == 0 {
		r.res = storage.StatsByHour
	}
	r.from = alignDown(r.from, r.step)
	return r, nil
}

// alignDown is t rounded down to a multiple of d since the Unix epoch.
func alignDown(t time.Time, d time.Duration) time.Time {
	sec := int64(d / time.Second)
	u := t.Unix()
	return time.Unix(u-((u%sec)+sec)%sec, 0).UTC()
}

// points is how many steps of step cover [from, to), from aligned down.
func points(from, to time.Time, step time.Duration) int {
	from = alignDown(from, step)
	return int((to.Sub(from) + step - 1) / step)
}
