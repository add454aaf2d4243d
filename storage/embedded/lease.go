package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded/kv"
)

// Lease implements storage.Store. A lease writes nothing to the store: it
// is kept in memory (leases.go), so leasing costs two read transactions
// and no commit. The pace of a lane (storage.PaceOf) is kept in memory
// too: one process at a time uses the store.
func (s *Store) Lease(ctx context.Context, now time.Time, n int, lease time.Duration, gate *storage.Gate) ([]*storage.Job, error) {
	if want, err := storage.LeaseWanted(ctx, n); !want {
		return nil, err
	}
	cands, err := s.candidates(now, n, gate, s.leased(now))
	if err != nil || len(cands) == 0 {
		return nil, err
	}
	// take the pace's slots for what would be leased; a slot taken for a
	// job another lease got first is not given back (the lane goes a
	// little slower, never faster)
	planned, _ := storage.Plan(cands, n, gate, &s.turns, func(want map[string]int) (map[string]int, error) {
		got := make(map[string]int, len(want))
		for lane, k := range want {
			r, _ := gate.RateOf(lane)
			got[lane] = s.pace.Take(storage.PaceOf(lane), r, now, k)
		}
		return got, nil
	})
	limit := storage.CountLanes(planned)
	picked := storage.PickFair(onlyLanes(cands, limit), n, limit, &s.turns)
	s.turns.Served(picked)
	return s.leaseTaken(ctx, now, picked, lease)
}

// LeaseNamed implements storage.Store.
func (s *Store) LeaseNamed(ctx context.Context, now time.Time, cands []storage.Candidate, lease time.Duration) ([]*storage.Job, error) {
	due, err := storage.LeasableNamed(ctx, cands, now)
	if err != nil {
		return nil, err
	}
	return s.leaseTaken(ctx, now, due, lease)
}

// leaseTaken leases the jobs of picked (due at now, read from the index)
// that no one holds, in picked's order.
func (s *Store) leaseTaken(ctx context.Context, now time.Time, picked []storage.Candidate, lease time.Duration) ([]*storage.Job, error) {
	until := now.Add(lease)
	type taken struct {
		storage.Candidate
		token string
	}
	var took []taken
	for _, c := range picked {
		if token := s.leases.take(c.ID, c.Lane, c.Due, now, until); token != "" {
			took = append(took, taken{c, token})
		}
	}
	// read the jobs taken in a transaction begun after taking them: a job
	// whose outcome a Finish committed since the candidates were read
	// (its lease dropped just before this one was taken) is no longer
	// queued at the candidate's due key, and is not handed out again. A
	// record queued at that key says the key is there (they are written
	// together): only a record that is not is looked for in the index
	var jobs []*storage.Job
	var broken []taken // unreadable, or an orphan index key: fixed in a write
	err := s.view(func(tx *kv.Tx) error {
		queue := tx.Bucket(bQueue)
		for _, c := range took {
			id := []byte(c.ID)
			k := dueKey(c.Lane, c.Due, id)
			raw := tx.Bucket(bEvents).Get(id)
			rec, err := decodeRecord(id, raw)
			if err != nil || !queuedAt(rec, id, k) {
				if hasKey(queue, k) {
					broken = append(broken, c)
				} else {
					s.leases.drop(c.ID, c.token) // settled meanwhile
				}
				continue
			}
			// the payload of a job sharing its event's, joined to what is handed out
			leased := rec.Event
			if err := joinPayload(tx, &leased); err != nil {
				broken = append(broken, c)
				continue
			}
			s.leases.remember(c.ID, c.token, raw, rec)
			job := rec.Job
			job.Headers, job.Body, job.Sealed = leased.Headers, leased.Body, leased.Sealed
			job.Lease, job.LeaseUntil = c.token, until
			jobs = append(jobs, &job)
		}
		return nil
	})
	if err != nil {
		for _, j := range jobs {
			s.leases.drop(j.ID, j.Lease)
		}
		jobs = nil
	}
	if len(broken) > 0 {
		if ferr := s.update(ctx, func(tx *kv.Tx) error {
			for _, c := range broken {
				if err := s.dropBroken(tx, c.Candidate); err != nil {
					return err
				}
			}
			return nil
		}); ferr != nil && err == nil {
			err = ferr
		}
		for _, c := range broken {
			s.leases.drop(c.ID, c.token)
		}
	}
	return jobs, err
}

// dropBroken takes out of the queue the job of candidate c (leased by the
// caller) that a lease could not hand out: an index key with no record,
// or with a record not queued at it, is deleted (a queued record's own
// key put, if it was missing); an unreadable record (or payload) goes to
// the DLQ, not back at every lease (poison).
func (s *Store) dropBroken(tx *kv.Tx, c storage.Candidate) error {
	id, k := []byte(c.ID), dueKey(c.Lane, c.Due, []byte(c.ID))
	if !hasKey(tx.Bucket(bQueue), k) {
		return nil // settled meanwhile
	}
	rec, cause := getRecord(tx, id)
	if cause == nil && queuedAt(rec, id, k) {
		leased := rec.Event
		if cause = joinPayload(tx, &leased); cause == nil {
			return nil // readable now (rekeyed meanwhile): leased again later
		}
	}
	if err := queueRemove(tx, k); err != nil {
		return err
	}
	if cause == nil { // an index key its record does not name
		if rec != nil && rec.Status == storage.StatusQueued && !rec.Due.IsZero() {
			// the record's own key, which a build that kept it elsewhere
			// (older, or newer, then downgraded) may have left out: the
			// job is still to deliver
			return putDue(tx, rec)
		}
		return nil
	}
	return poison(tx, c.Lane, id, cause, s.now())
}

