package operator

import (
	"cmp"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookline/hookline/storage"
)

// topErrors is how many error messages the series lists.
const topErrors = 10

// rangeQuery reports whether a GET /webhooks/stats asks for a range: the
// plain answer (StatsAnswer) stays the one without these parameters.
func rangeQuery(r *http.Request) bool {
	q := r.URL.Query()
	return q.Has("from") || q.Has("to") || q.Has("source") || q.Has("type") || q.Has("tenant")
}

// rangeStats answers GET /webhooks/stats?from=&to=&source=&type=&tenant=
// (RangeStatsAnswer). type and tenant select counters kept apart from
// each other: one of them at a time.
func (h *Handler) rangeStats(w http.ResponseWriter, r *http.Request) error {
	app, err := h.ready()
	if err != nil {
		return err
	}
	now := time.Now()
	q := r.URL.Query()
	rg, err := parseRange(q, now, false)
	if err != nil {
		return err
	}
	source, typ, tenant := q.Get("source"), q.Get("type"), q.Get("tenant")
	if typ != "" && tenant != "" {
		return newError(http.StatusBadRequest, "type and tenant are counted apart from each other: ask for one at a time")
	}
	if tenant != "" && tenant != OtherTenant {
		tenant = tenantFilter(tenant)
	}
	buckets, err := app.StatsBuckets(r.Context(), rg.res, rg.from, rg.to)
	if err != nil {
		return err
	}
	s, err := app.Stats(r.Context(), now)
	if err != nil {
		return err
	}
	health, err := app.Health(r.Context())
	if err != nil {
		return err
	}
	paused := map[string]bool{}
	for _, p := range app.Pauses() {
		if p.WholeSource() {
			paused[p.Source] = true
		}
	}
	sums := map[string]map[string]int64{}
	for _, b := range buckets {
		for src, c := range b.Counters {
			if sums[src] == nil {
				sums[src] = map[string]int64{}
			}
			for name, n := range c {
				if !strings.HasPrefix(name, gaugePrefix) {
					sums[src][name] += n
				}
			}
		}
	}
	names := map[string]bool{}
	for src := range sums {
		names[src] = true
	}
	for src := range s.Sources {
		names[src] = true
	}
	for src := range health {
		names[src] = true
	}
	minutes := rg.to.Sub(rg.from).Minutes()
	res := RangeStatsAnswer{From: rg.from.UTC(), To: rg.to.UTC(), Resolution: rg.res.String(), Source: source, Type: typ, Tenant: tenant,
		Sources: map[string]SourceRange{}}
	total := map[string]int64{}
	pending := 0
	for src := range names {
		if source != "" && src != source {
			continue
		}
		c := sums[src]
		queue := s.Sources[src].Queue
		sr := SourceRange{RangeCounts: rangeCounts(c, typ, tenant, queue.Queued+queue.InFlight), OpenDLQ: queue.Dead,
			OldestQueuedAgeSeconds: health[src].OldestQueuedAge.Seconds(), Paused: paused[src], BreakerOpen: health[src].BreakerOpen}
		sr.ReceivedPerMinute = float64(sr.Total) / minutes
		res.Sources[src] = sr
		for name, n := range c {
			total[name] += n
		}
		pending += queue.Queued + queue.InFlight
	}
	res.RangeCounts = rangeCounts(total, typ, tenant, pending)
	return answer(w, res)
}

// rangeCounts derives getWebhookStats' fields from summed counters, of
// one event type when typ is set, of one tenant when tenant is (only
// received, delivered and dead are counted by type and by tenant; a
// tenant only while it is among its source's busiest, the others as
// OtherTenant).
func rangeCounts(c map[string]int64, typ, tenant string, pending int) RangeCounts {
	rc := RangeCounts{Pending: pending}
	switch {
	case typ != "":
		rc.Total, rc.Completed, rc.DeadLetter = c[TypeCounter("accepted", typ)], c[TypeCounter("delivered", typ)], c[TypeCounter("dead", typ)]
	case tenant != "":
		rc.Total, rc.Completed, rc.DeadLetter = c[TenantCounter("accepted", tenant)], c[TenantCounter("delivered", tenant)], c[TenantCounter("dead", tenant)]
	default:
		rc.Total, rc.Completed, rc.DeadLetter = c["accepted"], c["delivered"], c["dead"]
		retries, failed := c["retry"], c["retry"]+c["dead"]
		rc.TotalRetries, rc.Failed = &retries, &failed
		rc.AverageRetries = ratio(retries, rc.Completed+rc.DeadLetter, 1)
	}
	rc.SuccessRate = ratio(rc.Completed, rc.Completed+rc.DeadLetter, 100)
	rc.DeadLetterRate = ratio(rc.DeadLetter, rc.Total, 100)
	return rc
}

// ratio is a/b times scale, nil when b is 0.
func ratio(a, b int64, scale float64) *float64 {
	if b == 0 {
		return nil
	}
	r := float64(a) / float64(b) * scale
	return &r
}

