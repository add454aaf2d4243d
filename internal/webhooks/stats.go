package webhooks

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/hookline/hookline/internal/operator"
	"github.com/hookline/hookline/storage"
)

// statsFlushEvery is how often counter deltas are written to the store,
// where all nodes' counts add up.
const statsFlushEvery = 2 * time.Second

// statsBuffer gathers counter deltas in memory between flushes, so that
// counting costs the request path no store round trip.
type statsBuffer struct {
	mu     sync.Mutex
	deltas map[string]map[string]int64
	// the names counted apart, by breakdown (event type, destination) and
	// source
	names map[breakdownOf]map[string]bool
}

// breakdownOf is one source's breakdown of a kind: "type" or "destination".
type breakdownOf struct{ kind, source string }

// maxTypesPerSource bounds the event types counted apart for one source
// (by this process); the types past it are counted as otherType, so that
// a provider sending ever new types cannot grow the stats without end.
const maxTypesPerSource = 256

// maxDestinationsPerSource bounds the destinations counted apart for one
// source (by this process), as maxTypesPerSource does the types. A
// source's destinations are its config's, but reloads may rename them
// while deliveries to the old names are still queued.
const maxDestinationsPerSource = 256

// otherType is the type the types past maxTypesPerSource are counted as,
// and the destination the destinations past maxDestinationsPerSource are
// (no destination name holds parentheses).
const otherType = "(other)"

// addType adds n to the counter of outcome for events of type typ.
func (b *statsBuffer) addType(source, outcome, typ string, n int64) {
	typ = b.bounded(breakdownOf{"type", source}, typ, maxTypesPerSource)
	b.add(source, operator.TypeCounter(outcome, typ), n)
}

// addDestination adds n to the counter of outcome for the deliveries to
// destination dest.
func (b *statsBuffer) addDestination(source, outcome, dest string, n int64) {
	dest = b.bounded(breakdownOf{"destination", source}, dest, maxDestinationsPerSource)
	b.add(source, operator.DestinationCounter(outcome, dest), n)
}

// bounded is the name name is counted under in breakdown of: itself while
// fewer than bound names are counted apart (or it already is), else
// otherType.
func (b *statsBuffer) bounded(of breakdownOf, name string, bound int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	seen := b.names[of]
	if seen == nil {
		if b.names == nil {
			b.names = map[breakdownOf]map[string]bool{}
		}
		seen = map[string]bool{}
		b.names[of] = seen
	}
	if !seen[name] {
		if len(seen) >= bound {
			return otherType
		}
		seen[name] = true
	}
	return name
}

func (b *statsBuffer) add(source, name string, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.deltas == nil {
		b.deltas = map[string]map[string]int64{}
	}
	m := b.deltas[source]
	if m == nil {
		m = map[string]int64{}
		b.deltas[source] = m
	}
	m[name] += n
}

func (b *statsBuffer) take() map[string]map[string]int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	d := b.deltas
	b.deltas = nil
	return d
}

// putBack returns deltas whose write failed, to be written with the next flush.
func (b *statsBuffer) putBack(d map[string]map[string]int64) {
	for source, m := range d {
		for name, n := range m {
			b.add(source, name, n)
		}
	}
}

// Count adds n to a source's counter (received outcomes, delivery results).
func (a *App) Count(source, name string, n int64) {
	if a.stats != nil {
		a.stats.add(source, name, n)
	}
}

// countType adds one to a source's counter of outcome (accepted,
// delivered, dead) for events of type typ; events without a type are
// counted only by source.
func (a *App) countType(source, outcome, typ string) {
	if a.stats != nil && typ != "" {
		a.stats.addType(source, outcome, typ, 1)
	}
}

// countDestination adds one to a source's counter of outcome (delivered,
// dead) for the deliveries to destination dest ("default" for forward_to's).
func (a *App) countDestination(source, outcome, dest string) {
	if a.stats != nil {
		a.stats.addDestination(source, outcome, dest, 1)
	}
}

// flushStats writes the buffered deltas to the store; dead says whether
// they counted a delivery moved to the DLQ.
func (a *App) flushStats(ctx context.Context, st storage.Operations) (dead bool) {
	d := a.stats.take()
	if len(d) == 0 {
		return false
	}
	for _, m := range d {
		dead = dead || m["dead"] > 0
	}
	if err := st.AddStats(ctx, time.Now(), d); err != nil {
		a.stats.putBack(d)
		if ctx.Err() == nil {
			a.log.Warn("writing stats to the store; will retry", zap.Error(err))
		}
	}
	return dead
}

// statsFlusher writes the buffered deltas every statsFlushEvery, and
// samples the DLQ size every dlqSampleEvery and after a flush counting
// new dead letters, until ctx ends.
func (a *App) statsFlusher(ctx context.Context, st storage.Store) {
	t := time.NewTicker(statsFlushEvery)
	defer t.Stop()
	a.sampleDLQ(ctx, st)
	sampled := time.Now()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			a.flushStats(fctx, st)
			cancel()
			return
		case now := <-t.C:
			if a.flushStats(ctx, st) || now.Sub(sampled) >= dlqSampleEvery {
				a.sampleDLQ(ctx, st)
				sampled = now
			}
		}
	}
}

// Stats reads the queue's current sizes and, by webhook source (alerts
// left out), its queue, open DLQ entries and counters since since and
// all-time, as every node sharing the store wrote them (statsFlushEvery).
func (a *App) Stats(ctx context.Context, since time.Time) (operator.Stats, error) {
	st, err := a.Store()
	if err != nil {
		return operator.Stats{}, err
	}
	recent, all, err := st.Stats(ctx, since)
	if err != nil {
		return operator.Stats{}, err
	}
	lanes, err := st.QueueByLane(ctx)
	if err != nil {
		return operator.Stats{}, err
	}
	queues := storage.CountsBySource(lanes)
	dead, err := st.DLQCounts(ctx)
	if err != nil {
		return operator.Stats{}, err
	}
	c := storage.SumCounts(lanes, dead) // Counts, from the same readings
	names := map[string]bool{}
	for _, m := range []map[string]map[string]int64{all, recent} {
		for src, c := range m {
			if !operator.SeriesOnly(c) { // the DLQ size samples of a source never counted
				names[src] = true
			}
		}
	}
	for src := range queues {
		names[src] = true
	}
	for src := range dead {
		names[src] = true
	}
	delete(names, alertSource)
	out := operator.Stats{Queue: c, Lanes: lanes, Sources: make(map[string]operator.SourceCounts, len(names))}
	for src := range names {
		q := queues[src]
		for status, n := range dead[src] {
			if status.Open() {
				q.Dead += n
			}
		}
		out.Sources[src] = operator.SourceCounts{Queue: q, Recent: recent[src], AllTime: all[src]}
	}
	return out, nil
}
