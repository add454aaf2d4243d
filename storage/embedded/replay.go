package embedded

import (
	"context"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/hookline/hookline/storage"
)

// ListDelivered implements storage.Store: it walks the finished index
// (bDone, by finish time) from f.Since to f.Until.
func (s *Store) ListDelivered(ctx context.Context, f storage.ReplayFilter) ([]storage.EventInfo, error) {
	limit := f.EffectiveLimit()
	out := []storage.EventInfo{}
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bDone).Cursor()
		k, _ := c.First()
		if !f.Since.IsZero() {
			k, _ = c.Seek(timeKey(f.Since, nil))
		}
		for ; k != nil && len(out) < limit; k, _ = c.Next() {
			if len(k) < 8 {
				continue
			}
			fin := timeAt(k)
			if !f.Until.IsZero() && fin.After(f.Until) {
				break
			}
			rec, err := getRecord(tx, k[8:])
			if err != nil || rec == nil || !f.Matches(&rec.Event, rec.Status, rec.FinishedAt) {
				continue // an unreadable record is not replayed
			}
			out = append(out, *storage.NewEventInfo(&rec.Event, rec.Attempts, rec.Status, time.Time{}, rec.FinishedAt))
		}
		return nil
	})
	return out, err
}

// Replay implements storage.Store: one transaction checks the event is
// still delivered and queues it in its replay lane.
func (s *Store) Replay(ctx context.Context, ev *storage.EventInfo, due time.Time) error {
	return s.update(ctx, func(tx *bolt.Tx) error {
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
