package webhooks

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/hookline/hookline/internal/operator"
	"github.com/hookline/hookline/storage"
)

// statsFlushEvery is how often counter deltas are written to the store,
// where all nodes' counts add up.
const statsFlushEvery = 2 * time.Second

// statsBuffer gathers counter deltas in memory between flushes, so that
// counting costs the request path no store round trip. A flush writes
// them as one storage.StatsBatch with an ID of its own; a batch whose
// write failed is kept and written again under the same ID (the store
// applies an ID once: a write that took effect but lost its answer does
// not count twice), before the deltas counted since.
type statsBuffer struct {
	mu     sync.Mutex
	deltas map[string]map[string]int64
	// latestValues are the values kept at their largest
	// (storage.StatsBatch's Latest), by source and name
	latestValues map[string]map[string]int64
	// pending is the batch whose write failed, nil when none
	pending *storage.StatsBatch
	// names are the names counted apart, shared by every app instance of
	// the store (they outlive a reload) and seeded from the store's
	// all-time totals (they outlive a restart)
	names *statsNames
}

// statsNames are the names counted apart by breakdown (event type,
// destination, error message) and source: at most a bound each, the rest
// counted as otherType, so that a provider sending ever new types cannot
// grow the stats without end, across reloads and restarts too.
type statsNames struct {
	mu     sync.Mutex
	names  map[breakdownOf]map[string]bool
	seeded bool
	// errorsSince is when the error messages counted apart were last
	// forgotten: they are counted in the windows only (48 h), so their
	// bound is renewed as often, lest a process's first messages hold it
	// for good
	errorsSince time.Time
	// tenants are the summaries of the sources' tenants (tenantstats.go)
	tenants map[string]*tenantSummary
}

// breakdownOf is one source's breakdown of a kind: "type", "destination"
// or "error".
type breakdownOf struct{ kind, source string }

// maxTypesPerSource bounds the event types counted apart for one source;
// the types past it are counted as otherType.
const maxTypesPerSource = 256

// maxDestinationsPerSource bounds the destinations counted apart for one
// source, as maxTypesPerSource does the types. A source's destinations
// are its config's, but reloads may rename them while deliveries to the
// old names are still queued.
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
	if b.names == nil {
		b.names = new(statsNames)
	}
	return b.names.bounded(of, name, bound)
}

func (n *statsNames) bounded(of breakdownOf, name string, bound int) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if of.kind == "error" {
		n.renewErrors(time.Now())
	}
	if n.admit(of, name, bound) {
		return name
	}
	return otherType
}

// renewErrors forgets the error messages counted apart once they are older
// than the windows that count them (storage.StatsRetention). The caller
// holds mu.
func (n *statsNames) renewErrors(now time.Time) {
	if n.errorsSince.IsZero() {
		n.errorsSince = now
		return
	}
	if now.Sub(n.errorsSince) < storage.StatsRetention {
		return
	}
	for of := range n.names {
		if of.kind == "error" {
			delete(n.names, of)
		}
	}
	n.errorsSince = now
}

// admit counts name apart in breakdown of unless bound names are already;
// it reports whether name is counted apart. The caller holds mu.
func (n *statsNames) admit(of breakdownOf, name string, bound int) bool {
	seen := n.names[of]
	if seen == nil {
		if n.names == nil {
			n.names = map[breakdownOf]map[string]bool{}
		}
		seen = map[string]bool{}
		n.names[of] = seen
	}
	if !seen[name] {
		if len(seen) >= bound {
			return false
		}
		seen[name] = true
	}
	return true
}

// needsSeed reports whether seed has not run yet for this store.
func (n *statsNames) needsSeed() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return !n.seeded
}

// seed admits the types and destinations the store's all-time totals
// already count apart (once per store in this process), so that a restart
// does not let another bound's worth of new names in: what is stored
// keeps its place, new names take what is left.
func (n *statsNames) seed(allTime map[string]map[string]int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.seeded {
		return
	}
	n.seeded = true
	for source, counters := range allTime {
		for name := range counters {
			kind, value, ok := operator.BreakdownOf(name)
			if !ok || value == otherType {
				continue
			}
			// every stored name is admitted, even past the bound (an
			// earlier version stored them): it is counted in the store
			// already; new names find the bound reached sooner
			of := breakdownOf{kind, source}
			if n.names == nil {
				n.names = map[breakdownOf]map[string]bool{}
			}
			if n.names[of] == nil {
				n.names[of] = map[string]bool{}
			}
			n.names[of][value] = true
		}
	}
}

func (b *statsBuffer) add(source, name string, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	sourceValues(&b.deltas, source)[name] += n
}

