package webhooks

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/caddyserver/caddy/v2"

	"github.com/hookline/hookline/internal/storagemodules"
	"github.com/hookline/hookline/storage"
)

// sharedStore is the pooled, lazily opened store of one backend key. It
// outlives config reloads: the old and new app instances hold it together.
type sharedStore struct {
	backend storagemodules.Backend
	// names are the stats' names counted apart (stats.go): like the
	// store, they outlive a reload
	names  statsNames
	mu     sync.Mutex
	store  atomic.Pointer[storageBox]
	closed bool // destructed: never reopen (a late caller gets ErrUnavailable)
}

type storageBox struct{ s storage.Store }

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

// Destruct implements caddy.Destructor: closes the store when the last
// config using it is gone.
func (p *sharedStore) Destruct() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if b := p.store.Swap(nil); b != nil {
		return b.s.Close()
	}
	return nil
}

var storePool = caddy.NewUsagePool()

// Interface guard
var _ caddy.Destructor = (*sharedStore)(nil)
