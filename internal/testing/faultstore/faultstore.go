// Package faultstore is a storage backend for end-to-end tests through a
// real Caddy: the embedded store wrapped in a storagetest.Faulty, which a
// test reaches by name (Get) to inject errors, stalls and lost replies
// while Caddy serves. Import it (blank) from tests only; never build it
// into a binary.
//
//	webhooks {
//		storage faultstore <name> <path>
//	}
package faultstore

import (
	"fmt"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/hookline/hookline/internal/storagemodules"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/storagetest"
)

func init() {
	caddy.RegisterModule(Storage{})
}

// Storage is the webhooks.storage.faultstore module: the embedded backend
// (its path handling and opening are EmbeddedStorage's) plus a name.
// (The ingress's own tests register webhooks.storage.faulty, hence the
// name.)
type Storage struct {
	// Name registers the open store for Get.
	Name string `json:"name"`
	// EmbeddedStorage is the store under the faults; its path is
	// required here.
	storagemodules.EmbeddedStorage
}

// CaddyModule returns the Caddy module information.
func (Storage) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "webhooks.storage.faultstore",
		New: func() caddy.Module { return new(Storage) },
	}
}

// Provision checks the settings and provisions the embedded store's
// settings (placeholders, absolute path).
func (s *Storage) Provision(ctx caddy.Context) error {
	if s.Name == "" || s.Path == "" {
		return fmt.Errorf("storage faultstore: name and path are required")
	}
	return s.EmbeddedStorage.Provision(ctx)
}

// Key implements storagemodules.Backend.
func (s *Storage) Key() string { return "faultstore:" + s.Name + ":" + s.Path }

// Describe implements storagemodules.Backend.
func (s *Storage) Describe() string { return "faultstore " + s.Name + " " + s.Path }

// Open implements storagemodules.Backend: it opens the embedded store, wraps
// it and registers the wrapper under Name (replacing any earlier one).
func (s *Storage) Open() (storage.Store, error) {
	st, err := s.EmbeddedStorage.Open()
	if err != nil {
		return nil, err
	}
	r := &registered{Faulty: storagetest.NewFaulty(st), name: s.Name}
	mu.Lock()
	stores[s.Name] = r
	mu.Unlock()
	cond.Broadcast()
	return r, nil
}

// UnmarshalCaddyfile sets up the backend from Caddyfile tokens. Syntax:
//
//	storage faultstore <name> <path>
func (s *Storage) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // "faultstore"
	if !d.AllArgs(&s.Name, &s.Path) {
		return d.ArgErr()
	}
	return nil
}

// registered unregisters itself when closed.
type registered struct {
	*storagetest.Faulty
	name string
}

func (r *registered) Close() error {
	mu.Lock()
	if stores[r.name] == r {
		delete(stores, r.name)
	}
	mu.Unlock()
	return r.Faulty.Close()
}

var (
	mu     sync.Mutex
	cond   = sync.NewCond(&mu)
	stores = map[string]*registered{}
)

// Get returns the open store registered under name, waiting up to
// timeout for Caddy to open it.
func Get(name string, timeout time.Duration) (*storagetest.Faulty, error) {
	deadline := time.Now().Add(timeout)
	timer := time.AfterFunc(timeout, cond.Broadcast)
	defer timer.Stop()
	mu.Lock()
	defer mu.Unlock()
	for {
		if r, ok := stores[name]; ok {
			return r.Faulty, nil
		}
		if !time.Now().Before(deadline) {
			return nil, fmt.Errorf("no faultstore %q opened within %v", name, timeout)
		}
		cond.Wait()
	}
}

// Interface guards
var (
	_ caddy.Provisioner      = (*Storage)(nil)
	_ caddyfile.Unmarshaler  = (*Storage)(nil)
	_ storagemodules.Backend = (*Storage)(nil)
)
