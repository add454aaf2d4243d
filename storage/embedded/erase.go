package embedded

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded/kv"
)

// Erasure (storage.Eraser). One shared transaction removes the event's
// records, DLQ entries and indexes, writes its tombstone and marks the
// event's keys as needing a scrub; the scrub (scrub.go) then rewrites the
// engine's files where the erased bytes still are, before Erase returns.
//
//	erased / event id -> claim expiry (8 bytes, Unix nanoseconds): the
//	                     tombstone of an erased event whose claim is kept
//	                     (storage.StatusErased), removed by Cleanup once
//	                     the claim has expired
var bErased = []byte("erased")

// Erase implements storage.Store.
func (s *Store) Erase(ctx context.Context, source, eventID string, now time.Time) (storage.EraseResult, error) {
	res, err := s.erase(ctx, source, []string{eventID}, eventOf, now)
	if err != nil {
		return storage.EraseResult{}, err
	}
	if res[0].ID == "" {
		return storage.EraseResult{}, storage.ErrNotFound
	}
	return res[0], nil
}

// EraseBatch implements storage.Eraser: one transaction erases the
// events, and one scrub follows for all of them.
func (s *Store) EraseBatch(ctx context.Context, source string, ids []string, now time.Time) ([]storage.EraseResult, error) {
	return s.erase(ctx, source, ids, func(_ *kv.Tx, _, id string) string { return id }, now)
}

