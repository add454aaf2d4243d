// Package dedupe tells events apart: where to find an event's ID (id_from
// rules) and its type (type_from rules, the same forms), and the
// in-process L1 cache of IDs already seen. The store is the truth: the cache only ever answers "seen", and a
// miss always asks the store.
package dedupe

import (
	"sync"
	"time"

	"github.com/dgraph-io/ristretto/v2"

	"github.com/hookline/hookline/storage"
)

// Seen is the L1 cache of (source, event id) pairs the store has claimed,
// with the status the store would answer for them, each kept until its
// claim ends (never beyond: a duplicate after the claim must reach the
// store). It mirrors the store, so each change of what the store would
// answer changes the entry the same way, or removes it (the store answers
// then): an equivalence test holds the two together.
type Seen struct {
	c *ristretto.Cache[string, seenEntry]
	// mu orders the read-modify-writes (Finished, Update, Forget): a
	// delivery's result must not overwrite an operator's retry or erasure
	// that came in between. Get and Add, the request path's, take no lock.
	mu sync.Mutex
}

// seenEntry is what the cache knows of one claimed event.
type seenEntry struct {
	status storage.Status
	// single is true for an event known to have exactly one delivery:
	// its delivery's result is the event's status. A fan-out event's
	// status is the aggregate of its deliveries' (storage.AggregateStatus),
	// which one delivery's result does not tell.
	single bool
	// until is when the claim ends, as the store set it.
	until time.Time
}

// NewSeen makes a cache holding about maxEntries keys.
func NewSeen(maxEntries int64) (*Seen, error) {
	if maxEntries <= 0 {
		maxEntries = 100_000
	}
	c, err := ristretto.NewCache(&ristretto.Config[string, seenEntry]{
		NumCounters: maxEntries * 10,
		MaxCost:     maxEntries,
		BufferItems: 64,
		// every key costs 1: without this ristretto adds its own per-item
		// overhead (~56) to each cost and MaxCost holds ~maxEntries/57 keys
		IgnoreInternalCost: true,
	})
	if err != nil {
		return nil, err
	}
	return &Seen{c: c}, nil
}

// Key is the cache key of (source, event id): the store's claim key, since
// the cache only ever repeats what a claim said.
func Key(source, eventID string) string { return storage.ClaimKey(source, eventID) }

// Get returns the cached status of key, if seen.
func (s *Seen) Get(key string) (status storage.Status, ok bool) {
	e, ok := s.c.Get(key)
	return e.status, ok
}

// Add records key as claimed until until with status, the store's answer
// for it. deliveries is how many deliveries the event has (0: not known,
// as for a duplicate the store answered: then it is taken as a fan-out
// event, whose entry a delivered result removes).
func (s *Seen) Add(key string, status storage.Status, deliveries int, until time.Time) {
	s.set(key, seenEntry{status: status, single: deliveries == 1, until: until})
}

// set caches e until its claim ends; an entry whose claim is over is
// removed instead.
func (s *Seen) set(key string, e seenEntry) {
	ttl := time.Until(e.until)
	if ttl <= 0 {
		s.c.Del(key)
		return
	}
	s.c.SetWithTTL(key, e, 1, ttl)
}

// Finished applies the result of one of the event's deliveries (status
// delivered or dead) to a cached key, keeping the entry's own claim end:
// an event of one delivery takes its status; for a fan-out event, dead
// is the aggregate at once (any dead delivery makes the event dead), and
// delivered says nothing of the others, so the entry is removed and the
// store answers the next duplicate. A key not cached stays uncached.
func (s *Seen) Finished(key string, status storage.Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.c.Get(key)
	if !ok {
		// not cached, or its Add not applied yet (ristretto applies writes
		// in order, asynchronously): removing it keeps a late Add's
		// "queued" from outliving the delivery
		s.c.Del(key)
		return
	}
	if !e.single && status != storage.StatusDead {
		s.c.Del(key)
		return
	}
	e.status = status
	s.set(key, e)
}

// Update sets the status of a key already cached, with the claim's end
// the store reports (erasure); keys not cached stay uncached.
func (s *Seen) Update(key string, status storage.Status, until time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.c.Get(key)
	if !ok {
		return
	}
	e.status, e.until = status, until
	s.set(key, e)
}

// Forget removes key: the store's answer changed in a way the cache does
// not follow (an operator's retry or replay queued the event again).
func (s *Seen) Forget(key string) {
	s.mu.Lock()
	s.c.Del(key)
	s.mu.Unlock()
}

// Wait blocks until pending writes are visible (tests).
func (s *Seen) Wait() { s.c.Wait() }

// Close stops the cache's goroutines.
func (s *Seen) Close() { s.c.Close() }
