package embedded

import (
	"bytes"
	"context"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/hookline/hookline/storage"
)

// Lookup implements storage.Store.
func (s *Store) Lookup(ctx context.Context, source, eventID string) (*storage.EventInfo, error) {
	now := s.now()
	var info *storage.EventInfo
	err := s.view(func(tx *bolt.Tx) error {
		id := []byte(eventID) // events without a provider id are found by internal id
		if v := tx.Bucket(bIDs).Get(claimKey(source, eventID)); v != nil {
			id = bytes.Clone(v)
		} else if v := tx.Bucket(bClaims).Get(claimKey(source, eventID)); len(v) >= 8 {
			id = bytes.Clone(v[8:]) // finished and past retention: maybe in the DLQ
		}
		rec, err := getRecord(tx, id)
		if err != nil {
			return err
		}
		if rec != nil && rec.Source == source {
			info = &storage.EventInfo{
				ID: rec.ID, EventID: rec.EventID, Source: rec.Source,
				Status:     statusOf(tx, rec.ID, now),
				ReceivedAt: rec.ReceivedAt, FinishedAt: rec.FinishedAt,
				Attempts: rec.Attempts,
			}
			if info.Status == storage.StatusQueued {
				info.NextAttempt = rec.Due
			}
			return nil
		}
		e, err := getEntry(tx, string(id))
		if err != nil {
			return err
		}
		if e != nil && e.Source == source {
			info = &storage.EventInfo{
				ID: e.ID, EventID: e.EventID, Source: e.Source, Status: storage.StatusDead,
				ReceivedAt: e.ReceivedAt, FinishedAt: e.CreatedAt, Attempts: e.Attempts,
			}
			return nil
		}
		return storage.ErrNotFound
	})
	return info, err
}

// Counts implements storage.Store.
func (s *Store) Counts(ctx context.Context) (storage.Counts, error) {
	var c storage.Counts
	err := s.view(func(tx *bolt.Tx) error {
		c.InFlight = tx.Bucket(bInFlight).Stats().KeyN
		c.Queued = tx.Bucket(bQueue).Stats().KeyN - c.InFlight
		c.Dead = tx.Bucket(bDLQOpen).Stats().KeyN
		return nil
	})
	return c, err
}

// QueueBySource implements storage.Store. It reads index keys only.
func (s *Store) QueueBySource(ctx context.Context) (map[string]storage.Counts, error) {
	now := s.now()
	out := map[string]storage.Counts{}
	err := s.view(func(tx *bolt.Tx) error {
		inflight := tx.Bucket(bInFlight)
		return tx.Bucket(bQueue).ForEach(func(k, _ []byte) error {
			lane, due, id, ok := splitDueKey(k)
			if !ok {
				return nil
			}
			n := out[string(lane)]
			if due.After(now) && inflight.Get(id) != nil {
				n.InFlight++
			} else {
				n.Queued++
			}
			out[string(lane)] = n
			return nil
		})
	})
	return out, err
}

// SetPaused implements storage.Store.
func (s *Store) SetPaused(ctx context.Context, source string, paused bool) error {
	return s.update(ctx, func(tx *bolt.Tx) error {
		if paused {
			return tx.Bucket(bPaused).Put([]byte(source), nil)
		}
		return tx.Bucket(bPaused).Delete([]byte(source))
	})
}

// Paused implements storage.Store.
func (s *Store) Paused(ctx context.Context) (map[string]bool, error) {
	out := map[string]bool{}
	err := s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bPaused).ForEach(func(k, _ []byte) error {
			out[string(k)] = true
			return nil
		})
	})
	return out, err
}

// statusOf is the status of event id for duplicate answers and lookups.
func statusOf(tx *bolt.Tx, id string, now time.Time) storage.Status {
	rec, err := getRecord(tx, []byte(id))
	if err == nil && rec != nil {
		if rec.Status == storage.StatusInFlight && !rec.LeaseUntil.After(now) {
			return storage.StatusQueued // lease expired: waiting for redelivery
		}
		return rec.Status
	}
	if tx.Bucket(bDLQ).Get([]byte(id)) != nil {
		return storage.StatusDead
	}
	// the record is past retention; only finished records are removed
	return storage.StatusDelivered
}
