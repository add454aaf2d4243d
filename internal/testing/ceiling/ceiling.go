// Package ceiling is a measuring instrument, not a store. It puts an
// in-memory queue in front of a real store: Enqueue, Lease, LeaseNamed,
// NextDue, Finish and the queue sizes are answered from memory, without
// writing to the store. With a journal, each event and each outcome is also
// appended to a file, and the file is fdatasync'd once per round of
// concurrent writes, as a log-structured store would do before it answers.
// Everything else (the DLQ, lookups, stats, pauses) goes to the wrapped
// store.
//
// A load run against it measures what hookline costs apart from its
// store: the ceiling that no store can pass on that machine, and, with a
// journal, the ceiling of a store that syncs before it answers. It is
// built into Caddy only with the build tag hookline_ceiling
// (internal/storagemodules/ceiling.go) and used by scripts/bench/run (CEILING)
// and by this package's benchmarks.
//
// RedisQueue (redis.go) is the same instrument with the queue in Redis,
// doing the least work any Redis queue must: the Redis store's ceiling.
//
// Store keeps nothing across a restart (the journal is written, never read),
// ignores order keys, the end of a lease and the gate but for a hold of
// every lane it has ever been given jobs of (hold.go), and drops a job
// finished dead instead of filing a DLQ entry.
package ceiling

import (
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"sync"
	"time"

	"github.com/hookline/hookline/internal/groupcommit"
	"github.com/hookline/hookline/storage"
)

// Options says what the queue writes besides keeping its jobs in memory.
type Options struct {
	// Journal is the file each event and each outcome is appended to;
	// empty: nothing is written.
	Journal string
	// UnsyncedOutcomes appends outcomes without waiting for an fdatasync
	// (events still wait for theirs): at-least-once delivery allows it,
	// since an outcome lost in a crash means one more delivery.
	UnsyncedOutcomes bool
}

// maxRound bounds the writes one journal round carries.
const maxRound = 4096

// Store is the in-memory queue in front of a storage.Store.
type Store struct {
	storage.Store

	mu     sync.Mutex
	jobs   map[string]*entry         // queued and leased, by job id
	lanes  map[string]storage.Counts // the jobs' sizes, kept as they move: a stats read does not scan
	due    dueHeap                   // queued jobs, earliest due first
	claims map[string]claim          // by claim key
	seq    uint64                    // orders jobs due at the same time by arrival
	seen   lanesSeen                 // for a hold of every lane

	journal  *os.File
	events   *groupcommit.Batcher[[]byte, struct{}] // synced appends
	outcomes *groupcommit.Batcher[[]byte, struct{}] // events' batcher, or unsynced appends
}

// claim is who holds an event id, and until when.
type claim struct {
	id    string
	until time.Time
}

// entry is a job and where it is: in the due heap (index ≥ 0) or leased.
type entry struct {
	job    storage.Job
	lane   string // storage.LaneOf(job)
	due    time.Time
	seq    uint64
	index  int // in the due heap; -1 while leased
	leased bool
}

