package spool

import (
	"encoding/binary"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded/kv"
)

// Entry is a spooled event, as Next hands it out.
type Entry struct {
	// Seq is its place in the spool (Remove takes it).
	Seq uint64
	// Event is the event as Put was given it, its Deliveries included.
	Event *storage.Event
	// DedupeUntil is when its claim expires.
	DedupeUntil time.Time
	// SpooledAt is when it was spooled.
	SpooledAt time.Time
	// Err is set when the stored record does not decode (a damaged
	// disk): Event is then nil, and only Remove can take it away.
	Err error
}

func entryOf(seq uint64, v []byte) Entry {
	r, err := decode(v)
	if err != nil {
		return Entry{Seq: seq, Err: err}
	}
	return Entry{Seq: seq, Event: &r.Event, DedupeUntil: r.DedupeUntil, SpooledAt: r.SpooledAt}
}

// Next returns up to n spooled events, in the order they were spooled.
func (s *Spool) Next(n int) ([]Entry, error) {
	var out []Entry
	err := s.db.View(func(tx *kv.Tx) error {
		c := tx.Bucket(bEvents).Cursor()
		for k, v := c.First(); k != nil && len(out) < n; k, v = c.Next() {
			if len(k) != 8 {
				continue
			}
			out = append(out, entryOf(binary.BigEndian.Uint64(k), v))
		}
		return nil
	})
	return out, err
}

// Lookup returns the spooled event named (source, eventID), if its claim
// has not expired at now (the zero time: whatever its claim).
func (s *Spool) Lookup(source, eventID string, now time.Time) (Entry, bool, error) {
	var e Entry
	var found bool
	err := s.db.View(func(tx *kv.Tx) error {
		until, seq, ok := parseClaim(tx.Bucket(bClaims).Get(claimKey(source, eventID)))
		if !ok || !until.After(now) {
			return nil
		}
		if v := tx.Bucket(bEvents).Get(seqKey(seq)); v != nil {
			e, found = entryOf(seq, v), true
		}
		return nil
	})
	return e, found, err
}

// Remove takes the events at seqs out of the spool (those gone already
// are skipped), with their claims, durably: an event the store has is
// not moved again after a crash (by then its claim there may have
// expired, or the event been erased).
func (s *Spool) Remove(seqs ...uint64) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	var removed, removedBytes int64
	var oldest time.Time
	err := s.db.Update(func(tx *kv.Tx) error {
		removed, removedBytes, oldest = 0, 0, time.Time{}
		events, claims := tx.Bucket(bEvents), tx.Bucket(bClaims)
		for _, seq := range seqs {
			k := seqKey(seq)
			v := events.Get(k)
			if v == nil {
				continue
			}
			if r, err := decode(v); err == nil {
				ck := claimKey(r.Event.Source, r.Event.EventID)
				if equalClaim(claims.Get(ck), seq) {
					if err := claims.Delete(ck); err != nil {
						return err
					}
				}
			}
			if err := events.Delete(k); err != nil {
				return err
			}
			removed++
			removedBytes += int64(len(v))
		}
		if removed == 0 {
			return nil
		}
		if _, v := events.Cursor().First(); v != nil {
			if r, err := decode(v); err == nil {
				oldest = r.SpooledAt
			}
		}
		return addSize(tx, -removed, -removedBytes)
	})
	if err != nil || removed == 0 {
		return err
	}
	s.size.events.Add(-removed)
	s.size.bytes.Add(-removedBytes)
	s.mu.Lock()
	s.oldest = oldest
	s.mu.Unlock()
	return nil
}
