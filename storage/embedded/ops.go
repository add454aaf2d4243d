package embedded

import (
	"bytes"
	"context"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded/kv"
)

// Lookup implements storage.Store.
func (s *Store) Lookup(ctx context.Context, source, eventID string) (*storage.EventInfo, error) {
	now := s.now()
	var info *storage.EventInfo
	err := s.view(func(tx *kv.Tx) error {
		id := []byte(eventOf(tx, source, eventID))
		var err error
		info, err = storage.LookupEvent(string(id), destinationsOf(tx, string(id)), func(id string) (*storage.EventInfo, error) {
			return deliveryInfo(tx, s.leases, id, source, now)
		})
		return err
	})
	return info, err
}

// deliveryInfo is what Lookup reports of the delivery id of an event of
// source: from its record, or its DLQ entry once the record is gone (nil:
// neither is left). A leased job is in flight until its lease ends (l).
func deliveryInfo(tx *kv.Tx, l *leases, id, source string, now time.Time) (*storage.EventInfo, error) {
	rec, err := getRecord(tx, []byte(id))
	if err != nil {
		return nil, err
	}
	if rec != nil && rec.Source == source {
		st := l.status(id, rec.Status, now)
		return storage.NewEventInfo(&rec.Event, rec.Attempts, st, rec.Due, rec.FinishedAt), nil
	}
	e, err := getEntry(tx, id)
	if err != nil {
		return nil, err
	}
	if e != nil && e.Source == source {
		return storage.DeadEventInfo(e), nil
	}
	return nil, nil
}

// pauseBucket is the bucket of the pause stored under key.
func pauseBucket(tx *kv.Tx, key string) *kv.Bucket {
	if storage.IsTenantPauseKey(key) {
		return tx.Bucket(bTenantPaused)
	}
	return tx.Bucket(bPaused)
}

// SetPause implements storage.Store.
func (s *Store) SetPause(ctx context.Context, p storage.Pause) error {
	return s.update(ctx, func(tx *kv.Tx) error {
		return pauseBucket(tx, p.Key()).Put([]byte(p.Key()), storage.EncodePause(p))
	})
}

// Resume implements storage.Store.
func (s *Store) Resume(ctx context.Context, key string) (storage.Pause, bool, error) {
	var (
		p     storage.Pause
		found bool
	)
	err := s.update(ctx, func(tx *kv.Tx) error {
		b := pauseBucket(tx, key)
		v := b.Get([]byte(key))
		if v == nil {
			return nil
		}
		var err error
		if p, err = storage.DecodePause(key, v); err != nil {
			return err
		}
		found = true
		return b.Delete([]byte(key))
	})
	return p, found, err
}

// Pauses implements storage.Store.
func (s *Store) Pauses(ctx context.Context) ([]storage.Pause, error) {
	var out []storage.Pause
	err := s.view(func(tx *kv.Tx) error {
		for _, b := range [][]byte{bPaused, bTenantPaused} {
			if err := tx.Bucket(b).ForEach(func(k, v []byte) error {
				p, err := storage.DecodePause(string(k), v)
				if err != nil {
					return err
				}
				out = append(out, p)
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	storage.SortPauses(out)
	return out, err
}

// ExpirePause implements storage.Store.
func (s *Store) ExpirePause(ctx context.Context, p storage.Pause) (bool, error) {
	var done bool
	err := s.update(ctx, func(tx *kv.Tx) error {
		b := pauseBucket(tx, p.Key())
		if v := b.Get([]byte(p.Key())); v == nil || !bytes.Equal(v, storage.EncodePause(p)) {
			return nil
		}
		done = true
		return b.Delete([]byte(p.Key()))
	})
	return done && err == nil, err
}

// statusOf is the status of event id for duplicate answers (see
// storage.EffectiveStatus; an unreadable record counts as none), a
// leased job in flight (l).
func statusOf(tx *kv.Tx, l *leases, id string, now time.Time) storage.Status {
	st, _ := storage.EventStatus(id, destinationsOf(tx, id), func(id string) (storage.Status, error) {
		rec, err := getRecord(tx, []byte(id))
		if err == nil && rec != nil {
			return l.status(id, rec.Status, now), nil
		}
		return storage.EffectiveStatus("", time.Time{}, tx.Bucket(bDLQ).Get([]byte(id)) != nil, now), nil
	})
	return st
}