// series answers GET /webhooks/stats/series?source=&from=&to=&step=
// (SeriesAnswer).
func (h *Handler) series(w http.ResponseWriter, r *http.Request) error {
	app, err := h.ready()
	if err != nil {
		return err
	}
	q := r.URL.Query()
	rg, err := parseRange(q, time.Now(), true)
	if err != nil {
		return err
	}
	buckets, err := app.StatsBuckets(r.Context(), rg.res, rg.from, rg.to)
	if err != nil {
		return err
	}
	return answer(w, buildSeries(buckets, rg, q.Get("source")))
}

// seriesStep gathers the buckets of one step.
type seriesStep struct {
	c   map[string]int64
	dlq map[string]int64 // each source's last DLQ size sample
}

// buildSeries sums the buckets (of source, or of every source) into the
// points of rg: counters add up, a gauge keeps each source's last sample
// of the step, summed over the sources.
func buildSeries(buckets []storage.StatsBucket, rg statsRange, source string) SeriesAnswer {
	n := points(rg.from, rg.to, rg.step)
	steps := make([]seriesStep, n)
	window := map[string]int64{}
	for _, b := range buckets {
		i := int(b.Start.Sub(rg.from) / rg.step)
		if i < 0 || i >= n {
			continue
		}
		st := &steps[i]
		for src, c := range b.Counters {
			if source != "" && src != source {
				continue
			}
			for name, v := range c {
				if name == DLQSizeGauge {
					if st.dlq == nil {
						st.dlq = map[string]int64{}
					}
					st.dlq[src] = v // buckets come oldest first: the last sample wins
					continue
				}
				if st.c == nil {
					st.c = map[string]int64{}
				}
				st.c[name] += v
				window[name] += v
			}
		}
	}
	out := SeriesAnswer{Source: source, From: rg.from.UTC(), To: rg.to.UTC(), StepSeconds: int64(rg.step / time.Second),
		StepRoundedFrom: roundedFrom(rg.asked), Resolution: rg.res.String(), LatencyBoundsSeconds: LatencyBounds, Points: make([]SeriesPoint, n),
		Attempts: map[string]map[string]int64{"delivered": {}, "dead": {}}, TopErrors: []ErrorCount{}}
	for i, st := range steps {
		c := st.c
		p := SeriesPoint{Time: rg.from.Add(time.Duration(i) * rg.step).UTC(), Received: c["accepted"], Delivered: c["delivered"],
			Dead: c["dead"], Retries: c["retry"], Failed: map[string]int64{}}
		for _, class := range []string{Failure4xx, Failure5xx, FailureConnection, FailureOther} {
			p.Failed[class] = c[failureCounterPrefix+class]
		}
		p.SuccessRate = ratio(p.Delivered, p.Delivered+p.Dead, 100)
		if st.dlq != nil {
			var sum int64
			for _, v := range st.dlq {
				sum += v
			}
			p.DLQSize = &sum
		}
		p.Latency = latencyPercentiles(c)
		out.Points[i] = p
	}
	for name, v := range window {
		if rest, ok := strings.CutPrefix(name, attemptsCounterPrefix); ok {
			if result, num, ok := strings.Cut(rest, ":"); ok && out.Attempts[result] != nil {
				out.Attempts[result][num] += v
			}
		} else if msg, ok := strings.CutPrefix(name, errorCounterPrefix); ok && v > 0 {
			out.TopErrors = append(out.TopErrors, ErrorCount{Message: msg, Count: v})
		}
	}
	slices.SortFunc(out.TopErrors, func(a, b ErrorCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Message, b.Message))
	})
	out.TopErrors = out.TopErrors[:min(len(out.TopErrors), topErrors)]
	return out
}

// latencyPercentiles interpolates p50, p95 and p99 in the latency
// buckets of c (nil when c counts no attempt).
func latencyPercentiles(c map[string]int64) *Percentiles {
	counts := make([]int64, len(LatencyBounds)+1)
	var total int64
	for i := range counts {
		counts[i] = c[latencyCounterPrefix+strconv.Itoa(i)]
		total += counts[i]
	}
	if total == 0 {
		return nil
	}
	return &Percentiles{P50: quantile(0.5, counts, total), P95: quantile(0.95, counts, total), P99: quantile(0.99, counts, total)}
}

// quantile is the q-quantile of the bucket counts (total > 0), linearly
// interpolated within its bucket; one past the last bound is that bound.
func quantile(q float64, counts []int64, total int64) float64 {
	rank := q * float64(total)
	var cum float64
	for i, n := range counts {
		if n == 0 || cum+float64(n) < rank {
			cum += float64(n)
			continue
		}
		if i == len(LatencyBounds) {
			return LatencyBounds[len(LatencyBounds)-1]
		}
		lower := 0.0
		if i > 0 {
			lower = LatencyBounds[i-1]
		}
		v := lower + (LatencyBounds[i]-lower)*(rank-cum)/float64(n)
		return math.Round(v*1e6) / 1e6
	}
	return LatencyBounds[len(LatencyBounds)-1]
}

// roundedFrom is SeriesAnswer.StepRoundedFrom: the step asked for, when it
// was rounded.
func roundedFrom(asked time.Duration) string {
	if asked == 0 {
		return ""
	}
	return asked.String()
}
