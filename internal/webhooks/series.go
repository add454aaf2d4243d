package webhooks

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/operator"
	"github.com/hookline/hookline/storage"
)

// maxErrorsPerSource bounds the error messages counted apart for one
// source (by this process), as maxTypesPerSource does the types: the
// messages past it count as otherType.
const maxErrorsPerSource = 32

// dlqSampleEvery is how often each node samples the open DLQ entries
// into the stats (operator.DLQSizeGauge): a minute's gauge needs no more.
const dlqSampleEvery = time.Minute

// countAttempt adds a finished delivery attempt to the time series'
// counters (operator's seriescounters.go), in the stats buffer as every
// counter: its latency bucket; for a failure its class and error; for the
// delivery's end (delivered or dead) its attempt number.
func (a *App) countAttempt(source, result string, att *storage.Attempt) {
	if a.stats == nil {
		return
	}
	a.stats.add(source, operator.LatencyCounter(att.Duration), 1)
	if result != "delivered" {
		a.stats.add(source, operator.FailureCounter(att.Status), 1)
		msg := a.stats.bounded(breakdownOf{"error", source}, operator.NormalizeError(att.Error), maxErrorsPerSource)
		a.stats.add(source, operator.ErrorCounter(msg), 1)
	}
	if result != "retry" {
		a.stats.add(source, operator.AttemptsCounter(result, att.N), 1)
	}
}

// sampleDLQ writes each source's open DLQ entries to the stats gauges
// (every source the store has entries of, and the configured ones at 0).
func (a *App) sampleDLQ(ctx context.Context, st storage.Store) {
	dead, err := st.DLQCounts(ctx)
	if err != nil {
		if ctx.Err() == nil {
			a.log.Warn("sampling the DLQ size for the stats; will retry", zap.Error(err))
		}
		return
	}
	gauges := map[string]map[string]int64{}
	for _, src := range a.sourceNames() {
		gauges[src] = map[string]int64{operator.DLQSizeGauge: 0}
	}
	for src, m := range dead {
		var open int64
		for status, n := range m {
			if status.Open() {
				open += int64(n)
			}
		}
		gauges[src] = map[string]int64{operator.DLQSizeGauge: open}
	}
	delete(gauges, alertSource)
	if err := st.SetStatsGauges(ctx, time.Now(), gauges); err != nil && ctx.Err() == nil {
		a.log.Warn("writing the DLQ size to the stats; will retry", zap.Error(err))
	}
}

// StatsBuckets reads the stats buckets of res starting in [from, to), the
// internal alert source left out.
func (a *App) StatsBuckets(ctx context.Context, res storage.StatsResolution, from, to time.Time) ([]storage.StatsBucket, error) {
	st, err := a.Store()
	if err != nil {
		return nil, err
	}
	bs, err := st.StatsBuckets(ctx, res, from, to)
	if err != nil {
		return nil, err
	}
	for _, b := range bs {
		delete(b.Counters, alertSource)
	}
	return bs, nil
}

// Health reads, for every configured source and every source with a
// queued delivery, how long its longest-waiting delivery has been due
// (one store read per lane: QueueHeads) and whether this node's breakers
// hold one of its upstreams.
func (a *App) Health(ctx context.Context) (map[string]operator.Health, error) {
	ages, err := a.oldestQueuedAges(ctx, time.Now())
	if err != nil {
		return nil, err
	}
	out := map[string]operator.Health{}
	for _, src := range a.sourceNames() { // every configured source has a row
		if src != alertSource {
			out[src] = operator.Health{}
		}
	}
	for src, age := range ages {
		out[src] = operator.Health{OldestQueuedAge: age}
	}
	if a.breakers == nil {
		return out, nil
	}
	open := map[string]bool{}
	for upstream, o := range a.breakers.States() {
		open[upstream] = o
	}
	a.sourceMu.RLock()
	defer a.sourceMu.RUnlock()
	for name, src := range a.sources {
		if name == alertSource {
			continue
		}
		for _, t := range src.targets {
			if open[delivery.BreakerName(t.URL)] {
				h := out[name]
				h.BreakerOpen = true
				out[name] = h
			}
		}
	}
	return out, nil
}

// oldestQueuedAges is, by webhook source, how long the first due job of
// its lanes has waited past its due time at now (a job not yet due, or
// leased: 0), from storage.QueueHeads.
func (a *App) oldestQueuedAges(ctx context.Context, now time.Time) (map[string]time.Duration, error) {
	st, err := a.Store()
	if err != nil {
		return nil, err
	}
	heads, err := st.QueueHeads(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]time.Duration{}
	for lane, due := range heads {
		src := storage.SourceOfLane(lane)
		if src == alertSource {
			continue
		}
		out[src] = max(out[src], now.Sub(due), 0)
	}
	return out, nil
}
