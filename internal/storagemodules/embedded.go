// Package storagemodules holds the webhooks.storage.* guest modules: the Caddy
// face (JSON config, Caddyfile, placeholders, pool key) of each storage
// backend, embedded and redis. The stores themselves are in
// storage/embedded and storage/redisstore.
package storagemodules

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"go.uber.org/zap"

	"github.com/hookline/hookline/internal/caddyfileopt"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded"
	"github.com/hookline/hookline/storage/embedded/kv"
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

// EmbeddedStorage keeps events in a directory on disk (Pebble's logs and
// tables), fsynced before every acknowledgement. It is the default
// backend. Caddyfile syntax: see UnmarshalCaddyfile.
type EmbeddedStorage struct {
	// Path of the store's directory, which may hold placeholders
	// (default: hookline/events.db under Caddy's data directory). A bbolt
	// file an earlier version kept there is moved into a directory at
	// that path when the store is first opened.
	Path string `json:"path,omitempty"`
	// CacheSize is the engine's block cache in bytes, which keeps the
	// store's most read blocks in memory (default 64 MiB). It is most of
	// what the store adds to Caddy's memory under load: with a million
	// events waiting, 16 MiB kept Caddy under 150 MiB and drained them a
	// fifth slower than 64 MiB. It applies when the store is opened, not
	// to a store a reload keeps open.
	CacheSize int64 `json:"cache_size,omitempty"`

	log *zap.Logger
}

// CaddyModule returns the Caddy module information.
func (EmbeddedStorage) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "webhooks.storage.embedded",
		New: func() caddy.Module { return new(EmbeddedStorage) },
	}
}

// Provision sets the default path and resolves placeholders in it.
func (s *EmbeddedStorage) Provision(ctx caddy.Context) error {
	s.log = ctx.Logger()
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
	log := s.log
	if log == nil {
		log = zap.NewNop()
	}
	return embedded.Open(s.Path, embedded.Options{BlockCache: s.CacheSize, OnMigrated: func(st kv.MigrateStats, took time.Duration) {
		log.Info("moved the embedded store from its bbolt file to the new engine",
			zap.String("path", s.Path), zap.Int("buckets", st.Buckets), zap.Int("keys", st.Keys), zap.Duration("took", took))
	}})
}

// UnmarshalCaddyfile sets up the backend from Caddyfile tokens. Syntax:
//
//	storage embedded [<path>] {   # default: hookline/events.db under Caddy's data dir
//		cache_size <size>         # default 64MiB
//	}
func (s *EmbeddedStorage) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // "embedded"
	if d.NextArg() {
		s.Path = d.Val()
	}
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		switch d.Val() {
		case "cache_size":
			n, err := caddyfileopt.Size(d, "", minCacheSize, maxCacheSize)
			if err != nil {
				return err
			}
			s.CacheSize = n
		default:
			return d.Errf("unrecognized storage embedded option %q", d.Val())
		}
	}
	return nil
}

// The bounds of CacheSize.
const (
	minCacheSize = 1 << 20
	maxCacheSize = 64 << 30
)

// Validate checks CacheSize (the JSON config's too).
func (s *EmbeddedStorage) Validate() error {
	if s.CacheSize != 0 && (s.CacheSize < minCacheSize || s.CacheSize > maxCacheSize) {
		return fmt.Errorf("embedded storage: cache_size %d out of range (1MiB to 64GiB)", s.CacheSize)
	}
	return nil
}

// Interface guards
var (
	_ caddy.Provisioner     = (*EmbeddedStorage)(nil)
	_ caddy.Validator       = (*EmbeddedStorage)(nil)
	_ caddyfile.Unmarshaler = (*EmbeddedStorage)(nil)
	_ Backend               = (*EmbeddedStorage)(nil)
)
