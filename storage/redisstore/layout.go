package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
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
//
// The same field records the layout: "16 (layout 3)" for the lone
// delivery's payload kept in its job's hash (enqueue.go), "16 (layout 2)"
// for the claims of claims.go alone, "16" for layout 1. Each changes what
// a node of an earlier version would misread: layout 2 a claim's value (as
// an event id, a claim it should delete left for good), layout 3 a job
// without a payload record (dead-lettered as missing its payload). Such a
// node refuses the store (503 on ingest, no leases): one of layout 1 cannot
// parse the count, one of layout 2 reads a layout it does not know. The
// first Store of this version that checks a store of layout 1 or 2 with
// its count moves it to layout 3: what the earlier layouts wrote stays
// readable, nothing else is rewritten.

// layout2 and layout3 follow the partition count in the layout field of a
// store of that layout.
const (
	layout2 = " (layout 2)"
	layout3 = " (layout 3)"
)

// layoutScript records the partition count, in layout 3, if none is;
// moves a store of layout 1 or 2 with the count given to layout 3; and
// returns the recorded field. Recording it, it also sets the events
// index's marker: a store that starts with this version has its events
// indexed from the first (eventsindex.go).
//
//	KEYS: layout, events index marker
//	ARGV: partitions in layout 3, then in each earlier layout
var layoutScript = redis.NewScript(`
if redis.call('HSETNX', KEYS[1], 'partitions', ARGV[1]) == 1 then redis.call('SET', KEYS[2], '1') end
local v = redis.call('HGET', KEYS[1], 'partitions')
for i = 2, #ARGV do
	if v == ARGV[i] then
		redis.call('HSET', KEYS[1], 'partitions', ARGV[1])
		return ARGV[1]
	end
end
return v
`)

// parseLayout reads the layout field's partition count, in layout 1 or 2
// (of another count than the one given: layoutScript moves the others) or
// 3.
// Anything else is a layout of a later version, or no count at all.
func parseLayout(v string) (int, error) {
	count, rest := v, ""
	if i := strings.IndexByte(v, ' '); i >= 0 {
		count, rest = v[:i], v[i:]
	}
	n, err := strconv.Atoi(count)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("unreadable partition count %q", v)
	}
	if rest != "" && rest != layout2 && rest != layout3 {
		return 0, fmt.Errorf("layout %q was written by a later version of hookline: run it on every node sharing the store", v)
	}
	return n, nil
}

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
	n := strconv.Itoa(len(s.parts))
	v, err := s.eval(ctx, layoutScript, []string{s.layoutKey(), s.eventsIndexMarker()}, n+layout3, n, n+layout2)
	if err != nil {
		return unavailable(err)
	}
	str, _ := v.(string)
	stored, err := parseLayout(str)
	if err != nil {
		return unavailable(fmt.Errorf("%s: %w", s.layoutKey(), err))
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