// addLatest adds n to source's counter name and keeps v as its value of
// latest if it is the largest yet, under one lock: a secret's match, on
// every verified request.
func (b *statsBuffer) addLatest(source, name string, n int64, latest string, v int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	sourceValues(&b.deltas, source)[name] += n
	m := sourceValues(&b.latestValues, source)
	m[latest] = max(m[latest], v)
}

// sourceValues is source's map in *all, made when missing (the caller
// holds b.mu).
func sourceValues(all *map[string]map[string]int64, source string) map[string]int64 {
	if *all == nil {
		*all = map[string]map[string]int64{}
	}
	m := (*all)[source]
	if m == nil {
		m = map[string]int64{}
		(*all)[source] = m
	}
	return m
}

// next is the batch to write: the pending one, else a new one of the
// deltas and latest values counted since the last (false when there are
// none), its time series' counters apart (operator.SeriesCounter: they go
// to the windows' buckets only).
func (b *statsBuffer) next(now time.Time) (storage.StatsBatch, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pending != nil {
		return *b.pending, true
	}
	if len(b.deltas) == 0 && len(b.latestValues) == 0 {
		return storage.StatsBatch{}, false
	}
	batch := storage.StatsBatch{ID: newBatchID(), At: now, Counters: map[string]map[string]int64{}, Window: map[string]map[string]int64{},
		Latest: b.latestValues}
	for source, m := range b.deltas {
		for name, n := range m {
			into := batch.Counters
			if operator.SeriesCounter(name) {
				into = batch.Window
			}
			if into[source] == nil {
				into[source] = map[string]int64{}
			}
			into[source][name] = n
		}
	}
	b.deltas, b.latestValues = nil, nil
	b.pending = &batch
	return batch, true
}

// written ends the pending batch: written, or given up.
func (b *statsBuffer) written() {
	b.mu.Lock()
	b.pending = nil
	b.mu.Unlock()
}

// newBatchID names a stats batch (time-ordered, unique).
func newBatchID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return ""
	}
	return id.String()
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

// flushStats writes the pending batch, then the deltas counted since, to
// the store; dead says whether they counted a delivery moved to the DLQ.
// A batch whose write fails stays pending for the next flush, under its
// ID, unless it is older than the store remembers IDs for
// (storage.StatsBatchMemory, with a margin): then it is given up, its
// counts lost, rather than risk counting them twice.
func (a *App) flushStats(ctx context.Context, st storage.Operations) (dead bool) {
	for range 2 { // the pending batch, then the new deltas
		batch, ok := a.stats.next(time.Now())
		if !ok {
			return dead
		}
		if err := st.AddStats(ctx, batch); err != nil {
			if time.Since(batch.At) > storage.StatsBatchMemory-5*time.Minute {
				a.stats.written()
				a.log.Error("stats batch given up: the store failed its write for an hour", zap.Error(err))
			} else if ctx.Err() == nil {
				a.log.Warn("writing stats to the store; will retry", zap.Error(err))
			}
			return dead
		}
		a.stats.written()
		for _, m := range batch.Counters {
			dead = dead || m["dead"] > 0
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
	sp := spoolOf(st)
	// with a spool, an unreachable store still gets an answer: the
	// spool's, the store's parts marked unavailable
	failed := func(err error) (operator.Stats, error) {
		if sp != nil && errors.Is(err, storage.ErrUnavailable) {
			return operator.Stats{Unavailable: true, Spool: spoolInfo(sp), Lanes: map[string]storage.Counts{},
				Sources: map[string]operator.SourceCounts{}, SignatureFailures: a.signatureFailures()}, nil
		}
		return operator.Stats{}, err
	}
	recent, all, err := st.Stats(ctx, since)
	if err != nil {
		return failed(err)
	}
	lanes, err := st.QueueByLane(ctx)
	if err != nil {
		return failed(err)
	}
	queues := storage.CountsBySource(lanes)
	dead, err := st.DLQCounts(ctx)
	if err != nil {
		return failed(err)
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
	out := operator.Stats{Queue: c, Lanes: lanes, Sources: make(map[string]operator.SourceCounts, len(names)),
		SignatureFailures: a.signatureFailures()}
	if sp != nil {
		out.Spool = spoolInfo(sp)
	}
	for src := range names {
		q := queues[src]
		for status, n := range dead[src] {
			if status.Open() {
				q.Dead += n
			}
		}
		out.Sources[src] = operator.SourceCounts{Queue: q, Recent: recent[src], AllTime: all[src], Secrets: a.secretsInEffect(src)}
	}
	return out, nil
}
