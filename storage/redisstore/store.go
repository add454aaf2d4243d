// Package redisstore is hookline's shared store on Redis (single node,
// Sentinel or Cluster, through go-redis's UniversalClient), for several
// Caddy instances sharing the work.
//
// Key space. Every key carries a hash tag naming one of Partitions
// partitions, {<prefix>:<p>}, so that each Lua script touches one Cluster
// slot and runs atomically, while the partitions spread load over the
// slots (and so over the masters) of a cluster:
//
//	{hookline:7}:claim:<claim key>             id NUL window end ms NUL cleanups, while the event is kept (storage.ClaimKey, claims.go)
//	{hookline:7}:claimcut                      hash: the count of Cleanups (seq), the latest one's time (ms) (claims.go)
//	{hookline:7}:ids:<claim key>               id, while the event is kept (layout 1's claims only)
//	{hookline:7}:ev:<id>                       hash: event JSON, attempts, status, due, lease; pl: its payload key, or pb: a lone delivery's payload
//	{hookline:7}:pl:<event id>                 payload shared by an event's deliveries (storage.EncodePayload); a lone delivery's before layout 3
//	{hookline:7}:q:<lane>                      zset id -> due ms: queued and leased jobs of a lane (today a source)
//	{hookline:7}:lanes                         set of the partition's lanes
//	{hookline:pace:<lane>}                     a lane's pace (GCRA time, microseconds), shared by all nodes
//	{hookline:7}:claimexp                      zset claim -> expiry ms (cleanup; layout 1's claims only)
//	{hookline:7}:inflight                      set of leased ids
//	{hookline:7}:done                          zset id -> finished ms (retention, replay listing: the ev hash's src, dst, ty, st)
//	{hookline:7}:dlq:<id>                      hash: entry JSON, status, created ms, src, dst, ty (listing filters)
//	{hookline:7}:dlqidx                        zset id -> created ms
//	{hookline:7}:dlqopen                       set of pending/investigating ids
//	{hookline:7}:chain:<chain>                 list of the ids of an ordered chain (order.go)
//	{hookline:7}:waiting                       hash id -> lane: chained jobs behind their head
//	{hookline:7}:dests:<id>                    an event's deliveries index (storage.EncodeDestinations)
//	{hookline:7}:erased:<id>                   tombstone of an erased event, with its kept claim's TTL (erase.go)
//	{hookline:7}:fan                           zset event id -> due ms: events stored as a fan-out record (fanout.go)
//	{hookline:7}:fan:<id>                      string: an event's deliveries, payload and index, until Lease expands them (fanout.go)
//
// An event's partition is a hash of (source, event id), so the claim and
// the job it creates are in the same slot and claim-and-enqueue is one
// script; an event with ordered deliveries is placed by its order key
// instead (orderPlacement), with its chains. Times are the callers' clocks (milliseconds): keep nodes in NTP sync.
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/hookline/hookline/storage"
)

// Defaults.
const (
	DefaultPrefix     = "hookline"
	DefaultPartitions = 16
)

// Options configure a Store.
type Options struct {
	// Prefix of every key (default "hookline").
	Prefix string
	// Partitions is the number of hash-tagged partitions (default 16). It
	// must not change while events are stored.
	Partitions int
	// MinReplicas, when > 0, makes every acknowledged write wait (WAIT)
	// until that many replicas have it, up to WaitTimeout; fewer is a
	// failure (the ingress answers 503).
	MinReplicas int
	WaitTimeout time.Duration
	// Now replaces time.Now wherever the store reads the clock itself
	// (tests); default time.Now.
	Now func() time.Time
	// Log is where the store's background work (Open's indexing) reports
	// its failures; default nowhere.
	Log *zap.Logger
}

// Store is the Redis-backed storage.Store.
type Store struct {
	c        redis.UniversalClient
	opts     Options
	now      func() time.Time
	parts    []partition
	enqueues *batcher
	// fanEnqueues sends the enqueues of fan-out records (fanout.go)
	fanEnqueues *batcher
	finishes    *batcher
	// direct stores every event in the usual form, never as a fan-out
	// record (tests comparing the two forms)
	direct bool
	layout layoutState
	// window decides which partitions a Lease peeks (window.go)
	window *window
	// turns keeps the lanes' shares taking turns across this node's leases
	turns storage.Turns

	migrateMu sync.Mutex
	migrated  atomic.Bool

	// evIndex says whether the events index is complete (eventsindex.go)
	evIndex eventsIndexState
	// stop ends the store's background work (Open's indexing)
	stop context.CancelFunc
	log  *zap.Logger
}

// Interface guard
var _ storage.Store = (*Store)(nil)

type partition struct {
	tag string // "{prefix:n}"
}

