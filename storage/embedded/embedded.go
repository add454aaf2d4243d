// Package embedded is hookline's default store: one bbolt file, every
// accepted event committed and fsynced before the ingress answers, with
// concurrent writers sharing commits. It needs no external service and
// survives kill -9: a job leased when the process died is due again once
// its lease expires.
package embedded

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/hookline/hookline/dlq"
	"github.com/hookline/hookline/storage"
)

var errClosed = fmt.Errorf("%w: store closed", storage.ErrUnavailable)

// Bucket names. Index keys start with an 8-byte big-endian Unix-nano time so
// that cursors walk them in time order.
var (
	bEvents   = []byte("events")   // id -> record
	bInFlight = []byte("inflight") // id -> nil: leased jobs
	bClaims   = []byte("claims")   // source\x00event_id -> expires|id
	bClaimExp = []byte("claimexp") // expires|claim key -> nil
	bDone     = []byte("done")     // finished|id -> nil: delivered and dead events
	bDLQ      = []byte("dlq")      // id -> dlq.Entry
	bDLQIdx   = []byte("dlqidx")   // created|id -> nil
	bDLQOpen  = []byte("dlqopen")  // id -> nil: pending and investigating entries
	bIDs      = []byte("ids")      // source\x00event_id -> id, while the event record exists
	bPaused   = []byte("paused")   // source -> nil
	bStats    = []byte("stats")    // minute|source\x00name -> count; all-time under minute 0
)

var allBuckets = [][]byte{bEvents, bQueue, bInFlight, bClaims, bClaimExp, bDone, bDLQ, bDLQIdx, bDLQOpen, bIDs, bPaused, bStats}

// record is an event as stored in bEvents.
type record struct {
	storage.Job
	Status     storage.Status `json:"status"`
	Due        time.Time      `json:"due,omitzero"`         // key in bQueue, if queued or leased
	FinishedAt time.Time      `json:"finished_at,omitzero"` // key in bDone, if finished
}

// Store is the bbolt-backed storage.Store.
type Store struct {
	db        *bolt.DB
	pace      storage.Pacer
	c         *committer
	now       func() time.Time
	closeOnce sync.Once
}

// Interface guard
var _ storage.Store = (*Store)(nil)

// Options tune Open.
type Options struct {
	// Timeout bounds the wait for the file lock (another process holding
	// the file). Zero means 5s.
	Timeout time.Duration
	// Now replaces time.Now (tests).
	Now func() time.Time
	// BeforeCommit, when set, runs in every group commit after the
	// batch's writes and before the transaction commits (and fsyncs), with
	// the number of writes in the batch. Blocking in it stalls commits as
	// a hung fsync would; an error fails the batch. For tests.
	BeforeCommit func(writes int) error
}

// Open opens (creating if needed) the store file at path.
func Open(path string, opts Options) (*Store, error) {
	if opts.Timeout == 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("%w: creating directory: %v", storage.ErrUnavailable, err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout:        opts.Timeout,
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: opening %s: %v", storage.ErrUnavailable, path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return migrateLegacyDue(tx)
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("%w: initializing %s: %v", storage.ErrUnavailable, path, err)
	}
	return &Store{db: db, c: newCommitter(db, opts.BeforeCommit), now: opts.Now}, nil
}

// Path is the file the store uses.
func (s *Store) Path() string { return s.db.Path() }

// Close stops the committer and closes the file.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.c.close()
		err = s.db.Close()
	})
	return err
}

// update runs fn in a shared, durable write transaction. An expected
// outcome (lost lease, unknown or conflicting DLQ entry) is returned by fn
// before it writes anything; it is passed back to the caller without
// failing the transaction, so it does not roll back the batch it shares.
// When ctx ends first, it returns ErrUnavailable (the write may still be
// committed later).
func (s *Store) update(ctx context.Context, fn func(*bolt.Tx) error) error {
	var outcome error
	err := s.c.update(ctx, func(tx *bolt.Tx) error {
		outcome = nil
		if err := fn(tx); err != nil {
			if isOutcome(err) {
				outcome = err
				return nil
			}
			return err
		}
		return nil
	})
	if err == nil {
		err = outcome
	}
	return wrapIOErr(err)
}