// Wrap puts the in-memory queue in front of st. Close closes both.
func Wrap(st storage.Store, opts Options) (*Store, error) {
	s := &Store{Store: st, jobs: map[string]*entry{}, claims: map[string]claim{}, lanes: map[string]storage.Counts{}}
	if opts.Journal == "" {
		return s, nil
	}
	f, err := os.OpenFile(opts.Journal, os.O_CREATE|os.O_WRONLY|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	s.journal = f
	s.events = groupcommit.New(s.appendSynced, groupcommit.Options[[]byte]{MaxBatch: maxRound})
	s.outcomes = s.events
	if opts.UnsyncedOutcomes {
		s.outcomes = groupcommit.New(s.appendUnsynced, groupcommit.Options[[]byte]{MaxBatch: maxRound})
	}
	return s, nil
}

// appendSynced writes a round's records in one write and waits for the
// file's fdatasync before it answers them.
func (s *Store) appendSynced(round []*groupcommit.Call[[]byte, struct{}]) {
	err := s.write(round)
	if err == nil {
		err = fdatasync(s.journal)
	}
	answer(round, err)
}

// appendUnsynced writes a round's records in one write and answers them.
func (s *Store) appendUnsynced(round []*groupcommit.Call[[]byte, struct{}]) {
	answer(round, s.write(round))
}

func (s *Store) write(round []*groupcommit.Call[[]byte, struct{}]) error {
	n := 0
	for _, c := range round {
		n += len(c.Req)
	}
	buf := make([]byte, 0, n)
	for _, c := range round {
		buf = append(buf, c.Req...)
	}
	_, err := s.journal.Write(buf)
	return err
}

func answer(round []*groupcommit.Call[[]byte, struct{}], err error) {
	for _, c := range round {
		c.Answer(struct{}{}, err)
	}
}

// record appends v's JSON line to the journal through b; without a
// journal it does nothing.
func (s *Store) record(ctx context.Context, b *groupcommit.Batcher[[]byte, struct{}], v any) error {
	if b == nil {
		return nil
	}
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := b.Do(ctx, append(line, '\n')); err != nil {
		return fmt.Errorf("%w: journal: %w", storage.ErrUnavailable, err)
	}
	return nil
}

// outcome is an outcome's journal record.
type outcome struct {
	ID     string         `json:"id"`
	Result storage.Result `json:"result"`
}

// Enqueue implements storage.Queue: a claim that holds makes a duplicate;
// otherwise the event is journaled (when there is a journal) and its jobs
// are queued, due now.
func (s *Store) Enqueue(ctx context.Context, ev *storage.Event, dedupeUntil time.Time) (storage.EnqueueResult, error) {
	jobs, _, err := storage.DeliveriesOf(ev)
	if err != nil {
		return storage.EnqueueResult{}, err
	}
	now := time.Now()
	ck := storage.ClaimKey(ev.Source, ev.EventID)
	if ev.Dedupe {
		s.mu.Lock()
		cl, ok := s.claims[ck]
		s.mu.Unlock()
		if ok && cl.until.After(now) {
			return storage.EnqueueResult{Duplicate: true, ID: cl.id, Status: storage.StatusQueued, DedupeUntil: cl.until}, nil
		}
	}
	if err := s.record(ctx, s.events, ev); err != nil {
		return storage.EnqueueResult{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ev.Dedupe {
		// two first copies racing past the check above both stay queued:
		// at-least-once, as a miss of the L1 cache would be
		s.claims[ck] = claim{id: ev.ID, until: dedupeUntil}
	}
	for i := range jobs {
		s.seq++
		e := &entry{job: storage.Job{Event: jobs[i]}, due: now, seq: s.seq}
		e.lane = storage.LaneOf(&e.job.Event)
		s.seen.add(e.lane)
		s.jobs[e.job.ID] = e
		heap.Push(&s.due, e)
		s.move(e.lane, 1, 0)
	}
	return storage.EnqueueResult{ID: ev.ID, Status: storage.StatusQueued, Due: storage.NamedDue(jobs, now, 0)}, nil
}

// take leases e until now+lease and returns a copy of its job. s.mu is
// held.
func (s *Store) take(e *entry, now time.Time, lease time.Duration) *storage.Job {
	heap.Remove(&s.due, e.index)
	e.leased = true
	s.move(e.lane, -1, 1)
	e.seq++ // a new lease: the last one's outcome no longer counts
	e.job.Lease = fmt.Sprint(e.seq)
	e.job.LeaseUntil = now.Add(lease)
	j := e.job
	j.Attempts = append([]storage.Attempt(nil), e.job.Attempts...)
	return &j
}

// Lease implements storage.Queue: up to n jobs due at or before now,
// earliest first, none while the gate holds every lane seen.
func (s *Store) Lease(_ context.Context, now time.Time, n int, lease time.Duration, gate *storage.Gate) ([]*storage.Job, error) {
	if s.seen.held(gate) {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*storage.Job
	for len(out) < n && len(s.due) > 0 && !s.due[0].due.After(now) {
		out = append(out, s.take(s.due[0], now, lease))
	}
	return out, nil
}

// LeaseNamed implements storage.Queue.
func (s *Store) LeaseNamed(_ context.Context, now time.Time, cands []storage.Candidate, lease time.Duration) ([]*storage.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*storage.Job
	for _, c := range cands {
		if e, ok := s.jobs[c.ID]; ok && !e.leased && !e.due.After(now) {
			out = append(out, s.take(e, now, lease))
		}
	}
	return out, nil
}

// NextDue implements storage.Queue: nothing while the gate holds every
// lane seen.
func (s *Store) NextDue(_ context.Context, gate *storage.Gate) (time.Time, bool, error) {
	if s.seen.held(gate) {
		return time.Time{}, false, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.due) == 0 {
		return time.Time{}, false, nil
	}
	return s.due[0].due, true, nil
}

// Finish implements storage.Queue: a retried or released job is queued
// again at out.Due; a delivered or dead one is gone.
func (s *Store) Finish(ctx context.Context, job *storage.Job, out storage.Outcome) error {
	switch out.Result {
	case storage.Retry, storage.Release, storage.Delivered, storage.Dead:
	default:
		return fmt.Errorf("unknown result %d", out.Result)
	}
	if err := s.record(ctx, s.outcomes, outcome{ID: job.ID, Result: out.Result}); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.jobs[job.ID]
	if !ok || !e.leased || e.job.Lease != job.Lease {
		return storage.ErrLeaseLost
	}
	e.leased = false
	switch out.Result {
	case storage.Retry, storage.Release:
		if out.Attempt != nil {
			e.job.Attempts = append(e.job.Attempts, *out.Attempt)
		}
		e.due = out.Due
		heap.Push(&s.due, e)
		s.move(e.lane, 1, -1)
	default: // delivered or dead
		delete(s.jobs, job.ID)
		s.move(e.lane, 0, -1)
	}
	return nil
}

// move adds queued and inFlight to lane's sizes; a lane left with no
// job goes. s.mu is held.
func (s *Store) move(lane string, queued, inFlight int) {
	c := s.lanes[lane]
	c.Queued += queued
	c.InFlight += inFlight
	if c == (storage.Counts{}) {
		delete(s.lanes, lane)
		return
	}
	s.lanes[lane] = c
}

// Counts implements storage.Operations: the queue's sizes from memory,
// the DLQ's from the wrapped store.
func (s *Store) Counts(ctx context.Context) (storage.Counts, error) {
	c, err := s.Store.Counts(ctx)
	if err != nil {
		return c, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c.Queued, c.InFlight = 0, 0
	for _, n := range s.lanes {
		c.Queued += n.Queued
		c.InFlight += n.InFlight
	}
	return c, nil
}

// QueueBySource implements storage.Operations.
func (s *Store) QueueBySource(ctx context.Context) (map[string]storage.Counts, error) {
	lanes, err := s.QueueByLane(ctx)
	return storage.CountsBySource(lanes), err
}

// QueueByLane implements storage.Operations.
func (s *Store) QueueByLane(context.Context) (map[string]storage.Counts, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.lanes), nil
}

// QueueHeads implements storage.Operations: the earliest due job of each
// lane, by reading every job (the health page's question, which no load
// run polls).
func (s *Store) QueueHeads(context.Context) (map[string]time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]time.Time{}
	for _, e := range s.jobs {
		if h, ok := out[e.lane]; !ok || e.due.Before(h) {
			out[e.lane] = e.due
		}
	}
	return out, nil
}

// Close closes the journal and the wrapped store.
func (s *Store) Close() error {
	var errs []error
	if s.journal != nil {
		s.events.Close()
		if s.outcomes != s.events {
			s.outcomes.Close()
		}
		errs = append(errs, s.journal.Close())
	}
	return errors.Join(append(errs, s.Store.Close())...)
}

// dueHeap orders queued jobs by due time, then arrival (container/heap).
type dueHeap []*entry

func (h dueHeap) Len() int { return len(h) }
func (h dueHeap) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].seq < h[j].seq
}
func (h dueHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *dueHeap) Push(x any) {
	e := x.(*entry)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *dueHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.index = -1
	return e
}

// Interface guard
var _ storage.Store = (*Store)(nil)
