package embedded

import (
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/hookline/hookline/storage"
)

// Lease implements storage.Store. The pace of a lane (storage.PaceOf) is
// kept in memory: one process at a time uses the file.
func (s *Store) Lease(ctx context.Context, now time.Time, n int, lease time.Duration, gate *storage.Gate) ([]*storage.Job, error) {
	if want, err := storage.LeaseWanted(ctx, n); !want {
		return nil, err
	}
	// cheap read first: most calls of an idle worker find nothing due
	var cands []storage.Candidate
	if err := s.view(func(tx *bolt.Tx) error {
		cands = candidates(tx, now, n, gate)
		return nil
	}); err != nil || len(cands) == 0 {
		return nil, err
	}
	// take the pace's slots for what would be leased, then lease in one
	// write; a slot taken for a job another lease got first is not given
	// back (the lane goes a little slower, never faster)
	planned, _ := storage.Plan(cands, n, gate, func(want map[string]int) (map[string]int, error) {
		got := make(map[string]int, len(want))
		for lane, k := range want {
			r, _ := gate.RateOf(lane)
			got[lane] = s.pace.Take(storage.PaceOf(lane), r, now, k)
		}
		return got, nil
	})
	// the jobs planned may have been leased meanwhile: lease what is still
	// due of each lane, up to what the plan gave it
	limit := storage.CountLanes(planned)
	var jobs []*storage.Job
	err := s.update(ctx, func(tx *bolt.Tx) error {
		jobs = jobs[:0]
		picked := storage.PickFair(onlyLanes(candidates(tx, now, n, gate), limit), n, limit)
		until := now.Add(lease)
		for _, c := range picked {
			id := []byte(c.ID)
			if err := queueDelete(tx, dueKey(c.Lane, c.Due, id)); err != nil {
				return err
			}
			rec, err := getRecord(tx, id)
			if err != nil { // unreadable: to the DLQ, not back at every lease
				if err := poison(tx, c.Lane, id, err, s.now()); err != nil {
					return err
				}
				continue
			}
			if rec == nil { // orphan index key
				continue
			}
			// the payload of a job sharing its event's, joined to what is handed out
			leased := rec.Event
			if err := joinPayload(tx, &leased); err != nil {
				if err := poison(tx, c.Lane, id, err, s.now()); err != nil {
					return err
				}
				continue
			}
			rec.Lease = storage.NewLeaseToken()
			rec.LeaseUntil = until
			rec.Due = until
			rec.Status = storage.StatusInFlight
			if err := putRecord(tx, rec); err != nil {
				return err
			}
			if err := putDue(tx, rec); err != nil {
				return err
			}
			if err := inflightPut(tx, id, storage.LaneOf(&rec.Event), until); err != nil {
				return err
			}
			job := rec.Job
			job.Headers, job.Body, job.Sealed = leased.Headers, leased.Body, leased.Sealed
			jobs = append(jobs, &job)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return jobs, nil
}

// NextDue implements storage.Store.
func (s *Store) NextDue(ctx context.Context, gate *storage.Gate) (time.Time, bool, error) {
	var t time.Time
	var ok bool
	err := s.view(func(tx *bolt.Tx) error {
		return laneHeads(tx, func(_ *bolt.Cursor, laneB []byte, k []byte) error {
			lane := string(laneB)
			if gate.Skipped(lane) {
				return nil
			}
			_, due, _, _ := splitDueKey(k)
			if r, paced := gate.RateOf(lane); paced {
				if next := s.pace.Next(storage.PaceOf(lane), r); next.After(due) {
					due = next
				}
			}
			if !ok || due.Before(t) {
				t, ok = due, true
			}
			return nil
		})
	})
	return t, ok, err
}

// QueueHeads implements storage.Store: one Seek per lane.
func (s *Store) QueueHeads(ctx context.Context) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	err := s.view(func(tx *bolt.Tx) error {
		return laneHeads(tx, func(_ *bolt.Cursor, lane []byte, k []byte) error {
			_, due, _, _ := splitDueKey(k)
			out[string(lane)] = due
			return nil
		})
	})
	return out, err
}

// Finish implements storage.Store.
func (s *Store) Finish(ctx context.Context, job *storage.Job, out storage.Outcome) error {
	now := s.now()
	return s.update(ctx, func(tx *bolt.Tx) error {
		id := []byte(job.ID)
		rec, err := getRecord(tx, id)
		if err != nil {
			return err
		}
		if rec == nil || rec.Lease == "" || rec.Lease != job.Lease {
			return storage.ErrLeaseLost
		}
		if err := deleteDue(tx, rec); err != nil {
			return err
		}
		if err := inflightDelete(tx, id); err != nil {
			return err
		}
		rec.Lease, rec.LeaseUntil, rec.Due = "", time.Time{}, time.Time{}
		if out.Attempt != nil {
			rec.Attempts = append(rec.Attempts, *out.Attempt)
		}
		// the next job of an ordered job's chain goes once it is done
		if storage.PopsChain(&rec.Event, out.Result) {
			if err := popChain(tx, storage.ChainOf(&rec.Event), rec.ID, now); err != nil {
				return err
			}
		}
		switch out.Result {
		case storage.Delivered:
			rec.Status = storage.StatusDelivered
			return finishRecord(tx, rec, now)
		case storage.Retry, storage.Release:
			rec.Status = storage.StatusQueued
			rec.Due = out.DueAt(now)
			if err := putRecord(tx, rec); err != nil {
				return err
			}
			return putDue(tx, rec)
		case storage.Dead:
			if err := deadLetter(tx, rec, out.Error, now); err != nil {
				return err
			}
			rec.Status = storage.StatusDead
			return finishRecord(tx, rec, now)
		}
		return fmt.Errorf("unknown result %d", out.Result)
	})
}

// finishRecord stores a delivered or dead event and indexes it for
// retention. A delivered event keeps its payload (a replay re-sends it); a
// dead one's is dropped (its DLQ entry keeps it). A payload record its
// event's deliveries share stays until the event's last record goes.
func finishRecord(tx *bolt.Tx, rec *record, now time.Time) error {
	if rec.Status == storage.StatusDead {
		rec.Body, rec.Headers, rec.Sealed = nil, nil, nil
	}
	rec.FinishedAt = now
	if err := putRecord(tx, rec); err != nil {
		return err
	}
	return tx.Bucket(bDone).Put(timeKey(now, []byte(rec.ID)), nil)
}