func isOutcome(err error) bool {
	return errors.Is(err, storage.ErrLeaseLost) || errors.Is(err, dlq.ErrNotFound) ||
		errors.Is(err, dlq.ErrConflict) || errors.Is(err, storage.ErrNotFound)
}

func (s *Store) view(fn func(*bolt.Tx) error) error {
	return wrapIOErr(s.db.View(fn))
}

// logical errors pass through; anything else is a storage failure.
func wrapIOErr(err error) error {
	switch {
	case err == nil,
		errors.Is(err, storage.ErrUnavailable),
		errors.Is(err, storage.ErrNotFound),
		errors.Is(err, storage.ErrLeaseLost),
		errors.Is(err, dlq.ErrNotFound),
		errors.Is(err, dlq.ErrConflict),
		errors.Is(err, dlq.ErrInvalidCursor):
		return err
	}
	return fmt.Errorf("%w: %v", storage.ErrUnavailable, err)
}

// Enqueue implements storage.Store.
func (s *Store) Enqueue(ctx context.Context, ev *storage.Event, dedupeUntil time.Time) (storage.EnqueueResult, error) {
	if err := ctx.Err(); err != nil {
		return storage.EnqueueResult{}, err
	}
	now := s.now()
	var res storage.EnqueueResult
	err := s.update(ctx, func(tx *bolt.Tx) error {
		if ev.Dedupe {
			claims := tx.Bucket(bClaims)
			ck := claimKey(ev.Source, ev.EventID)
			if v := claims.Get(ck); len(v) >= 8 {
				exp := timeAt(v)
				if exp.After(now) {
					id := string(v[8:])
					res = storage.EnqueueResult{Duplicate: true, ID: id, Status: statusOf(tx, id, now), DedupeUntil: exp}
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
			if err := tx.Bucket(bIDs).Put(ck, []byte(ev.ID)); err != nil {
				return err
			}
		}
		rec := &record{Job: storage.Job{Event: *ev}, Status: storage.StatusQueued, Due: now}
		if err := putRecord(tx, rec); err != nil {
			return err
		}
		if err := putDue(tx, rec); err != nil {
			return err
		}
		res = storage.EnqueueResult{ID: ev.ID, Status: storage.StatusQueued}
		return nil
	})
	return res, err
}

// Lease implements storage.Store. The pace of a lane is kept in memory:
// one process at a time uses the file.
func (s *Store) Lease(ctx context.Context, now time.Time, n int, lease time.Duration, gate *storage.Gate) ([]*storage.Job, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, nil
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
			got[lane] = s.pace.Take(lane, r, now, k)
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
			if err := tx.Bucket(bQueue).Delete(dueKey(c.Lane, c.Due, id)); err != nil {
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
			rec.Lease = newToken()
			rec.LeaseUntil = until
			rec.Due = until
			rec.Status = storage.StatusInFlight
			if err := putRecord(tx, rec); err != nil {
				return err
			}
			if err := putDue(tx, rec); err != nil {
				return err
			}
			if err := tx.Bucket(bInFlight).Put(id, nil); err != nil {
				return err
			}
			job := rec.Job
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
				if next := s.pace.Next(lane, r); next.After(due) {
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
		if err := tx.Bucket(bInFlight).Delete(id); err != nil {
			return err
		}
		rec.Lease, rec.LeaseUntil, rec.Due = "", time.Time{}, time.Time{}
		if out.Attempt != nil {
			rec.Attempts = append(rec.Attempts, *out.Attempt)
		}
		switch out.Result {
		case storage.Delivered:
			rec.Status = storage.StatusDelivered
			return finishRecord(tx, rec, now)
		case storage.Retry, storage.Release:
			due := out.Due
			if due.IsZero() {
				due = now
			}
			rec.Status = storage.StatusQueued
			rec.Due = due
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

// finishRecord stores a delivered or dead event without its payload (the
// DLQ entry keeps the payload of dead ones) and indexes it for retention.
func finishRecord(tx *bolt.Tx, rec *record, now time.Time) error {
	rec.Body, rec.Headers = nil, nil
	rec.FinishedAt = now
	if err := putRecord(tx, rec); err != nil {
		return err
	}
	return tx.Bucket(bDone).Put(timeKey(now, []byte(rec.ID)), nil)
}

func deadLetter(tx *bolt.Tx, rec *record, reason string, now time.Time) error {
	e := &dlq.Entry{
		ID:         rec.ID,
		EventID:    rec.EventID,
		Source:     rec.Source,
		Upstream:   rec.Upstream,
		Payload:    rec.Body,
		Headers:    rec.Headers,
		Error:      reason,
		Attempts:   rec.Attempts,
		ReceivedAt: rec.ReceivedAt,
		CreatedAt:  now,
		UpdatedAt:  now,
		Status:     dlq.StatusPending,
	}
	if n := len(rec.Attempts); n > 0 {
		e.LastStatus = rec.Attempts[n-1].Status
	}
	old, err := getEntry(tx, rec.ID)
	if err != nil {
		return err
	}
	if old != nil {
		e.Retries = old.Retries
		if err := tx.Bucket(bDLQIdx).Delete(timeKey(old.CreatedAt, []byte(old.ID))); err != nil {
			return err
		}
	}
	if err := putEntry(tx, e); err != nil {
		return err
	}
	return tx.Bucket(bDLQIdx).Put(timeKey(now, []byte(e.ID)), nil)
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

// DLQList implements storage.Store.
func (s *Store) DLQList(ctx context.Context, f dlq.Filter) (dlq.Page, error) {
	page := dlq.Page{Entries: []dlq.Entry{}}
	limit := f.EffectiveLimit()
	var start []byte
	if f.Cursor != "" {
		var err error
		start, err = base64.RawURLEncoding.DecodeString(f.Cursor)
		if err != nil || len(start) < 8 {
			return page, dlq.ErrInvalidCursor
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
			page.Entries = append(page.Entries, *e)
		}
		return nil
	})
	return page, err
}

// DLQCounts implements storage.Store.
func (s *Store) DLQCounts(ctx context.Context) (map[string]map[dlq.Status]int, error) {
	out := map[string]map[dlq.Status]int{}
	err := s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bDLQ).ForEach(func(_, v []byte) error {
			var e struct {
				Source string     `json:"source"`
				Status dlq.Status `json:"status"`
			}
			if json.Unmarshal(v, &e) != nil {
				return nil
			}
			if out[e.Source] == nil {
				out[e.Source] = map[dlq.Status]int{}
			}
			out[e.Source][e.Status]++
			return nil
		})
	})
	return out, err
}

// DLQGet implements storage.Store.
func (s *Store) DLQGet(ctx context.Context, id string) (*dlq.Entry, error) {
	var e *dlq.Entry
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		e, err = getEntry(tx, id)
		return err
	})
	if err == nil && e == nil {
		err = dlq.ErrNotFound
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
			return dlq.ErrNotFound
		}
		if e.Status == dlq.StatusRetried || e.Status == dlq.StatusDiscarded {
			return dlq.ErrConflict
		}
		rec, err := getRecord(tx, []byte(id))
		if err != nil {
			return err
		}
		if rec != nil {
			if rec.Status != storage.StatusDead {
				return dlq.ErrConflict
			}
			if err := tx.Bucket(bDone).Delete(timeKey(rec.FinishedAt, []byte(id))); err != nil {
				return err
			}
		} else {
			rec = &record{Job: storage.Job{Event: storage.Event{
				ID: e.ID, EventID: e.EventID, Dedupe: true, Source: e.Source,
				Upstream: e.Upstream, ReceivedAt: e.ReceivedAt,
			}}}
		}
		rec.Body, rec.Headers = e.Payload, e.Headers
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
		e.Status = dlq.StatusRetried
		e.Retries++
		e.UpdatedAt = now
		return putEntry(tx, e)
	})
}

