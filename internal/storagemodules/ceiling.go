//go:build hookline_ceiling

package storagemodules

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/ceiling"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded"
)

func init() {
	caddy.RegisterModule(CeilingStorage{})
}

// CeilingStorage is a measuring instrument for load runs, not a store:
// the queue is kept in memory (package ceiling), or in Redis with the
// least work a Redis queue needs (ceiling.RedisQueue), in front of an
// embedded store, which keeps the rest (DLQ, stats, pauses). Events kept
// in memory are lost when Caddy stops. It exists only in a Caddy built
// with the build tag hookline_ceiling (scripts/bench/run CEILING=...).
// Caddyfile syntax: see UnmarshalCaddyfile.
type CeilingStorage struct {
	// Path of the embedded store's file behind the queue.
	Path string `json:"path,omitempty"`

	// Journal is the file each event and outcome is appended to, with an
	// fdatasync per round; empty: nothing is written for the queue.
	Journal string `json:"journal,omitempty"`

	// UnsyncedOutcomes appends outcomes to the journal without waiting
	// for an fdatasync.
	UnsyncedOutcomes bool `json:"unsynced_outcomes,omitempty"`

	// Redis is the address (host:port) of the redis-server the queue is
	// kept in instead of memory, under keys of the prefix "ceiling";
	// empty: in memory. It excludes a journal.
	Redis string `json:"redis,omitempty"`
}

// CaddyModule returns the Caddy module information.
func (CeilingStorage) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "webhooks.storage.ceiling",
		New: func() caddy.Module { return new(CeilingStorage) },
	}
}

// Provision resolves placeholders and makes the paths absolute.
func (s *CeilingStorage) Provision(caddy.Context) error {
	repl := caddy.NewReplacer()
	s.Path, s.Journal = repl.ReplaceAll(s.Path, ""), repl.ReplaceAll(s.Journal, "")
	s.Redis = repl.ReplaceAll(s.Redis, "")
	if s.Path == "" {
		return fmt.Errorf("storage ceiling: a path is required")
	}
	var err error
	if s.Path, err = filepath.Abs(s.Path); err != nil {
		return fmt.Errorf("storage ceiling path: %v", err)
	}
	if s.Journal != "" {
		if s.Journal, err = filepath.Abs(s.Journal); err != nil {
			return fmt.Errorf("storage ceiling journal: %v", err)
		}
	}
	return nil
}

// Key implements Backend.
func (s *CeilingStorage) Key() string { return "ceiling:" + s.Path }

// Describe implements Backend.
func (s *CeilingStorage) Describe() string {
	if s.Redis != "" {
		return "ceiling (the least Redis queue, at " + s.Redis + ") before embedded " + s.Path
	}
	return "ceiling (in-memory queue, not durable) before embedded " + s.Path
}

// Open implements Backend.
func (s *CeilingStorage) Open() (storage.Store, error) {
	st, err := embedded.Open(s.Path, embedded.Options{})
	if err != nil {
		return nil, err
	}
	if s.Redis != "" {
		c := redis.NewClient(&redis.Options{Addr: s.Redis})
		return ownedRedisQueue{ceiling.WrapRedis(st, c, "ceiling"), c}, nil
	}
	c, err := ceiling.Wrap(st, ceiling.Options{Journal: s.Journal, UnsyncedOutcomes: s.UnsyncedOutcomes})
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	return c, nil
}

// UnmarshalCaddyfile sets up the backend from Caddyfile tokens. Syntax:
//
//	storage ceiling <path> {
//		journal <file>
//		unsynced_outcomes
//		redis <host:port>
//	}
func (s *CeilingStorage) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // "ceiling"
	if !d.Args(&s.Path) {
		return d.ArgErr()
	}
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		switch d.Val() {
		case "journal":
			if !d.Args(&s.Journal) || d.NextArg() {
				return d.ArgErr()
			}
		case "redis":
			if !d.Args(&s.Redis) || d.NextArg() {
				return d.ArgErr()
			}
		case "unsynced_outcomes":
			if d.NextArg() {
				return d.ArgErr()
			}
			s.UnsyncedOutcomes = true
		default:
			return d.Errf("unknown storage ceiling option %q", d.Val())
		}
	}
	if s.UnsyncedOutcomes && s.Journal == "" {
		return d.Err("unsynced_outcomes needs a journal")
	}
	if s.Redis != "" && s.Journal != "" {
		return d.Err("a queue in Redis takes no journal")
	}
	return nil
}

// ownedRedisQueue closes its Redis client with the queue.
type ownedRedisQueue struct {
	*ceiling.RedisQueue
	c *redis.Client
}

// Close closes the queue, its store, and its client.
func (q ownedRedisQueue) Close() error {
	return errors.Join(q.RedisQueue.Close(), q.c.Close())
}

// Interface guards
var (
	_ caddy.Provisioner     = (*CeilingStorage)(nil)
	_ caddyfile.Unmarshaler = (*CeilingStorage)(nil)
	_ Backend               = (*CeilingStorage)(nil)
	_ storage.Store         = ownedRedisQueue{}
)
