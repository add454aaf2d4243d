package embedded

import (
	"bytes"
	"slices"
	"sync"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded/kv"
)

// leases are the jobs under lease, kept in memory: a lease is no write to
// the store. One process at a time opens the store (it is locked), and
// only its dispatchers deliver its jobs, so a lease needs to outlive
// neither the process nor the Store: when the process dies, nobody is
// delivering its leased jobs any more, and they are due again as soon as
// the store is opened again, with no lease to wait out.
//
// A leased job's record and due key are those of a queued job (the lease
// writes nothing); the table is what makes it in flight: Lease passes
// over it until its lease runs out, Finish takes only the lease's token,
// and Lookup, the duplicate answers and the counts report it in flight.
// An entry goes when Finish has committed the job's outcome (or found it
// gone), or when a later lease replaces it once it has run out. It holds
// at most the jobs the dispatchers hold (Workers+Prefetch leased and as
// many outcomes being recorded), plus those of dispatchers stopped before
// recording theirs, until leased again.
type leases struct {
	mu sync.Mutex
	m  map[string]leaseEntry
	// sweepAt is the size at which take next removes the leases that ran
	// out (those whose Finish never came: a stalled disk, an erased job).
	sweepAt int
}

// minSweep is the fewest leases worth a sweep.
const minSweep = 1024

// leaseEntry is the lease of one job.
type leaseEntry struct {
	token string
	until time.Time
	lane  string
	due   time.Time // the job's due key's time, when it was leased
	read  *leasedRecord
}

// leasedRecord is a job's record as Lease read it: its bytes and what they
// decode to. Finish starts from it, instead of decoding the record again,
// while the stored bytes are still those (nothing changed the record since:
// a rekey, an operator's step). Only records that keep no headers or body
// of their own (they share their event's payload record) are kept: the job
// handed out then holds nothing of it that a worker could change.
type leasedRecord struct {
	raw []byte
	rec record // never changed: current hands out copies
}

// current is the job's record (id) as stored in tx: a copy of the one read
// at lease when the stored bytes are still those (same), else decoded
// again (nil: none).
func (r *leasedRecord) current(tx *kv.Tx, id []byte) (rec *record, same bool, err error) {
	if r != nil {
		if v := tx.Bucket(bEvents).Get(id); v != nil && bytes.Equal(v, r.raw) {
			rec := r.rec
			rec.Attempts = slices.Clone(rec.Attempts) // Finish appends to it
			return &rec, true, nil
		}
	}
	rec, err = getRecord(tx, id)
	return rec, false, err
}

func newLeases() *leases { return &leases{m: map[string]leaseEntry{}, sweepAt: minSweep} }

// take leases job id of lane, due at due, until until, unless it is under
// a lease that has not run out at now. It returns the new lease's token
// ("" if the job is leased).
func (l *leases) take(id, lane string, due, now, until time.Time) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.m[id]; ok && e.until.After(now) {
		return ""
	}
	if len(l.m) >= l.sweepAt {
		// a lease that ran out is as good as none, but for a late Finish
		// under it, which now finds its lease lost (the job is delivered
		// again: at least once)
		for k, e := range l.m {
			if !e.until.After(now) {
				delete(l.m, k)
			}
		}
		l.sweepAt = max(minSweep, 2*len(l.m))
	}
	token := storage.NewLeaseToken()
	l.m[id] = leaseEntry{token: token, until: until, lane: lane, due: due}
	return token
}

// remember keeps the record read for job id's lease token (Finish starts
// from it: leasedRecord), if it shares its event's payload record. raw is
// the stored bytes, copied.
func (l *leases) remember(id, token string, raw []byte, rec *record) {
	if !rec.SharedPayload || rec.Headers != nil || rec.Body != nil || rec.Sealed != nil {
		return
	}
	r := &leasedRecord{raw: bytes.Clone(raw), rec: *rec}
	r.rec.Attempts = slices.Clone(rec.Attempts) // not the handed-out job's
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.m[id]; ok && e.token == token {
		e.read = r
		l.m[id] = e
	}
}

