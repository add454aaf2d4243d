package embedded

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded/kv"
)

// DLQList implements storage.Store: it walks the DLQ index (bDLQIdx, by
// creation time) backwards from the cursor or f.Until, filtering on the
// index values (storage.IndexEntry) and reading only the entries it
// answers with, at most f.ScanBudget() index entries a page.
func (s *Store) DLQList(ctx context.Context, f storage.DLQFilter) (storage.DLQPage, error) {
	page := storage.DLQPage{Entries: []storage.DLQEntry{}}
	limit, budget := f.EffectiveLimit(), f.ScanBudget()
	after, ok, err := storage.ParseListCursor(f.Cursor)
	if err != nil {
		return page, err
	}
	var start []byte // the walk begins before this key (nil: at the end)
	if ok {
		start = timeKey(time.Unix(0, after.At), []byte(after.ID))
	}
	if !f.Until.IsZero() {
		if f.Until.Before(time.Unix(0, 0)) {
			return page, nil
		}
		if k := timeKey(f.Until.Add(1), nil); start == nil || bytes.Compare(k, start) < 0 {
			start = k
		}
	}
	err = s.view(func(tx *kv.Tx) error {
		c := tx.Bucket(bDLQIdx).Cursor()
		examined := 0
		var last []byte // the last key examined
		for k, v := lastBefore(c, start); k != nil; k, v = c.Prev() {
			if len(k) < 8 {
				continue
			}
			at := timeAt(k)
			if !f.Since.IsZero() && at.Before(f.Since) {
				break
			}
			if len(page.Entries) == limit || examined == budget {
				page.NextCursor = storage.ListCursor(storage.ListPosition{At: timeAt(last).UnixNano(), ID: string(last[8:])})
				break
			}
			examined, last = examined+1, k
			if ix, ok := storage.DecodeIndexEntry(v); ok && !f.MatchesIndex(ix, at) {
				continue
			}
			e, err := getEntry(tx, string(k[8:]))
			if err != nil {
				return err
			}
			if e == nil || !f.Matches(e) {
				continue
			}
			e.Payload, e.Headers = nil, nil
			fillWaiting(tx, e)
			page.Entries = append(page.Entries, *e)
		}
		return nil
	})
	return page, err
}

// lastBefore positions c on the last key before start (the last key when
// start is nil).
func lastBefore(c *kv.Cursor, start []byte) (k, v []byte) {
	if start == nil {
		return c.Last()
	}
	if k, _ = c.Seek(start); k == nil {
		return c.Last()
	}
	return c.Prev()
}

// DLQGet implements storage.Store.
func (s *Store) DLQGet(ctx context.Context, id string) (*storage.DLQEntry, error) {
	var e *storage.DLQEntry
	err := s.view(func(tx *kv.Tx) error {
		var err error
		if e, err = getEntry(tx, id); e != nil {
			fillWaiting(tx, e)
		}
		return err
	})
	if err == nil && e == nil {
		err = storage.ErrDLQNotFound
	}
	return e, err
}

// DLQRetry implements storage.Store.
func (s *Store) DLQRetry(ctx context.Context, id string, due time.Time) error {
	now := s.now()
	return s.update(ctx, func(tx *kv.Tx) error {
		e, err := getEntry(tx, id)
		if err != nil {
			return err
		}
		if e == nil {
			return storage.ErrDLQNotFound
		}
		if err := e.Transition(storage.DLQRetried, "", now); err != nil {
			return err
		}
		rec, err := getRecord(tx, []byte(id))
		if err != nil {
			return err
		}
		var stored *storage.Event
		if rec != nil {
			if err := storage.CheckRetryEvent(rec.Status); err != nil {
				return err
			}
			if err := tx.Bucket(bDone).Delete(timeKey(rec.FinishedAt, []byte(id))); err != nil {
				return err
			}
			stored = &rec.Event
		} else {
			rec = &record{}
		}
		rec.Event = storage.RetryEvent(stored, e)
		rec.Attempts = e.Attempts
		rec.RoundStart = len(e.Attempts)
		rec.Status = storage.StatusQueued
		rec.FinishedAt = time.Time{}
		rec.Due = storage.RequeueDue(due, now)
		if err := putRecord(tx, rec); err != nil {
			return err
		}
		if err := putDue(tx, rec); err != nil {
			return err
		}
		return putEntry(tx, e)
	})
}

// DLQSetStatus implements storage.Store.
func (s *Store) DLQSetStatus(ctx context.Context, id string, status storage.DLQStatus, text string, now time.Time) error {
	if err := storage.CheckDLQSettable(status); err != nil {
		return err
	}
	return s.update(ctx, func(tx *kv.Tx) error {
		e, err := getEntry(tx, id)
		if err != nil {
			return err
		}
		if e == nil {
			return storage.ErrDLQNotFound
		}
		if err := e.Transition(status, text, now); err != nil {
			return err
		}
		if storage.ReleasesChain(status) {
			if err := releaseEntry(tx, e, now); err != nil {
				return err
			}
		}
		return putEntry(tx, e)
	})
}

// deadLetter writes the DLQ entry of rec dying at now (rec.Attempts holds
// its last attempt), replacing an earlier one. The entry keeps its own
// copy of the payload, joined from the event's payload record for a job
// sharing it (an entry without one if that record is missing).
func deadLetter(tx *kv.Tx, rec *record, reason string, now time.Time) error {
	old, err := getEntry(tx, rec.ID)
	if err != nil {
		return err
	}
	job := rec.Job
	_ = joinPayload(tx, &job.Event)
	e := storage.NewDLQEntry(&job, rec.Attempts, reason, now, old)
	if old != nil {
		if err := tx.Bucket(bDLQIdx).Delete(timeKey(old.CreatedAt, []byte(old.ID))); err != nil {
			return err
		}
	}
	return putEntry(tx, e)
}

func getEntry(tx *kv.Tx, id string) (*storage.DLQEntry, error) {
	v := tx.Bucket(bDLQ).Get([]byte(id))
	if v == nil {
		return nil, nil
	}
	e := new(storage.DLQEntry)
	if err := json.Unmarshal(v, e); err != nil {
		return nil, fmt.Errorf("decoding dlq entry %s: %w", id, err)
	}
	return e, nil
}

func putEntry(tx *kv.Tx, e *storage.DLQEntry) error {
	v, err := json.Marshal(e)
	if err != nil {
		return err
	}
	b := tx.Bucket(bDLQ)
	if name, ok := entryCounted(b.Get([]byte(e.ID))); ok {
		if err := count(tx, cntDLQ, name, -1); err != nil {
			return err
		}
	}
	if err := b.Put([]byte(e.ID), v); err != nil {
		return err
	}
	if err := count(tx, cntDLQ, dlqCounterName(e.Source, e.Status), 1); err != nil {
		return err
	}
	// the index key's value is what a listing filters on; e.CreatedAt
	// is the time deadLetter indexed it at
	if err := tx.Bucket(bDLQIdx).Put(timeKey(e.CreatedAt, []byte(e.ID)), storage.DLQIndexOf(e).Encode()); err != nil {
		return err
	}
	open := tx.Bucket(bDLQOpen)
	if e.Status.Open() {
		return open.Put([]byte(e.ID), nil)
	}
	return open.Delete([]byte(e.ID))
}
