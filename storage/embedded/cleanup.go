package embedded

import (
	"bytes"
	"context"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded/kv"
)

// cleanupChunk bounds the work of one cleanup transaction.
const cleanupChunk = 1000

// compactAfter is how many keys the cleanups delete before the ranges
// they emptied are compacted (reclaim.go).
const compactAfter = 50_000

// Cleanup implements storage.Store.
func (s *Store) Cleanup(ctx context.Context, now time.Time, retention, dlqRetention time.Duration) (int, error) {
	total := 0
	swept := newSweptRanges()
	defer func() { s.reclaim(ctx, swept, total) }()
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		var n int
		err := s.update(ctx, func(tx *kv.Tx) error {
			n = 0
			var err error
			var m int
			m, err = sweep(tx, bDone, now.Add(-retention), cleanupChunk, func(k []byte) error {
				id := k[8:]
				swept.add(bDone, k)
				swept.add(bEvents, id)
				rec, err := getRecord(tx, id)
				if err != nil { // unreadable and past retention: drop it rather than stop every cleanup
					if _, _, err := lastDelivery(tx, string(id)); err != nil { // its event's payload record too, if it was the last
						return err
					}
					return tx.Bucket(bEvents).Delete(id)
				}
				if rec == nil {
					return nil
				}
				// the (source, event id) index goes with the event's last
				// delivery, unless a DLQ entry of it is kept
				last, ds, err := lastDelivery(tx, string(id))
				if err != nil {
					return err
				}
				if err := tx.Bucket(bEvents).Delete(id); err != nil {
					return err
				}
				if !last {
					return nil
				}
				ev := storage.EventIDOfDelivery(string(id))
				return releaseClaim(tx, claimKey(rec.Source, rec.EventID), ev, now, func() bool { return entriesLeft(tx, ev, ds) })
			})
			n += m
			if err != nil {
				return err
			}
			m, err = sweepStats(tx, now, cleanupChunk)
			n += m
			if err != nil {
				return err
			}
			// the tombstones of erased events go with their claims
			m, err = sweepErased(tx, now, cleanupChunk)
			n += m
			if err != nil {
				return err
			}
			m, err = sweep(tx, bClaimExp, now, cleanupChunk, func(k []byte) error {
				swept.add(bClaimExp, k)
				return claimExpired(tx, k[8:], k[:8])
			})
			n += m
			if err != nil || dlqRetention <= 0 {
				return err
			}
			m, err = sweep(tx, bDLQIdx, now.Add(-dlqRetention), cleanupChunk, func(k []byte) error {
				swept.add(bDLQIdx, k)
				swept.add(bDLQ, k[8:])
				// an entry that blocks its key goes as if discarded
				e, err := getEntry(tx, string(k[8:]))
				if err == nil && e != nil {
					if err := releaseEntry(tx, e, now); err != nil {
						return err
					}
				}
				if err := deleteEntry(tx, k[8:]); err != nil {
					return err
				}
				// the last entry of an event takes its ended claim (by
				// which it was found) and its deliveries index with it
				if err == nil && e != nil {
					ev := storage.EventIDOfDelivery(e.ID)
					if err := releaseClaim(tx, claimKey(e.Source, e.EventID), ev, now, func() bool { return recordsLeft(tx, ev) }); err != nil {
						return err
					}
				}
				return dropDeliveries(tx, string(k[8:]))
			})
			n += m
			return err
		})
		total += n
		if err != nil {
			return total, err
		}
		if n < cleanupChunk {
			// an erasure whose scrub failed is scrubbed now
			return total, s.scrubIfMarked(ctx)
		}
	}
}

// sweep deletes up to max index keys older than before from bucket b,
// calling del for each first.
func sweep(tx *kv.Tx, b []byte, before time.Time, max int, del func(k []byte) error) (int, error) {
	bkt := tx.Bucket(b)
	var keys [][]byte
	c := bkt.Cursor()
	for k, _ := c.First(); k != nil && len(keys) < max && timeAt(k).Before(before); k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys {
		if err := del(k); err != nil {
			return 0, err
		}
		if err := bkt.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(keys), nil
}
