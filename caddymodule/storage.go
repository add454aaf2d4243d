package caddymodule

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded"
)

func init() {
	caddy.RegisterModule(EmbeddedStorage{})
}

// Backend is implemented by the guest modules in webhooks.storage. Key
// identifies the data the backend reaches (two configs with the same key
// share one open store across reloads); Open connects to it. Open is
// called lazily, on first use, never in Provision.
type Backend interface {
	Key() string
	Open() (storage.Store, error)
	// Describe names the backend for logs (no secrets).
	Describe() string
}

// EmbeddedStorage keeps events in a single bbolt file, fsynced before
// every acknowledgement. It is the default backend.
//
//	storage embedded [<path>]
//
// The default path is hookline/events.db under Caddy's data directory.
type EmbeddedStorage struct {
	// Path of the database file.
	Path string `json:"path,omitempty"`
}

// CaddyModule returns the Caddy module information.
func (EmbeddedStorage) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "webhooks.storage.embedded",
		New: func() caddy.Module { return new(EmbeddedStorage) },
	}
}

// Provision sets the default path and resolves placeholders in it.
func (s *EmbeddedStorage) Provision(caddy.Context) error {
	s.Path = caddy.NewReplacer().ReplaceAll(s.Path, "")
	if s.Path == "" {
		s.Path = filepath.Join(caddy.AppDataDir(), "hookline", "events.db")
	}
	abs, err := filepath.Abs(s.Path)
	if err != nil {
		return fmt.Errorf("embedded storage path: %v", err)
	}
	s.Path = abs
	return nil
}

// Key implements Backend.
func (s *EmbeddedStorage) Key() string { return "bolt:" + s.Path }

// Describe implements Backend.
func (s *EmbeddedStorage) Describe() string { return "embedded " + s.Path }

// Open implements Backend.
func (s *EmbeddedStorage) Open() (storage.Store, error) {
	return embedded.Open(s.Path, embedded.Options{})
}

// UnmarshalCaddyfile sets up the backend from Caddyfile tokens:
//
//	storage embedded [<path>]
func (s *EmbeddedStorage) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // "embedded"
	if d.NextArg() {
		s.Path = d.Val()
	}
	if d.NextArg() {
		return d.ArgErr()
	}
	if d.NextBlock(0) {
		return d.Errf("storage embedded takes no block")
	}
	return nil
}

// sharedStore is the pooled, lazily opened store of one backend key. It
// outlives config reloads: the old and new app instances hold it together.
type sharedStore struct {
	backend Backend
	mu      sync.Mutex
	store   atomic.Pointer[storageBox]
	closed  bool // destructed: never reopen (a late caller gets ErrUnavailable)
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

// Interface guards
var (
	_ caddy.Provisioner     = (*EmbeddedStorage)(nil)
	_ caddyfile.Unmarshaler = (*EmbeddedStorage)(nil)
	_ Backend               = (*EmbeddedStorage)(nil)
	_ caddy.Destructor      = (*sharedStore)(nil)
)