// DLQSetStatus implements storage.Store.
func (s *Store) DLQSetStatus(ctx context.Context, id string, status dlq.Status, text string, now time.Time) error {
	switch status {
	case dlq.StatusInvestigating, dlq.StatusResolved, dlq.StatusDiscarded:
	default:
		return fmt.Errorf("%w: cannot set status %q", dlq.ErrConflict, status)
	}
	return s.update(ctx, func(tx *bolt.Tx) error {
		e, err := getEntry(tx, id)
		if err != nil {
			return err
		}
		if e == nil {
			return dlq.ErrNotFound
		}
		if e.Status == dlq.StatusRetried {
			return dlq.ErrConflict
		}
		e.Status = status
		e.UpdatedAt = now
		switch status {
		case dlq.StatusResolved:
			e.Resolution = text
		case dlq.StatusDiscarded:
			e.Reason = text
		}
		return putEntry(tx, e)
	})
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

// statsKey is the minute (0: all-time) then source\x00name.
func statsKey(minute int64, source, name string) []byte {
	k := make([]byte, 8, 8+len(source)+1+len(name))
	binary.BigEndian.PutUint64(k, uint64(minute))
	k = append(k, source...)
	k = append(k, 0)
	return append(k, name...)
}

// StatsBucketKeep is how long minute buckets are kept.
const StatsBucketKeep = 48 * time.Hour

// AddStats implements storage.Store.
func (s *Store) AddStats(ctx context.Context, at time.Time, deltas map[string]map[string]int64) error {
	minute := at.Unix() / 60
	return s.update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bStats)
		for source, m := range deltas {
			for name, d := range m {
				for _, k := range [][]byte{statsKey(0, source, name), statsKey(minute, source, name)} {
					var n int64
					if v := b.Get(k); len(v) == 8 {
						n = int64(binary.BigEndian.Uint64(v))
					}
					v := make([]byte, 8)
					binary.BigEndian.PutUint64(v, uint64(n+d))
					if err := b.Put(k, v); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
}

// Stats implements storage.Store.
func (s *Store) Stats(ctx context.Context, since time.Time) (map[string]map[string]int64, map[string]map[string]int64, error) {
	recent, all := map[string]map[string]int64{}, map[string]map[string]int64{}
	add := func(out map[string]map[string]int64, k, v []byte) {
		source, name, ok := bytes.Cut(k[8:], []byte{0})
		if !ok || len(v) != 8 {
			return
		}
		m := out[string(source)]
		if m == nil {
			m = map[string]int64{}
			out[string(source)] = m
		}
		m[string(name)] += int64(binary.BigEndian.Uint64(v))
	}
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bStats).Cursor()
		zero := make([]byte, 8)
		for k, v := c.First(); k != nil && bytes.HasPrefix(k, zero); k, v = c.Next() {
			add(all, k, v)
		}
		from := make([]byte, 8)
		binary.BigEndian.PutUint64(from, uint64(max(since.Unix()/60, 1)))
		for k, v := c.Seek(from); k != nil; k, v = c.Next() {
			add(recent, k, v)
		}
		return nil
	})
	return recent, all, err
}

