package spool

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hookline/hookline/internal/groupcommit"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded/kv"
)

// record is a spooled event as stored.
type record struct {
	Event storage.Event `json:"event"`
	// Deliveries are the event's (storage.Event.Deliveries, which the
	// event's own encoding leaves out).
	Deliveries []delivery `json:"deliveries,omitempty"`
	// DedupeUntil is when the event's claim expires (Put's dedupeUntil).
	DedupeUntil time.Time `json:"dedupe_until"`
	// SpooledAt is when it was spooled.
	SpooledAt time.Time `json:"spooled_at"`
}

// delivery is a storage.Delivery as stored.
type delivery struct {
	Destination string `json:"destination,omitempty"`
	Upstream    string `json:"upstream"`
	OrderKey    string `json:"order_key,omitempty"`
	OrderSkip   bool   `json:"order_skip,omitempty"`
}

func encode(ev *storage.Event, dedupeUntil, at time.Time) ([]byte, error) {
	r := record{Event: *ev, DedupeUntil: dedupeUntil, SpooledAt: at}
	for _, d := range ev.Deliveries {
		r.Deliveries = append(r.Deliveries, delivery(d))
	}
	return json.Marshal(&r)
}

func decode(v []byte) (*record, error) {
	var r record
	if err := json.Unmarshal(v, &r); err != nil {
		return nil, fmt.Errorf("%w: %v", errCorrupt, err)
	}
	for _, d := range r.Deliveries {
		r.Event.Deliveries = append(r.Event.Deliveries, storage.Delivery(d))
	}
	return &r, nil
}

// PutResult is what Put did.
type PutResult struct {
	// Duplicate is true when the event's claim was already spooled and
	// had not expired: nothing was written, and ID is the spooled event's.
	Duplicate bool
	// ID is the internal ID of the event spooled (Put's, or, for a
	// duplicate, the one spooled before).
	ID string
	// SpooledAt is when the event (or, for a duplicate, the one spooled
	// before) was spooled.
	SpooledAt time.Time
	// DedupeUntil is when the claim of a duplicate's spooled event ends.
	DedupeUntil time.Time
}

// put is one Put waiting for its commit.
type put struct {
	ev          *storage.Event
	dedupeUntil time.Time
	at          time.Time
	rec         []byte
}

type putResult struct {
	res PutResult
	err error
}

// Put spools ev, claimed (when ev.Dedupe) until dedupeUntil, and returns
// once it is durable: concurrent Puts share one commit and its fsync. A
// claim of (ev.Source, ev.EventID) spooled before and not expired makes it
// a duplicate. An event that would take the spool past its MaxSize is
// ErrFull. When ctx ends first, Put returns an error wrapping
// storage.ErrUnavailable: the event may still be spooled.
func (s *Spool) Put(ctx context.Context, ev *storage.Event, dedupeUntil time.Time) (PutResult, error) {
	at := s.now()
	rec, err := encode(ev, dedupeUntil, at)
	if err != nil {
		return PutResult{}, err
	}
	r, err := s.b.Do(ctx, &put{ev: ev, dedupeUntil: dedupeUntil, at: at, rec: rec})
	if err != nil {
		if ctx.Err() != nil {
			return PutResult{}, fmt.Errorf("%w: spooling not confirmed: %w", storage.ErrUnavailable, err)
		}
		return PutResult{}, err
	}
	return r.res, r.err
}

// claimKey is the key of (source, eventID) in bClaims: the claim key
// every store uses (storage.ClaimKey).
func claimKey(source, eventID string) []byte { return []byte(storage.ClaimKey(source, eventID)) }

// claimValue is a claim's value: its expiry (Unix nanoseconds) and the
// sequence of the event it is.
func claimValue(until time.Time, seq uint64) []byte {
	v := binary.BigEndian.AppendUint64(nil, uint64(until.UnixNano()))
	return binary.BigEndian.AppendUint64(v, seq)
}

// parseClaim reads a claim's value.
func parseClaim(v []byte) (until time.Time, seq uint64, ok bool) {
	if len(v) != 16 {
		return time.Time{}, 0, false
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(v))), binary.BigEndian.Uint64(v[8:]), true
}

// commit writes a round of Puts in one synced transaction, then answers
// them: a duplicate too only once the round is durable (it may be of a
// Put of the same round).
func (s *Spool) commit(batch []*groupcommit.Call[*put, putResult]) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	res := make([]putResult, len(batch))
	var added, addedBytes int64
	var first time.Time
	err := s.db.Update(func(tx *kv.Tx) error {
		added, addedBytes, first = 0, 0, time.Time{}
		events, claims := tx.Bucket(bEvents), tx.Bucket(bClaims)
		used := s.size.bytes.Load()
		for i, c := range batch {
			p := c.Req
			res[i] = putResult{}
			// every event's (source, event id) names it (Lookup); only a
			// deduplicated one's makes a resend a duplicate (a generated
			// event id is never sent again)
			ck := claimKey(p.ev.Source, p.ev.EventID)
			if p.ev.Dedupe {
				if until, seq, ok := parseClaim(claims.Get(ck)); ok && until.After(p.at) {
					if r, err := decode(events.Get(seqKey(seq))); err == nil {
						res[i].res = PutResult{Duplicate: true, ID: r.Event.ID, SpooledAt: r.SpooledAt, DedupeUntil: until}
						continue
					}
				}
			}
			if used+addedBytes+int64(len(p.rec)) > s.max {
				res[i].err = ErrFull
				continue
			}
			seq, err := events.NextSequence()
			if err != nil {
				return err
			}
			if err := events.Put(seqKey(seq), p.rec); err != nil {
				return err
			}
			if err := claims.Put(ck, claimValue(p.dedupeUntil, seq)); err != nil {
				return err
			}
			res[i].res = PutResult{ID: p.ev.ID, SpooledAt: p.at}
			added++
			addedBytes += int64(len(p.rec))
			if first.IsZero() {
				first = p.at
			}
		}
		if added == 0 {
			return nil
		}
		return addSize(tx, added, addedBytes)
	})
	if err == nil && added > 0 {
		s.size.events.Add(added)
		s.size.bytes.Add(addedBytes)
		s.mu.Lock()
		if s.oldest.IsZero() {
			s.oldest = first
		}
		s.mu.Unlock()
	}
	for i, c := range batch {
		if err != nil {
			c.Answer(putResult{}, fmt.Errorf("%w: spool: %v", storage.ErrUnavailable, err))
			continue
		}
		c.Answer(res[i], nil)
	}
}

// equalClaim reports whether claim value v names sequence seq.
func equalClaim(v []byte, seq uint64) bool {
	_, s, ok := parseClaim(v)
	return ok && s == seq
}
