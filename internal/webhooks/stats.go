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

// flushStats writes the buffered deltas to the store.
func (a *App) flushStats(ctx context.Context, st storage.Operations) {
	d := a.stats.take()
	if len(d) == 0 {
		return
	}
	if err := st.AddStats(ctx, time.Now(), d); err != nil {
		a.stats.putBack(d)
		if ctx.Err() == nil {
			a.log.Warn("writing stats to the store; will retry", zap.Error(err))
		}
	}
}

func (a *App) statsFlusher(ctx context.Context, st storage.Operations) {
	t := time.NewTicker(statsFlushEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			a.flushStats(fctx, st)
			cancel()
			return
		case <-t.C:
			a.flushStats(ctx, st)
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
	c, err := st.Counts(ctx)
	if err != nil {
		return operator.Stats{}, err
	}
	recent, all, err := st.Stats(ctx, since)
	if err != nil {
		return operator.Stats{}, err
	}
	queues, err := st.QueueBySource(ctx)
	if err != nil {
		return operator.Stats{}, err
	}
	dead, err := st.DLQCounts(ctx)
	if err != nil {
		return operator.Stats{}, err
	}
	names := map[string]bool{}
	for _, m := range []map[string]map[string]int64{all, recent} {
		for src := range m {
			names[src] = true
		}
	}
	for src := range queues {
		names[src] = true
	}
	for src := range dead {
		names[src] = true
	}
	delete(names, alertSource)
	out := operator.Stats{Queue: c, Sources: make(map[string]operator.SourceCounts, len(names))}
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