// cleanupChunk bounds the work of one cleanup transaction.
const cleanupChunk = 1000

// Cleanup implements storage.Store.
func (s *Store) Cleanup(ctx context.Context, now time.Time, retention, dlqRetention time.Duration) (int, error) {
	total := 0
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		var n int
		err := s.update(ctx, func(tx *bolt.Tx) error {
			n = 0
			var err error
			var m int
			m, err = sweep(tx, bDone, now.Add(-retention), cleanupChunk, func(k []byte) error {
				id := k[8:]
				rec, err := getRecord(tx, id)
				if err != nil { // unreadable and past retention: drop it rather than stop every cleanup
					return tx.Bucket(bEvents).Delete(id)
				}
				if rec == nil {
					return nil
				}
				ids := tx.Bucket(bIDs)
				ck := claimKey(rec.Source, rec.EventID)
				if bytes.Equal(ids.Get(ck), id) {
					if err := ids.Delete(ck); err != nil {
						return err
					}
				}
				return tx.Bucket(bEvents).Delete(id)
			})
			n += m
			if err != nil {
				return err
			}
			m, err = sweepStats(tx, now.Add(-StatsBucketKeep), cleanupChunk)
			n += m
			if err != nil {
				return err
			}
			m, err = sweep(tx, bClaimExp, now, cleanupChunk, func(k []byte) error {
				claims := tx.Bucket(bClaims)
				ck := k[8:]
				// delete the claim only if it is the one this index key is for
				if v := claims.Get(ck); len(v) >= 8 && bytes.Equal(v[:8], k[:8]) {
					return claims.Delete(ck)
				}
				return nil
			})
			n += m
			if err != nil || dlqRetention <= 0 {
				return err
			}
			m, err = sweep(tx, bDLQIdx, now.Add(-dlqRetention), cleanupChunk, func(k []byte) error {
				if err := tx.Bucket(bDLQ).Delete(k[8:]); err != nil {
					return err
				}
				return tx.Bucket(bDLQOpen).Delete(k[8:])
			})
			n += m
			return err
		})
		total += n
		if err != nil || n < cleanupChunk {
			return total, err
		}
	}
}

