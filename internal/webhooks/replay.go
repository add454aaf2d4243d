package webhooks

import (
	"context"
	"time"

	"github.com/hookline/hookline/internal/operator"
	"github.com/hookline/hookline/storage"
)

// ReplayDelivered re-enqueues the delivered events matching f (one page
// of ListDelivered: at most f.EffectiveLimit(), oldest delivery first,
// after f.Cursor; NextCursor goes on) in their sources' replay
// lanes, with due times spaced at each source's delivery rate as a bulk
// retry's are (redrivePace), writes a "replayed" audit line for each, and
// wakes the workers once when any was re-enqueued. dryRun changes nothing
// and names the events that would be. An event replayed meanwhile by
// someone else fails with storage.ErrConflict. The error is a failure to
// list the events.
func (a *App) ReplayDelivered(ctx context.Context, f storage.ReplayFilter, dryRun bool) (operator.Replay, error) {
	res := operator.Replay{Replayed: []operator.ReplayedEvent{}}
	st, err := a.Store()
	if err != nil {
		return res, err
	}
	// the walk ends where the first page fixed it (ReplayCursor): what
	// this replay re-enqueues comes back delivered at the newest end
	if f.Cursor != "" {
		var until time.Time
		if f.Cursor, until, err = storage.ParseReplayCursor(f.Cursor); err != nil {
			return res, err
		}
		if f.Until.IsZero() || until.Before(f.Until) {
			f.Until = until
		}
	} else if f.Until.IsZero() {
		f.Until = time.Now()
	}
	page, err := st.ListDelivered(ctx, f)
	if err != nil {
		return res, err
	}
	infos := page.Events
	res.Matched, res.NextCursor = len(infos), storage.ReplayCursor(page.NextCursor, f.Until)
	due := time.Now()
	for i := range infos {
		info := &infos[i]
		ev := operator.ReplayedEvent{ID: info.ID, EventID: info.EventID, Source: info.Source,
			Destination: storage.DestinationOf(&storage.Event{Destination: info.Destination}), Type: info.EventType, Tenant: info.Tenant}
		if dryRun {
			res.Replayed = append(res.Replayed, ev)
			continue
		}
		if err := st.Replay(ctx, info, due); err != nil {
			if res.Failed == nil {
				res.Failed = map[string]error{}
			}
			res.Failed[info.ID] = err
			continue
		}
		res.Replayed = append(res.Replayed, ev)
		a.forgetSeen(info.Source, info.EventID)
		a.audit(stepReplayed, infoFields(info)...)
		due = due.Add(a.redrivePace(info.Source, info.Destination))
	}
	if !dryRun && len(res.Replayed) > 0 {
		res.Spread = time.Until(due)
		a.Notify()
	}
	return res, nil
}