func (p partition) key(kind string) string      { return p.tag + ":" + kind }
func (p partition) ev(id string) string         { return p.tag + ":ev:" + id }
func (p partition) evPrefix() string            { return p.tag + ":ev:" }
func (p partition) dlqEntry(id string) string   { return p.tag + ":dlq:" + id }
func (p partition) claim(ck string) string      { return p.tag + ":claim:" + ck }
func (p partition) ids(ck string) string        { return p.tag + ":ids:" + ck }
func (p partition) lanePrefix() string          { return p.tag + ":q:" }
func (p partition) deliveries(id string) string { return p.tag + ":dests:" + id }
func (p partition) lane(lane string) string     { return p.tag + ":q:" + lane }
func (p partition) payload(id string) string    { return p.tag + ":pl:" + id }

// New wraps a connected client. Close closes the client.
func New(c redis.UniversalClient, opts Options) *Store {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if opts.Partitions <= 0 {
		opts.Partitions = DefaultPartitions
	}
	if opts.WaitTimeout <= 0 {
		opts.WaitTimeout = time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	s := &Store{c: c, opts: opts, now: opts.Now, log: opts.Log, window: newWindow()}
	s.enqueues = newBatcher(s, enqueueScript)
	s.fanEnqueues = newBatcher(s, fanEnqueueScript)
	s.finishes = newManyBatcher(s, finishManyScript)
	for i := range opts.Partitions {
		s.parts = append(s.parts, partition{tag: "{" + opts.Prefix + ":" + strconv.Itoa(i) + "}"})
	}
	return s
}

// Close stops the batchers and the background work, and closes the
// client.
func (s *Store) Close() error {
	if s.stop != nil {
		s.stop()
	}
	s.enqueues.close()
	s.fanEnqueues.close()
	s.finishes.close()
	return s.c.Close()
}

func (s *Store) partitionOf(key string) partition { return s.parts[s.partIndexOf(key)] }

// partIndexOf is the index in s.parts of key's partition.
func (s *Store) partIndexOf(key string) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(len(s.parts)))
}

// partitionForEvent is where an event, its claim and all its deliveries
// live (ev may be a delivery's job): by its order key with ordered
// deliveries (orderPlacement: its chains are there), else by its claim
// key; an event without a provider id lives by its own internal id
// (storage.EventIDOfDelivery). Lookups by (source, event id) or by id that
// do not find an event where its claim key or id place it ask every
// partition, so an ordered event is found wherever it lives.
func (s *Store) partitionForEvent(ev *storage.Event) partition {
	return s.parts[s.partIndexForEvent(ev)]
}

// partIndexForEvent is the index in s.parts of partitionForEvent(ev).
func (s *Store) partIndexForEvent(ev *storage.Event) int {
	if key, _ := storage.OrderKeyOf(ev); key != "" {
		return s.partIndexOf(orderPlacement(ev.Source, key))
	}
	if ev.Dedupe {
		return s.partIndexOf(storage.ClaimKey(ev.Source, ev.EventID))
	}
	return s.partIndexOf(storage.EventIDOfDelivery(ev.ID))
}

func unavailable(err error) error {
	if err == nil || errors.Is(err, storage.ErrUnavailable) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %v", storage.ErrUnavailable, err)
	}
	return fmt.Errorf("%w: redis: %v", storage.ErrUnavailable, err)
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time {
	if v <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(v)
}

// PartitionKeys returns one key of each partition (tests, diagnostics: which
// slot and node a partition lives on).
func (s *Store) PartitionKeys() []string {
	keys := make([]string, len(s.parts))
	for i, p := range s.parts {
		keys[i] = p.key("lanes")
	}
	return keys
}

// The Lua scripts. Every key a script touches carries the same hash tag
// (its partition), so each script runs on one Cluster node, atomically.
// Keys built inside a script (an event's hash from its id) share the tag of
// the declared keys, as queues on Redis Cluster commonly do. Each script
// sits beside the method that runs it, with its KEYS/ARGV contract.

// run runs a writing script; with MinReplicas it also waits for replicas.
// WAIT must run on the connection of the write, so both go in one pipeline.
func (s *Store) run(ctx context.Context, p partition, sc *redis.Script, keys []string, args ...any) (any, error) {
	if err := s.CheckLayout(ctx); err != nil {
		return nil, err
	}
	if s.opts.MinReplicas <= 0 {
		return s.eval(ctx, sc, keys, args...) // at most once, unless retryable
	}
	// make sure the script is cached, then EVALSHA + WAIT on one connection
	if err := sc.Load(ctx, s.c).Err(); err != nil {
		return nil, err
	}
	var evalCmd *redis.Cmd
	var waitCmd *redis.Cmd
	_, err := s.c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		evalCmd = evalSha(ctx, pipe, sc, keys, args)
		waitCmd = pipe.Do(ctx, "WAIT", s.opts.MinReplicas, s.opts.WaitTimeout.Milliseconds())
		return nil
	})
	if err != nil {
		return nil, err
	}
	if n, _ := waitCmd.Int64(); n < int64(s.opts.MinReplicas) {
		return nil, fmt.Errorf("write reached %d replicas, %d required", n, s.opts.MinReplicas)
	}
	return evalCmd.Result()
}
