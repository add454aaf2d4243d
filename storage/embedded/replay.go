package embedded

import (
	"bytes"
	"context"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded/kv"
)

// ListDelivered implements storage.Store: it walks the finished index
// (bDone, by finish time) from the cursor or f.Since to f.Until, filtering
// on the index values (storage.IndexEntry) and reading only the records it
// answers with, at most f.ScanBudget() index entries a page.
func (s *Store) ListDelivered(ctx context.Context, f storage.ReplayFilter) (storage.ReplayPage, error) {
	page := storage.ReplayPage{Events: []storage.EventInfo{}}
	limit, budget := f.EffectiveLimit(), f.ScanBudget()
	after, ok, err := storage.ParseListCursor(f.Cursor)
	if err != nil {
		return page, err
	}
	err = s.view(func(tx *kv.Tx) error {
		c := tx.Bucket(bDone).Cursor()
		k, v := c.First()
		switch {
		case ok:
			from := timeKey(time.Unix(0, after.At), []byte(after.ID))
			if k, v = c.Seek(from); k != nil && bytes.Equal(k, from) {
				k, v = c.Next()
			}
		case !f.Since.IsZero() && f.Since.After(time.Unix(0, 0)):
			k, v = c.Seek(timeKey(f.Since, nil))
		}
		examined := 0
		var last []byte // the last key examined
		for ; k != nil; k, v = c.Next() {
			if len(k) < 8 {
				continue
			}
			fin := timeAt(k)
			if !f.Until.IsZero() && fin.After(f.Until) {
				break
			}
			if len(page.Events) == limit || examined == budget {
				page.NextCursor = storage.ListCursor(storage.ListPosition{At: timeAt(last).UnixNano(), ID: string(last[8:])})
				break
			}
			examined, last = examined+1, k
			if ix, ok := storage.DecodeIndexEntry(v); ok && !f.MatchesIndex(string(k[8:]), ix, fin) {
				continue
			}
			rec, err := getRecord(tx, k[8:])
			if err != nil || rec == nil || !f.Matches(&rec.Event, rec.Status, rec.FinishedAt) {
				continue // an unreadable record is not replayed
			}
			page.Events = append(page.Events, *storage.NewEventInfo(&rec.Event, rec.Attempts, rec.Status, time.Time{}, rec.FinishedAt))
		}
		return nil
	})
	return page, err
}

// Replay implements storage.Store: one transaction checks the event is
// still delivered and queues it in its replay lane.
func (s *Store) Replay(ctx context.Context, ev *storage.EventInfo, due time.Time) error {
	due = storage.RequeueDue(due, s.now())
	return s.update(ctx, func(tx *kv.Tx) error {
		id := []byte(ev.ID)
		rec, err := getRecord(tx, id)
		if err != nil {
			return err
		}
		st := storage.Status("")
		if rec != nil && rec.Source == ev.Source {
			st = rec.Status
		}
		if err := storage.CheckReplayEvent(st); err != nil {
			return err
		}
		if err := tx.Bucket(bDone).Delete(timeKey(rec.FinishedAt, id)); err != nil {
			return err
		}
		storage.ReplayJob(&rec.Job)
		rec.Status = storage.StatusQueued
		rec.FinishedAt = time.Time{}
		rec.Due = due
		if err := putRecord(tx, rec); err != nil {
			return err
		}
		return putDue(tx, rec)
	})
}
