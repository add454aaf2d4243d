// Package spool keeps, on one node's disk, the events a shared store
// (Redis) could not take while it was unreachable, until they are moved
// into it: a local, fsynced, ordered queue of whole events, with the claim
// of each, so that a resend of a spooled event is known as a duplicate
// before the store is back.
//
// The spool is a directory of the embedded store's engine (Pebble, through
// storage/embedded/kv), locked by one process. An event is spooled with
// Put, which returns once the event is durable (concurrent Puts share one
// fsync); the events come back in the order they were spooled (Next) and
// go once the store has them (Remove). The spool stores the bytes it is
// given: an event sealed by the caller stays sealed.
//
// Layout (kv buckets):
//
//	events: sequence (8 bytes, big-endian) -> record (JSON)
//	claims: source \x00 event id           -> claim end (Unix ns, 8 bytes) | sequence (8 bytes)
//	meta:   "size"                         -> events (8 bytes) | bytes (8 bytes)
//
// Every spooled event has its claims key, which Lookup finds it by; only
// a deduplicated one's makes a resend a duplicate.
package spool

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookline/hookline/internal/groupcommit"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded/kv"
)

var (
	bEvents = []byte("events")
	bClaims = []byte("claims")
	bMeta   = []byte("meta")
	kSize   = []byte("size")
)

// Errors of the spool.
var (
	// ErrFull is Put's answer when the event would take the spool past
	// its MaxSize. It wraps storage.ErrUnavailable: the ingress answers
	// 503, as it would without a spool.
	ErrFull = fmt.Errorf("%w: spool full", storage.ErrUnavailable)
	// ErrClosed is the answer of a closed spool.
	ErrClosed = fmt.Errorf("%w: spool closed", storage.ErrUnavailable)
)

// DefaultMaxSize is MaxSize when Options leave it zero: 1 GiB.
const DefaultMaxSize = 1 << 30

// Options tune Open.
type Options struct {
	// MaxSize caps the bytes of the events spooled (their records as
	// stored); Put answers ErrFull beyond it. Default DefaultMaxSize.
	MaxSize int64
	// LockTimeout bounds the wait for the directory's lock while another
	// process holds it; zero tries once.
	LockTimeout time.Duration
	// Now replaces time.Now (tests).
	Now func() time.Time
}

// Spool is an open spool directory. Its methods are safe for concurrent
// use.
type Spool struct {
	db   *kv.DB
	dir  string
	max  int64
	now  func() time.Time
	b    *groupcommit.Batcher[*put, putResult]
	size struct {
		events, bytes atomic.Int64
	}
	// wmu orders the writes (a round of Puts, a Remove) with the updates
	// of size and oldest that follow each.
	wmu sync.Mutex
	// oldest is the spooled time of the first event waiting (zero: none).
	mu     sync.Mutex
	oldest time.Time
	closed sync.Once
	// earlier is set while events an earlier run spooled, found at Open,
	// are not yet reported (takeEarlier)
	earlier atomic.Bool
}

// Stats is what a spool holds.
type Stats struct {
	// Events is the number of events spooled and not yet removed.
	Events int64 `json:"events"`
	// Bytes is their size as stored.
	Bytes int64 `json:"bytes"`
	// Oldest is when the first of them was spooled (zero: none).
	Oldest time.Time `json:"oldest,omitzero"`
}

// Open opens (creating it if needed) the spool in directory dir. A
// directory another process (or another open Spool) holds is refused
// with an error naming it.
func Open(dir string, opts Options) (*Spool, error) {
	if opts.MaxSize <= 0 {
		opts.MaxSize = DefaultMaxSize
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	// a small cache: the spool reads each event once, in order
	db, err := kv.Open(dir, kv.Options{LockTimeout: opts.LockTimeout, BlockCache: 4 << 20, MemTable: 4 << 20})
	if err != nil {
		return nil, fmt.Errorf("spool %s: %w", dir, err)
	}
	s := &Spool{db: db, dir: dir, max: opts.MaxSize, now: opts.Now}
	err = db.Update(func(tx *kv.Tx) error {
		for _, name := range [][]byte{bEvents, bClaims, bMeta} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = db.Pin(bEvents, bClaims, bMeta)
	}
	if err == nil {
		err = s.load()
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("spool %s: %w", dir, err)
	}
	s.earlier.Store(s.size.events.Load() > 0)
	s.b = groupcommit.New(s.commit, groupcommit.Options[*put]{
		MaxBatch: 256,
		Closed:   ErrClosed,
		Recover:  func(v any) error { return storage.Recovered(v) },
		Linger:   500 * time.Microsecond,
	})
	return s, nil
}

// takeEarlier reports, once per Open, whether the spool held events when
// it was opened: events an earlier run spooled.
func (s *Spool) takeEarlier() bool { return s.earlier.Swap(false) }

// load reads the size and the oldest event's time.
func (s *Spool) load() error {
	return s.db.View(func(tx *kv.Tx) error {
		events, bytes := sizeOf(tx)
		s.size.events.Store(events)
		s.size.bytes.Store(bytes)
		_, v := tx.Bucket(bEvents).Cursor().First()
		if v != nil {
			r, err := decode(v)
			if err != nil {
				return err
			}
			s.oldest = r.SpooledAt
		}
		return nil
	})
}

// Dir is the spool's directory.
func (s *Spool) Dir() string { return s.dir }

// Stats reports what the spool holds, from memory.
func (s *Spool) Stats() Stats {
	s.mu.Lock()
	oldest := s.oldest
	s.mu.Unlock()
	return Stats{Events: s.size.events.Load(), Bytes: s.size.bytes.Load(), Oldest: oldest}
}

// Empty reports whether no event is spooled.
func (s *Spool) Empty() bool { return s.size.events.Load() == 0 }

// Close waits for the Puts under way and closes the spool; what it holds
// stays on disk for the next Open.
func (s *Spool) Close() error {
	var err error
	s.closed.Do(func() {
		s.b.Close()
		err = s.db.Close()
	})
	return err
}

// sizeOf reads the size key: events and bytes.
func sizeOf(tx *kv.Tx) (events, bytes int64) {
	v := tx.Bucket(bMeta).Get(kSize)
	if len(v) != 16 {
		return 0, 0
	}
	return int64(binary.BigEndian.Uint64(v)), int64(binary.BigEndian.Uint64(v[8:]))
}

// addSize moves the size key by events and bytes.
func addSize(tx *kv.Tx, events, bytes int64) error {
	e, b := sizeOf(tx)
	v := binary.BigEndian.AppendUint64(nil, uint64(e+events))
	v = binary.BigEndian.AppendUint64(v, uint64(b+bytes))
	return tx.Bucket(bMeta).Put(kSize, v)
}

// seqKey is the key of sequence n in bEvents.
func seqKey(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

// errCorrupt is a record that does not decode.
var errCorrupt = errors.New("spool: record does not decode")
