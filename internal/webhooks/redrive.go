package webhooks

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/hookline/hookline/internal/operator"
	"github.com/hookline/hookline/storage"
)

// Operator actions that put work back in the queue. Each wakes the workers
// itself (as SetPaused does on resume), so no caller has to remember to.

// defaultRedrivePace spaces re-enqueued events when the source has no
// rate_limit: a redrive of a big DLQ must not flatten the upstream.
const defaultRedrivePace = 100 * time.Millisecond

// RetryDead re-enqueues the event of DLQ entry id, due now, with a fresh
// attempt budget, and wakes the workers. Errors are the store's
// (storage.ErrDLQNotFound, storage.ErrConflict, ...) or wrap storage.ErrUnavailable.
func (a *App) RetryDead(ctx context.Context, id string) error {
	st, err := a.Store()
	if err != nil {
		return err
	}
	// the entry's event, read first: its source and id do not change, and
	// the cache must forget it whatever a read after the retry would do
	e, getErr := st.DLQGet(ctx, id)
	if err := st.DLQRetry(ctx, id, time.Now()); err != nil {
		return err
	}
	if getErr == nil {
		a.forgetSeen(e.Source, e.EventID)       // queued again: the store answers its duplicates
		a.audit(stepRetried, entryFields(e)...) // the entry read once serves the audit line too
	} else {
		a.auditEntry(ctx, st, stepRetried, id)
	}
	a.Notify()
	return nil
}

// RedriveDead re-enqueues the DLQ entries matching f (one page of
// DLQList: at most f.EffectiveLimit(), after f.Cursor, its work bounded by
// the page's scan budget), skipping events delivered meanwhile (the
// provider resent them and they went through), with due times spaced at
// each source's delivery rate (redrivePace), and wakes the workers once
// when any was re-enqueued. The answer's NextCursor goes on where the
// page stopped. dryRun changes nothing and says what would be
// re-enqueued. The error is a failure to list the entries.
func (a *App) RedriveDead(ctx context.Context, f storage.DLQFilter, dryRun bool) (operator.Redrive, error) {
	res := operator.Redrive{Retried: []string{}, SkippedDelivered: []string{}}
	st, err := a.Store()
	if err != nil {
		return res, err
	}
	page, err := st.DLQList(ctx, f)
	if err != nil {
		return res, err
	}
	entries := page.Entries
	res.Matched, res.NextCursor = len(entries), page.NextCursor
	due := time.Now()
	for _, e := range entries {
		// delivered meanwhile (the provider resent it and it went through)?
		if e.EventID != storage.EventIDOfDelivery(e.ID) {
			if info, err := st.Lookup(ctx, e.Source, e.EventID); err == nil && deliveredMeanwhile(info, &e) {
				res.SkippedDelivered = append(res.SkippedDelivered, e.ID)
				continue
			}
		}
		if dryRun {
			res.Retried = append(res.Retried, e.ID)
			continue
		}
		if err := st.DLQRetry(ctx, e.ID, due); err != nil {
			if res.Failed == nil {
				res.Failed = map[string]error{}
			}
			res.Failed[e.ID] = err
			continue
		}
		res.Retried = append(res.Retried, e.ID)
		a.forgetSeen(e.Source, e.EventID)
		a.audit(stepRetried, append(entryFields(&e), zap.Bool("bulk", true))...)
		due = due.Add(a.redrivePace(e.Source, e.Destination))
	}
	if !dryRun && len(res.Retried) > 0 {
		res.Spread = time.Until(due)
		a.Notify()
	}
	return res, nil
}

// deliveredMeanwhile reports whether info, what the store finds under the
// provider's event id of DLQ entry e, is another event (the provider resent
// it after the dedupe window) whose delivery to e's destination went
// through. The other event's deliveries to other destinations do not
// count: they say nothing of the upstream e was meant for.
func deliveredMeanwhile(info *storage.EventInfo, e *storage.DLQEntry) bool {
	if info.ID == storage.EventIDOfDelivery(e.ID) {
		return false // the entry's own event
	}
	dest := storage.DestinationOf(&storage.Event{Destination: e.Destination})
	if len(info.Deliveries) == 0 { // one delivery, the default destination's
		return dest == storage.DefaultDestination && info.Status == storage.StatusDelivered
	}
	for _, d := range info.Deliveries {
		if d.Destination == dest {
			return d.Status == storage.StatusDelivered
		}
	}
	return false
}

// redrivePace is the spacing of a bulk retry's (or a replay's) deliveries
// to a source's destination: its rate_limit when it has one, else
// defaultRedrivePace.
func (a *App) redrivePace(source, destination string) time.Duration {
	a.sourceMu.RLock()
	defer a.sourceMu.RUnlock()
	if src, ok := a.sources[source]; ok {
		if t, ok := src.targetOf(destination); ok && t.Rate.Valid() {
			return t.Rate.Interval()
		}
	}
	return defaultRedrivePace
}
