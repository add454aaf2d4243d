package webhooks

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

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

// sourceStats is one source's counters with the rates derived from them.
type sourceStats struct {
	Counters    map[string]int64 `json:"counters"`
	Received    int64            `json:"received"`
	Duplicates  int64            `json:"duplicates"`
	Rejected    int64            `json:"rejected"`
	Delivered   int64            `json:"delivered"`
	Dead        int64            `json:"dead"`
	SuccessRate *float64         `json:"success_rate,omitempty"` // delivered / (delivered + dead)
	DLQRate     *float64         `json:"dlq_rate,omitempty"`     // dead / accepted
	AvgAttempts *float64         `json:"avg_attempts,omitempty"` // attempts / (delivered + dead)
}

// summarize derives the per-source view of raw counters.
func summarize(c map[string]int64) sourceStats {
	s := sourceStats{Counters: c, Received: c["accepted"], Duplicates: c["duplicate"],
		Delivered: c["delivered"], Dead: c["dead"]}
	for name, n := range c {
		switch name {
		case "accepted", "duplicate", "handshake", "delivered", "dead", "retry", "attempts":
		default:
			s.Rejected += n // error codes, in lower case
		}
	}
	ratio := func(a, b int64) *float64 {
		if b == 0 {
			return nil
		}
		r := float64(a) / float64(b)
		return &r
	}
	s.SuccessRate = ratio(s.Delivered, s.Delivered+s.Dead)
	s.DLQRate = ratio(s.Dead, s.Received)
	s.AvgAttempts = ratio(c["attempts"], s.Delivered+s.Dead)
	return s
}
