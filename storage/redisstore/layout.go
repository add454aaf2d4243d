package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/storage"
)

// The layout. Where an event lives depends on the number of partitions
// (a hash of its key modulo the count), so a store must always be used
// with the count it was created with: with another, the events already
// queued sit in partitions nobody reads, or are looked for in the wrong
// one. The count is recorded in {<prefix>:meta}:layout on first use, and a
// Store configured with another count refuses to write or lease.
//
// A store written before the count was recorded gets the count of the
// first Store that uses it after the upgrade.

// layoutScript records the partition count if none is, and returns the
// recorded one. Recording it, it also sets the events index's marker: a
// store that starts with this version has its events indexed from the
// first (eventsindex.go).
//
//	KEYS: layout, events index marker
//	ARGV: partitions
var layoutScript = redis.NewScript(`
if redis.call('HSETNX', KEYS[1], 'partitions', ARGV[1]) == 1 then redis.call('SET', KEYS[2], '1') end
return redis.call('HGET', KEYS[1], 'partitions')
`)

// LayoutError says the store was created with another partition count
// than the one configured. It wraps storage.ErrUnavailable.
type LayoutError struct {
	Prefix     string
	Stored     int // the count the store was created with
	Configured int
}

func (e *LayoutError) Error() string {
	return fmt.Sprintf("redis store at %s was created with %d partitions; this config says %d: "+
		"set partitions %d (a store's partition count cannot change: the events already queued would be orphaned), "+
		"or use another key_prefix for a new store", e.Prefix, e.Stored, e.Configured, e.Stored)
}

// Unwrap makes errors.Is(err, storage.ErrUnavailable) hold.
func (e *LayoutError) Unwrap() error { return storage.ErrUnavailable }

// layoutState caches a successful check: one round trip per Store.
type layoutState struct{ ok atomic.Bool }

func (s *Store) layoutKey() string { return "{" + s.opts.Prefix + ":meta}:layout" }

// CheckLayout records the store's partition count on first use, or checks
// that it is the configured one, and migrates the store's lane queues
// (migrate) once: a *LayoutError when it is not (not
// cached: every later call checks again), ErrUnavailable when Redis cannot
// tell. Writes and leases call it; Open calls it to fail early.
func (s *Store) CheckLayout(ctx context.Context) error {
	if s.layout.ok.Load() {
		return nil
	}
	v, err := s.eval(ctx, layoutScript, []string{s.layoutKey(), s.eventsIndexMarker()}, len(s.parts))
	if err != nil {
		return unavailable(err)
	}
	str, _ := v.(string)
	stored, err := strconv.Atoi(str)
	if err != nil {
		return unavailable(fmt.Errorf("unreadable partition count %q in %s", str, s.layoutKey()))
	}
	if stored != len(s.parts) {
		return &LayoutError{Prefix: s.opts.Prefix, Stored: stored, Configured: len(s.parts)}
	}
	// before this Store's first write: a store of an earlier version gets
	// its lane queues now, a new one only its markers
	if err := s.migrate(ctx); err != nil {
		return err
	}
	s.layout.ok.Store(true)
	return nil
}

// Open wraps a connected client as New does, and checks the partition
// count at once (see CheckLayout), within ctx: a store created with
// another count is refused with a *LayoutError. When Redis cannot be
// reached the Store is returned all the same, and the check is made on
// first use. It then enters, in the background, every stored event in
// the events index (IndexEvents), trying again until it has while the
// Store is open.
func Open(ctx context.Context, c redis.UniversalClient, opts Options) (*Store, error) {
	s := New(c, opts)
	var le *LayoutError
	if err := s.CheckLayout(ctx); errors.As(err, &le) {
		s.Close()
		return nil, err
	}
	bg, stop := context.WithCancel(context.Background())
	s.stop = stop
	go s.indexEventsLoop(bg)
	return s, nil
}