// erase erases the events of source named in names, each resolved to its
// internal id by idOf, in one transaction, then scrubs the engine's files
// once. The results are the transaction's even when the scrub fails: the
// events are erased, and the caller reports them.
func (s *Store) erase(ctx context.Context, source string, names []string, idOf func(tx *kv.Tx, source, name string) string,
	now time.Time) ([]storage.EraseResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var results []storage.EraseResult
	var removed []string
	err := s.update(ctx, func(tx *kv.Tx) error {
		results, removed = make([]storage.EraseResult, len(names)), nil
		for i, name := range names {
			res, rm, err := eraseEvent(tx, source, name, idOf(tx, source, name), now)
			if errors.Is(err, storage.ErrNotFound) {
				continue // nothing of it is written
			}
			if err != nil {
				return err
			}
			results[i], removed = res, append(removed, rm...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// a delivery leased when it was erased is leased no more: its Finish
	// finds its lease lost, and the counts no longer see it in flight
	for _, id := range removed {
		s.leases.forget(id)
	}
	// the bytes of the records removed are still in the engine's files
	return results, s.scrub(ctx)
}

// eventOf is the internal id of the event eventID of source, as Lookup
// finds it: by its claim (kept while a record of the event exists; records
// past retention may still have DLQ entries), else eventID itself (an
// event without a provider id is named by its internal id).
func eventOf(tx *kv.Tx, source, eventID string) string {
	if v := tx.Bucket(bClaims).Get(claimKey(source, eventID)); len(v) >= 8 {
		return string(v[8:])
	}
	return eventID
}

// erasing is one delivery of an event being erased: what is stored of it.
type erasing struct {
	id    string
	rec   *record
	raw   bool // a record that cannot be decoded
	entry *storage.DLQEntry
	// rawEntry is true for a DLQ entry that cannot be decoded
	rawEntry bool
}

// eraseEvent removes the event of source with internal id id, named
// eventID by the caller (storage.Eraser), in tx, and returns the ids of
// the deliveries removed. It reads everything first: an event of another
// source, or of which nothing is stored, is ErrNotFound, and nothing is
// written.
func eraseEvent(tx *kv.Tx, source, eventID, id string, now time.Time) (storage.EraseResult, []string, error) {
	destinations := destinationsOf(tx, id)
	if destinations == nil {
		destinations = []string{storage.DefaultDestination}
	}
	var ds []erasing
	var claimOf *storage.Event // an event field to find its claim by
	for _, d := range destinations {
		e := erasing{id: storage.DeliveryID(id, d)}
		var err error
		if e.rec, err = getRecord(tx, []byte(e.id)); err != nil {
			e.raw = true
		} else if e.rec != nil && e.rec.Source != source {
			return storage.EraseResult{}, nil, storage.ErrNotFound
		}
		if e.entry, err = getEntry(tx, e.id); err != nil {
			e.rawEntry = true
		} else if e.entry != nil && e.entry.Source != source {
			return storage.EraseResult{}, nil, storage.ErrNotFound
		}
		if claimOf == nil && e.rec != nil {
			claimOf = &e.rec.Event
		} else if claimOf == nil && e.entry != nil {
			ev := storage.EventOfEntry(e.entry)
			claimOf = &ev
		}
		if e.rec != nil || e.raw || e.entry != nil || e.rawEntry {
			ds = append(ds, e)
		}
	}
	if len(ds) == 0 {
		return storage.EraseResult{}, nil, storage.ErrNotFound
	}
	res := storage.EraseResult{ID: id, Deliveries: len(ds)}
	for _, e := range ds {
		if err := eraseChained(tx, &e, now); err != nil {
			return res, nil, err
		}
		if err := eraseRecord(tx, &e); err != nil {
			return res, nil, err
		}
		removed, err := eraseEntry(tx, &e)
		if err != nil {
			return res, nil, err
		}
		if removed {
			res.DLQEntries++
		}
	}
	// every key a delivery of the event may have had (ds's among them),
	// deleted again even when gone already (a record past retention, a
	// DLQ entry discarded): a key deleted by an earlier transaction may
	// sit beside its value in a bottom-level table (kept together for a
	// snapshot then open), which only a newer tombstone compacting into
	// that table removes (scrub.go)
	for _, d := range destinations {
		if err := tx.Bucket(bEvents).Delete([]byte(storage.DeliveryID(id, d))); err != nil {
			return res, nil, err
		}
		if err := tx.Bucket(bDLQ).Delete([]byte(storage.DeliveryID(id, d))); err != nil {
			return res, nil, err
		}
	}
	// the deliveries index, and the payload record the deliveries shared
	if err := tx.Bucket(bDeliveries).Delete([]byte(id)); err != nil {
		return res, nil, err
	}
	if err := tx.Bucket(bEvents).Delete(payloadKey(id)); err != nil {
		return res, nil, err
	}
	// a claim that still holds stays, with a tombstone; one that has
	// expired goes with the records it was kept for
	ck := claimKey(source, eventID)
	if claimOf != nil {
		ck = claimKey(claimOf.Source, claimOf.EventID)
	}
	if v := tx.Bucket(bClaims).Get(ck); len(v) >= 8 && string(v[8:]) == id && timeAt(v).After(now) {
		res.DedupeUntil = timeAt(v)
		if err := tx.Bucket(bErased).Put([]byte(id), bytes.Clone(v[:8])); err != nil {
			return res, nil, err
		}
	} else if err := releaseClaim(tx, ck, id, now, func() bool { return false }); err != nil {
		return res, nil, err
	}
	removed := make([]string, len(ds))
	for i, e := range ds {
		removed[i] = e.id
	}
	return res, removed, markScrub(tx, eventSpans(id)...)
}

// eraseChained takes delivery e out of the ordered chain it is in, if
// any (storage.ErasesFromChain): its head is popped and the next job goes
// at now; a waiting job is removed from its place.
func eraseChained(tx *kv.Tx, e *erasing, now time.Time) error {
	var names []string
	switch {
	case e.rec != nil:
		names = []string{storage.ChainOf(&e.rec.Event)}
	case e.entry != nil:
		names = []string{storage.ChainOfEntry(e.entry)}
	default: // undecodable: whichever chain holds it (a rare path: every chain is read)
		names = chainsHolding(tx, e.id)
	}
	for _, name := range names {
		if name == "" {
			continue
		}
		chain := tx.Bucket(bChains).Bucket([]byte(name))
		if chain == nil {
			continue
		}
		head, _ := chainHead(tx, name)
		var at []byte
		c := chain.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if string(v) == e.id {
				at = bytes.Clone(k)
				break
			}
		}
		pop, remove := storage.ErasesFromChain(e.id, head, at != nil)
		switch {
		case pop:
			if err := popChain(tx, name, e.id, now); err != nil {
				return err
			}
		case remove:
			if err := chain.Delete(at); err != nil {
				return err
			}
		}
	}
	_, err := waitingDelete(tx, []byte(e.id))
	return err
}

// chainsHolding lists the chains that hold job id (walking every chain).
func chainsHolding(tx *kv.Tx, id string) []string {
	var out []string
	chains := tx.Bucket(bChains)
	_ = chains.ForEachBucket(func(name []byte) error {
		return chains.Bucket(name).ForEach(func(_, job []byte) error {
			if string(job) == id {
				out = append(out, string(name))
			}
			return nil
		})
	})
	return out
}

// eraseRecord removes the job record of delivery e and its index keys.
// An undecodable record's due and finished keys cannot be named: they are
// looked for (a rare path, reading those indexes).
func eraseRecord(tx *kv.Tx, e *erasing) error {
	id := []byte(e.id)
	switch {
	case e.rec != nil:
		if !e.rec.Due.IsZero() {
			if err := deleteDue(tx, e.rec); err != nil {
				return err
			}
		}
		if !e.rec.FinishedAt.IsZero() {
			if err := tx.Bucket(bDone).Delete(timeKey(e.rec.FinishedAt, id)); err != nil {
				return err
			}
		}
	case e.raw:
		if err := eachKeyOf(tx.Bucket(bQueue), id, func(k []byte) []byte { _, _, kid, _ := splitDueKey(k); return kid }, func(k []byte) error { return queueDelete(tx, k) }); err != nil {
			return err
		}
		if err := deleteKeysOf(tx.Bucket(bDone), id, timeKeyID); err != nil {
			return err
		}
	default:
		return nil
	}
	return tx.Bucket(bEvents).Delete(id)
}

// eraseEntry removes the DLQ entry of delivery e, if it has one.
func eraseEntry(tx *kv.Tx, e *erasing) (bool, error) {
	id := []byte(e.id)
	switch {
	case e.entry != nil:
		if err := tx.Bucket(bDLQIdx).Delete(timeKey(e.entry.CreatedAt, id)); err != nil {
			return false, err
		}
	case e.rawEntry:
		if err := deleteKeysOf(tx.Bucket(bDLQIdx), id, timeKeyID); err != nil {
			return false, err
		}
	default:
		return false, nil
	}
	return true, deleteEntry(tx, id)
}

// timeKeyID is the id of a time-ordered index key (timeKey).
func timeKeyID(k []byte) []byte {
	if len(k) < 8 {
		return nil
	}
	return k[8:]
}

// deleteKeysOf deletes the keys of index b whose id (as idOf reads it) is
// id, walking the whole index.
func deleteKeysOf(b *kv.Bucket, id []byte, idOf func(k []byte) []byte) error {
	return eachKeyOf(b, id, idOf, b.Delete)
}

// eachKeyOf calls del with every key of b whose id (idOf) is id, once
// the walk is over (del may delete it).
func eachKeyOf(b *kv.Bucket, id []byte, idOf func(k []byte) []byte, del func(k []byte) error) error {
	var keys [][]byte
	_ = b.ForEach(func(k, _ []byte) error {
		if bytes.Equal(idOf(k), id) {
			keys = append(keys, bytes.Clone(k))
		}
		return nil
	})
	for _, k := range keys {
		if err := del(k); err != nil {
			return err
		}
	}
	return nil
}

// erased reports whether event id was erased while its claim lasts.
func erased(tx *kv.Tx, id string, now time.Time) bool {
	v := tx.Bucket(bErased).Get([]byte(id))
	return len(v) >= 8 && timeAt(v).After(now)
}

// sweepErased removes the tombstones whose claim has expired, up to max.
// Erasures are rare: the bucket is small and read whole.
func sweepErased(tx *kv.Tx, now time.Time, max int) (int, error) {
	b := tx.Bucket(bErased)
	var gone [][]byte
	_ = b.ForEach(func(k, v []byte) error {
		if len(gone) < max && (len(v) < 8 || !timeAt(v).After(now)) {
			gone = append(gone, bytes.Clone(k))
		}
		return nil
	})
	for _, k := range gone {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(gone), nil
}
