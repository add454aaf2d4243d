package embedded

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/hookline/hookline/storage"
)

// DLQList implements storage.Store.
func (s *Store) DLQList(ctx context.Context, f storage.DLQFilter) (storage.DLQPage, error) {
	page := storage.DLQPage{Entries: []storage.DLQEntry{}}
	limit := f.EffectiveLimit()
	var start []byte
	if f.Cursor != "" {
		var err error
		start, err = base64.RawURLEncoding.DecodeString(f.Cursor)
		if err != nil || len(start) < 8 {
			return page, storage.ErrInvalidCursor
		}
	}
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bDLQIdx).Cursor()
		var k []byte
		if start == nil {
			k, _ = c.Last()
		} else if k, _ = c.Seek(start); k == nil {
			k, _ = c.Last()
		} else {
			k, _ = c.Prev()
		}
		for ; k != nil; k, _ = c.Prev() {
			if !f.Since.IsZero() && timeAt(k).Before(f.Since) {
				break
			}
			e, err := getEntry(tx, string(k[8:]))
			if err != nil {
				return err
			}
			if e == nil || !f.Matches(e) {
				continue
			}
			if len(page.Entries) == limit {
				last := page.Entries[limit-1]
				page.NextCursor = base64.RawURLEncoding.EncodeToString(timeKey(last.CreatedAt, []byte(last.ID)))
				break
			}
			e.Payload, e.Headers = nil, nil
			fillWaiting(tx, e)
			page.Entries = append(page.Entries, *e)
		}
		return nil
	})
	return page, err
}

// DLQGet implements storage.Store.
func (s *Store) DLQGet(ctx context.Context, id string) (*storage.DLQEntry, error) {
	var e *storage.DLQEntry
	err := s.view(func(tx *bolt.Tx) error {
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
	return s.update(ctx, func(tx *bolt.Tx) error {
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
		if rec != nil {
			if err := storage.CheckRetryEvent(rec.Status); err != nil {
				return err
			}
			if err := tx.Bucket(bDone).Delete(timeKey(rec.FinishedAt, []byte(id))); err != nil {
				return err
			}
		} else {
			rec = &record{Job: storage.Job{Event: storage.EventOfEntry(e)}}
		}
		storage.OwnEntryPayload(&rec.Event, e)
		rec.Replay = false // a retried event goes back to its source's lane, as EventOfEntry's does
		rec.Attempts = e.Attempts
		rec.RoundStart = len(e.Attempts)
		rec.Status = storage.StatusQueued
		rec.FinishedAt = time.Time{}
		rec.Due = due
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
	return s.update(ctx, func(tx *bolt.Tx) error {
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
func deadLetter(tx *bolt.Tx, rec *record, reason string, now time.Time) error {
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
	if err := putEntry(tx, e); err != nil {
		return err
	}
	return tx.Bucket(bDLQIdx).Put(timeKey(now, []byte(e.ID)), nil)
}

func getEntry(tx *bolt.Tx, id string) (*storage.DLQEntry, error) {
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

func putEntry(tx *bolt.Tx, e *storage.DLQEntry) error {
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
	open := tx.Bucket(bDLQOpen)
	if e.Status.Open() {
		return open.Put([]byte(e.ID), nil)
	}
	return open.Delete([]byte(e.ID))
}
