package webhooks

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/hookline/hookline/dedupe"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/storagemodules"
	"github.com/hookline/hookline/storage"
)

// sharedStore is the state of one store that outlives config reloads
// (the old and new app instances hold it together, in storePool, as
// caddy-ratelimit pools one struct per zone): the lazily opened store of
// one backend key, its L1 cache of claimed event ids and the upstreams'
// circuit breakers of its deliveries.
type sharedStore struct {
	backend storagemodules.Backend
	// names are the stats' names counted apart (stats.go)
	names statsNames
	// seen is the L1 cache of claimed event ids (one per store: what one
	// store has seen says nothing about another's)
	seen *dedupe.Seen
	// breakers are the upstreams' circuit breakers: every config's
	// dispatcher on the store sees the same upstream state, and a reload
	// neither closes an open breaker nor splits its failure count
	breakers *delivery.Breakers

	mu     sync.Mutex
	store  atomic.Pointer[storageBox]
	closed bool // destructed: never reopen (a late caller gets ErrUnavailable)
}

type storageBox struct{ s storage.Store }

// newSharedStore is the shared state of backend's store, not yet opened;
// log is the breakers' logger.
func newSharedStore(backend storagemodules.Backend, log *zap.Logger) (*sharedStore, error) {
	seen, err := dedupe.NewSeen(0)
	if err != nil {
		return nil, err
	}
	return &sharedStore{backend: backend, seen: seen, breakers: delivery.NewBreakers(0, 0, log)}, nil
}

// get returns the open store, opening it on first use. A failed open is
// retried on the next call (the ingress answers 503 meanwhile).
func (p *sharedStore) get() (storage.Store, error) {
	if b := p.store.Load(); b != nil {
		return b.s, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if b := p.store.Load(); b != nil {
		return b.s, nil
	}
	if p.closed {
		return nil, fmt.Errorf("%w: store closed by a config change", storage.ErrUnavailable)
	}
	s, err := p.backend.Open()
	if err != nil {
		return nil, err
	}
	p.store.Store(&storageBox{s})
	return s, nil
}

// opened returns the store if it is open, without opening it.
func (p *sharedStore) opened() (storage.Store, bool) {
	if b := p.store.Load(); b != nil {
		return b.s, true
	}
	return nil, false
}

// Destruct implements caddy.Destructor: closes the store and its cache
// when the last config using them is gone.
func (p *sharedStore) Destruct() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.seen.Close()
	if b := p.store.Swap(nil); b != nil {
		return b.s.Close()
	}
	return nil
}

// seenRef holds an app's L1 cache so that Cleanup can take it away from
// late users (OnResult of workers still finishing after Stop) without a
// lock on their path: they load it once, Cleanup swaps in nil and waits
// for the users that loaded it before closing it.
type seenRef struct {
	p     atomic.Pointer[dedupe.Seen]
	users atomic.Int64
}

// seenReleaseWait bounds how long Cleanup waits for users of the cache.
const seenReleaseWait = time.Second

// load returns the cache, or nil once released.
func (r *seenRef) load() *dedupe.Seen {
	if r == nil {
		return nil
	}
	return r.p.Load()
}

// use calls f with the cache unless it was released; the cache is not
// closed while f runs.
func (r *seenRef) use(f func(*dedupe.Seen)) {
	if r == nil {
		return
	}
	r.users.Add(1)
	defer r.users.Add(-1)
	if s := r.p.Load(); s != nil {
		f(s)
	}
}

// release takes the cache away from new users and waits, at most wait,
// for those that hold it.
func (r *seenRef) release(wait time.Duration) {
	r.p.Store(nil)
	deadline := time.Now().Add(wait)
	for r.users.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
}

var storePool = caddy.NewUsagePool()

// Interface guard
var _ caddy.Destructor = (*sharedStore)(nil)
