// Package dedupe tells events apart: where to find an event's ID (id_from
// rules) and its type (type_from rules, the same forms), and the
// in-process L1 cache of IDs already seen. The store is the truth: the cache only ever answers "seen", and a
// miss always asks the store.
package dedupe

import (
	"time"

	"github.com/dgraph-io/ristretto/v2"

	"github.com/hookline/hookline/storage"
)

// Seen is the L1 cache of (source, event id) pairs the store has claimed,
// with the last status this process knows for them.
type Seen struct {
	c *ristretto.Cache[string, string]
}

// NewSeen makes a cache holding about maxEntries keys.
func NewSeen(maxEntries int64) (*Seen, error) {
	if maxEntries <= 0 {
		maxEntries = 100_000
	}
	c, err := ristretto.NewCache(&ristretto.Config[string, string]{
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
func (s *Seen) Get(key string) (status string, ok bool) {
	return s.c.Get(key)
}

// Add records key as seen with status until ttl passes.
func (s *Seen) Add(key, status string, ttl time.Duration) {
	if ttl <= 0 {
		return
	}
	s.c.SetWithTTL(key, status, 1, ttl)
}

// Update changes the status of a key already cached, keeping it cached
// for ttl; keys not cached stay uncached.
func (s *Seen) Update(key, status string, ttl time.Duration) {
	if ttl <= 0 {
		s.c.Del(key) // the window is over: the store answers from now on
		return
	}
	if _, ok := s.c.Get(key); ok {
		s.c.SetWithTTL(key, status, 1, ttl)
	}
}

// Wait blocks until pending writes are visible (tests).
func (s *Seen) Wait() { s.c.Wait() }

// Close stops the cache's goroutines.
func (s *Seen) Close() { s.c.Close() }