// drop ends job id's lease token (nothing if the job has been leased again
// since, under another token).
func (l *leases) drop(id, token string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.m[id]; ok && e.token == token {
		delete(l.m, id)
	}
}

// forget ends job id's lease, whatever its token: the job is gone.
func (l *leases) forget(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, id)
}

// held reports whether token is job id's lease (run out or not: a lease
// that ran out is still the job's until another replaces it, as with a
// lease kept in the file), with the record read for it (nil: none kept).
func (l *leases) held(id, token string) (*leasedRecord, bool) {
	if token == "" {
		return nil, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.m[id]
	if !ok || e.token != token {
		return nil, false
	}
	return e.read, true
}

// until is the end of job id's lease, if it is leased at now.
func (l *leases) until(id string, now time.Time) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.m[id]
	if !ok || !e.until.After(now) {
		return time.Time{}, false
	}
	return e.until, true
}

// leased reports whether job id is under a lease at now.
func (l *leases) leased(id string, now time.Time) bool {
	_, ok := l.until(id, now)
	return ok
}

// leasedKey is leased for an index key's id (no copy of it).
func (l *leases) leasedKey(id []byte, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.m[string(id)]
	return ok && e.until.After(now)
}

// byLane counts the jobs of each lane under a lease at now whose due key
// queued reports present (a read transaction's view of the queue): a
// lease taken just after that transaction began (a job enqueued since) or
// not yet dropped by a Finish committed before it is not counted, so the
// jobs in flight are always some of the jobs the queue counters count.
func (l *leases) byLane(now time.Time, queued func(lane string, due time.Time, id string) bool) map[string]int64 {
	type live struct {
		id string
		e  leaseEntry
	}
	l.mu.Lock()
	var all []live
	for id, e := range l.m {
		if e.until.After(now) {
			all = append(all, live{id, e})
		}
	}
	l.mu.Unlock()
	out := map[string]int64{}
	for _, x := range all {
		if queued(x.e.lane, x.e.due, x.id) {
			out[x.e.lane]++
		}
	}
	return out
}

// firstEnd is the earliest end of a lease that has not run out at now
// (ok false: none), when a job passed over because it is leased may be
// leased again.
func (l *leases) firstEnd(now time.Time) (t time.Time, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.m {
		if e.until.After(now) && (!ok || e.until.Before(t)) {
			t, ok = e.until, true
		}
	}
	return t, ok
}

// status is the status of job id whose record says stored: in flight
// while it is leased (its record says queued).
func (l *leases) status(id string, stored storage.Status, now time.Time) storage.Status {
	if stored == storage.StatusQueued && l.leased(id, now) {
		return storage.StatusInFlight
	}
	// a record an earlier version left leased is queued again at Open
	// (requeueLeased); EffectiveStatus covers one it read since
	return storage.EffectiveStatus(stored, time.Time{}, false, now)
}

// requeueLeased makes the jobs an earlier version leased in the file
// (their records in flight, marked in bInFlight) queued jobs again, due
// when their leases end, as that version would have leased them again.
// Their due keys stay (at their leases' ends): the queue's counters do
// not change.
func requeueLeased(tx *kv.Tx) error {
	b := tx.Bucket(bInFlight)
	var ids [][]byte
	if err := b.ForEach(func(k, _ []byte) error {
		ids = append(ids, bytes.Clone(k))
		return nil
	}); err != nil {
		return err
	}
	for _, id := range ids {
		rec, err := getRecord(tx, id)
		if err == nil && rec != nil && rec.Status == storage.StatusInFlight {
			rec.Status, rec.Lease, rec.LeaseUntil = storage.StatusQueued, "", time.Time{}
			if err := putRecord(tx, rec); err != nil {
				return err
			}
		}
		// an unreadable one keeps its due key: a lease meets it and
		// dead-letters it
		if err := b.Delete(id); err != nil {
			return err
		}
	}
	return nil
}