// sweep deletes up to max index keys older than before from bucket b,
// calling del for each first.
func sweep(tx *bolt.Tx, b []byte, before time.Time, max int, del func(k []byte) error) (int, error) {
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

// sweepStats deletes minute buckets older than before (never the all-time ones).
func sweepStats(tx *bolt.Tx, before time.Time, max int) (int, error) {
	b := tx.Bucket(bStats)
	end := before.Unix() / 60
	var keys [][]byte
	c := b.Cursor()
	first := make([]byte, 8)
	binary.BigEndian.PutUint64(first, 1)
	for k, _ := c.Seek(first); k != nil && len(keys) < max && int64(binary.BigEndian.Uint64(k[:8])) < end; k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(keys), nil
}

func getRecord(tx *bolt.Tx, id []byte) (*record, error) {
	v := tx.Bucket(bEvents).Get(id)
	if v == nil {
		return nil, nil
	}
	rec := new(record)
	if err := json.Unmarshal(v, rec); err != nil {
		return nil, fmt.Errorf("decoding event %s: %w", id, err)
	}
	return rec, nil
}

func putRecord(tx *bolt.Tx, rec *record) error {
	v, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return tx.Bucket(bEvents).Put([]byte(rec.ID), v)
}

func getEntry(tx *bolt.Tx, id string) (*dlq.Entry, error) {
	v := tx.Bucket(bDLQ).Get([]byte(id))
	if v == nil {
		return nil, nil
	}
	e := new(dlq.Entry)
	if err := json.Unmarshal(v, e); err != nil {
		return nil, fmt.Errorf("decoding dlq entry %s: %w", id, err)
	}
	return e, nil
}

func putEntry(tx *bolt.Tx, e *dlq.Entry) error {
	v, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if err := tx.Bucket(bDLQ).Put([]byte(e.ID), v); err != nil {
		return err
	}
	open := tx.Bucket(bDLQOpen)
	if e.Status == dlq.StatusPending || e.Status == dlq.StatusInvestigating {
		return open.Put([]byte(e.ID), nil)
	}
	return open.Delete([]byte(e.ID))
}

func claimKey(source, eventID string) []byte {
	k := make([]byte, 0, len(source)+1+len(eventID))
	k = append(k, source...)
	k = append(k, 0)
	return append(k, eventID...)
}

// timeKey is t as 8 big-endian bytes (Unix nanoseconds) followed by suffix.
func timeKey(t time.Time, suffix []byte) []byte {
	k := make([]byte, 8, 8+len(suffix))
	binary.BigEndian.PutUint64(k, uint64(t.UnixNano()))
	return append(k, suffix...)
}

func timeAt(k []byte) time.Time {
	return time.Unix(0, int64(binary.BigEndian.Uint64(k[:8])))
}

func newToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