// queuedAt reports whether rec (nil: none), job id's record, is a queued
// job whose due key is k. A record and its due key are written in one
// transaction, so a record queued at k means k is in the index.
func queuedAt(rec *record, id, k []byte) bool {
	return rec != nil && rec.Status == storage.StatusQueued && !rec.Due.IsZero() &&
		bytes.Equal(dueKey(storage.LaneOf(&rec.Event), rec.Due, id), k)
}

// leased reports the jobs under lease at now, for the index walks.
func (s *Store) leased(now time.Time) func(id []byte) bool {
	return func(id []byte) bool { return s.leases.leasedKey(id, now) }
}

// NextDue implements storage.Store: the first job of a lane not leased,
// or the end of the first lease to run out.
func (s *Store) NextDue(ctx context.Context, gate *storage.Gate) (time.Time, bool, error) {
	now := s.now()
	t, ok := s.leases.firstEnd(now)
	leased := s.leased(now)
	err := s.walkLanes(s.floors.list(), func(c *kv.Cursor, laneB []byte, k []byte) error {
		lane := string(laneB)
		if gate.Skipped(lane) {
			return nil
		}
		if k = firstFree(c, laneB, k, leased); k == nil {
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
	return t, ok, err
}

// QueueHeads implements storage.Store: one Seek per lane, and a step over
// each leased job at its head. A leased job's due time is its lease's end
// (as Lookup reports it): a lane whose every job is leased reports the
// first of them.
func (s *Store) QueueHeads(ctx context.Context) (map[string]time.Time, error) {
	now := s.now()
	leased := s.leased(now)
	out := map[string]time.Time{}
	err := s.walkLanes(s.floors.list(), func(c *kv.Cursor, lane []byte, k []byte) error {
		first := k
		if k = firstFree(c, lane, k, leased); k == nil {
			_, _, id, _ := splitDueKey(first)
			if until, ok := s.leases.until(string(id), now); ok {
				out[string(lane)] = until
			}
			return nil
		}
		_, due, _, _ := splitDueKey(k)
		out[string(lane)] = due
		return nil
	})
	return out, err
}

// Finish implements storage.Store. The job's lease is dropped once the
// outcome is committed (or the job found settled by someone else); a
// failed commit keeps it, and the job is leased again when it runs out.
// Only a dead letter and an outcome that lets an ordered chain's next job
// go wait for their fsync: any other outcome is committed unsynced and
// made durable by the next synced commit. Lost in a crash, a chain's pop
// would let its next job be delivered before the head again.
func (s *Store) Finish(ctx context.Context, job *storage.Job, out storage.Outcome) error {
	now := s.now()
	write := s.updateUnsynced
	if out.Result == storage.Dead || storage.ChainOf(&job.Event) != "" && storage.PopsChain(&job.Event, out.Result) {
		write = s.update
	}
	err := write(ctx, func(tx *kv.Tx) error {
		id := []byte(job.ID)
		read, ok := s.leases.held(job.ID, job.Lease)
		if !ok {
			return storage.ErrLeaseLost
		}
		rec, same, err := read.current(tx, id)
		if err != nil {
			return err
		}
		// leased, a job is queued with its due key: anything else means
		// it was settled meanwhile (erased, or finished under a lease that
		// had run out). The record as the lease read it (same) is queued
		// at its due key (Lease checked it): only a record that changed
		// since is looked for in the index
		if rec == nil || rec.Status != storage.StatusQueued || rec.Due.IsZero() {
			return storage.ErrLeaseLost
		}
		k := dueKey(storage.LaneOf(&rec.Event), rec.Due, id)
		if !same && !hasKey(tx.Bucket(bQueue), k) {
			return storage.ErrLeaseLost
		}
		if err := queueRemove(tx, k); err != nil {
			return err
		}
		rec.Due = time.Time{}
		if out.Attempt != nil {
			rec.Attempts = append(rec.Attempts, *out.Attempt)
		}
		// the next job of an ordered job's chain goes once it is done
		if storage.PopsChain(&rec.Event, out.Result) {
			if err := popChain(tx, storage.ChainOf(&rec.Event), rec.ID, now); err != nil {
				return err
			}
		}
		switch st := out.Result.Status(); st {
		case storage.StatusDelivered:
			rec.Status = st
			return finishRecord(tx, rec, now)
		case storage.StatusQueued:
			rec.Status = st
			rec.Due = out.DueAt(now)
			if out.MovesApart(&rec.Event) {
				rec.Apart = true // due again in its tenant's own lane
			}
			if err := putRecord(tx, rec); err != nil {
				return err
			}
			return putDue(tx, rec)
		case storage.StatusDead:
			if err := deadLetter(tx, rec, out.Error, now); err != nil {
				return err
			}
			rec.Status = st
			return finishRecord(tx, rec, now)
		}
		return fmt.Errorf("unknown result %d", out.Result)
	})
	if err == nil || errors.Is(err, storage.ErrLeaseLost) {
		s.leases.drop(job.ID, job.Lease)
	}
	return err
}

// finishRecord stores a delivered or dead event and indexes it for
// retention and replay (the index value is what ListDelivered filters on). A delivered event keeps its payload (a replay re-sends it); a
// dead one's is dropped (its DLQ entry keeps it). A payload record its
// event's deliveries share stays until the event's last record goes.
func finishRecord(tx *kv.Tx, rec *record, now time.Time) error {
	if rec.Status == storage.StatusDead {
		rec.Body, rec.Headers, rec.Sealed = nil, nil, nil
	}
	rec.FinishedAt = now
	if err := putRecord(tx, rec); err != nil {
		return err
	}
	return tx.Bucket(bDone).Put(timeKey(now, []byte(rec.ID)), storage.FinishedIndexOf(&rec.Event, rec.Status).Encode())
}
