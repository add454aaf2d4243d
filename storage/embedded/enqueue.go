package embedded

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded/kv"
)

// Enqueue implements storage.Store.
func (s *Store) Enqueue(ctx context.Context, ev *storage.Event, dedupeUntil time.Time) (storage.EnqueueResult, error) {
	if err := ctx.Err(); err != nil {
		return storage.EnqueueResult{}, err
	}
	jobs, destinations, err := storage.DeliveriesOf(ev)
	if err != nil {
		return storage.EnqueueResult{}, err
	}
	payload := storage.SharePayload(jobs, true) // a lone delivery too: its record is rewritten at lease and finish
	now := s.now()
	// the records of deliveries that are not ordered are encoded here, in
	// the caller's goroutine, not in the transaction: its writes run one
	// after the other in the committer's, and an event with several
	// deliveries would otherwise encode each one there (an ordered one's
	// record depends on its chain, read in the transaction)
	encoded := make([][]byte, len(jobs))
	for i := range jobs {
		if storage.ChainOf(&jobs[i]) != "" {
			continue
		}
		if encoded[i], err = json.Marshal(&record{Job: storage.Job{Event: jobs[i]}, Status: storage.StatusQueued, Due: now}); err != nil {
			return storage.EnqueueResult{}, err
		}
	}
	due := storage.NamedDue(jobs, now, 0) // for LeaseNamed, named outside the committer too
	var res storage.EnqueueResult
	err = s.update(ctx, func(tx *kv.Tx) error {
		if ev.Dedupe {
			claims := tx.Bucket(bClaims)
			ck := claimKey(ev.Source, ev.EventID)
			if v := claims.Get(ck); len(v) >= 8 {
				exp := timeAt(v)
				if exp.After(now) {
					id := string(v[8:])
					res = storage.EnqueueResult{Duplicate: true, ID: id, Status: storage.ErasedStatus(erased(tx, id, now), statusOf(tx, s.leases, id, now)), DedupeUntil: exp}
					return nil
				}
				if err := tx.Bucket(bClaimExp).Delete(timeKey(exp, ck)); err != nil {
					return err
				}
			}
			if err := claims.Put(ck, timeKey(dedupeUntil, []byte(ev.ID))); err != nil {
				return err
			}
			if err := tx.Bucket(bClaimExp).Put(timeKey(dedupeUntil, ck), nil); err != nil {
				return err
			}
		}
		// every delivery in this one transaction: never some of them
		for i, job := range jobs {
			rec := &record{Job: storage.Job{Event: job}, Status: storage.StatusQueued, Due: now}
			v, wait := encoded[i], false
			if v == nil {
				// an ordered job behind its chain's head waits, not due:
				// its record is encoded once its chain is read
				var err error
				if wait, err = chainJob(tx, rec); err != nil {
					return err
				}
				if wait {
					rec.Due = time.Time{}
				}
				if v, err = json.Marshal(rec); err != nil {
					return err
				}
			}
			if err := tx.Bucket(bEvents).Put([]byte(rec.ID), v); err != nil {
				return err
			}
			if wait {
				continue
			}
			if err := putDue(tx, rec); err != nil {
				return err
			}
		}
		if err := putDeliveries(tx, ev.ID, destinations); err != nil {
			return err
		}
		if err := putPayload(tx, ev.ID, payload); err != nil {
			return err
		}
		res = storage.EnqueueResult{ID: ev.ID, Status: storage.StatusQueued, Due: due}
		return nil
	})
	return res, err
}
