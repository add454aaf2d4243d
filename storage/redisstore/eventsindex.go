package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/hookline/hookline/storage"
)

// The events index: each partition's sorted set of the internal ids of
// the events it holds, every score 0, so that its members are in the
// order of the ids (time-ordered: UUIDv7), and ListEvents reads a page
// from where the last ended (ZREVRANGEBYLEX ... LIMIT) instead of every
// id of every queue:
//
//	{hookline:7}:events          ids of the partition's events
//	{hookline:meta}:events-index "1" once an index holds every event
//
// An event enters the index in the script that stores it, and leaves it
// with its last record: the last hash or DLQ entry of its deliveries, and
// its deliveries index with it (retention of jobs or of DLQ entries,
// erasure). A listing drops an id of which no delivery's hash or DLQ
// entry nor a fan-out record is left (dropGoneScript), with the deliveries
// index a node of an earlier version may have left behind. A store created by this version has
// the marker from the first (layoutScript). A store written before the
// index existed is indexed by Open in the background (IndexEvents), from
// the keys its events keep while they are stored; until one index was
// complete, ListEvents reads the queues as it did before (a store older
// than its recorded partition count gets the marker with it: its listings
// miss events until the scan is over, seconds). Open indexes
// again at each start: events that a node of an earlier version stored
// while the index existed (a rolling upgrade) enter it then, as does one
// such event whose fan-out record was expanded as the scan went by. An id
// whose event is gone without leaving the index (removed by such a node)
// is dropped by the listing that meets it. The scan also gives back the
// deliveries index of an event with a DLQ entry of a named destination,
// which such a node deletes with the event's last hash (restoreDeliveries).

// events is the key of p's events index.
func (p partition) events() string { return p.key("events") }

// eventsIndexMarker is the key saying that an index once held every event.
func (s *Store) eventsIndexMarker() string { return "{" + s.opts.Prefix + ":meta}:events-index" }

// eventsIndexState remembers that the index is complete (atomic: the
// listing and the indexing goroutine both read it).
type eventsIndexState struct{ ready atomic.Bool }

// eventsIndexed reports whether ListEvents may read the events index:
// this Store indexed every event, or the marker says a store did.
func (s *Store) eventsIndexed(ctx context.Context) bool {
	if s.evIndex.ready.Load() {
		return true
	}
	if n, err := s.c.Exists(ctx, s.eventsIndexMarker()).Result(); err == nil && n == 1 {
		s.evIndex.ready.Store(true)
		return true
	}
	return false
}

// indexScanCount is the COUNT of each SCAN of the indexing.
const indexScanCount = 1000

// IndexEvents enters every stored event in its partition's events index
// and then sets the marker: it reads every key of an event hash, a DLQ
// entry or a fan-out record under the store's prefix (SCAN of the
// database, filtered by MATCH, on every master of a Cluster: Redis is
// never blocked for long), which an event keeps while it is stored,
// whatever queue its deliveries move between meanwhile. Entering an event
// twice changes nothing; an event removed meanwhile may be entered again
// and is dropped by the first listing that meets it. A scan across a
// failover or a resharding (the server's run id, or the Cluster's slots,
// changed) may have missed keys: it fails, to be made again. It implements
// storage.EventIndexer (a tenant's erasure runs it first).
func (s *Store) IndexEvents(ctx context.Context) error {
	if err := s.CheckLayout(ctx); err != nil {
		return err // another partition count: the keys would be read as no partition's
	}
	n, err := s.c.Exists(ctx, s.idsRestoredMarker()).Result()
	if err != nil {
		return unavailable(err)
	}
	restoreIDs := n == 0
	index := func(ctx context.Context, c redis.Cmdable) error { return s.indexNode(ctx, c, restoreIDs) }
	if cc, ok := s.c.(*redis.ClusterClient); ok {
		err = indexCluster(ctx, cc, index)
	} else {
		err = index(ctx, s.c)
	}
	if err != nil {
		return unavailable(err)
	}
	if err := s.c.Set(ctx, s.eventsIndexMarker(), "1", 0).Err(); err != nil {
		return unavailable(err)
	}
	if restoreIDs {
		if err := s.c.Set(ctx, s.idsRestoredMarker(), "1", 0).Err(); err != nil {
			return unavailable(err)
		}
	}
	s.evIndex.ready.Store(true)
	return nil
}

// Interface guard
var _ storage.EventIndexer = (*Store)(nil)

// indexCluster runs index on every master of cc, and fails when the
// Cluster's slots moved meanwhile.
func indexCluster(ctx context.Context, cc *redis.ClusterClient, index func(context.Context, redis.Cmdable) error) error {
	before, err := cc.ClusterSlots(ctx).Result()
	if err != nil {
		return err
	}
	if err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return index(ctx, c) }); err != nil {
		return err
	}
	after, err := cc.ClusterSlots(ctx).Result()
	if err != nil {
		return err
	}
	if fmt.Sprint(slotOwners(before)) != fmt.Sprint(slotOwners(after)) {
		return errors.New("the Cluster's slots moved during the scan of its event keys")
	}
	return nil
}

// slotOwners is each slot range's master, in order.
func slotOwners(slots []redis.ClusterSlot) []string {
	out := make([]string, 0, len(slots))
	for _, sl := range slots {
		id := ""
		if len(sl.Nodes) > 0 {
			id = sl.Nodes[0].ID
		}
		out = append(out, fmt.Sprintf("%d-%d:%s", sl.Start, sl.End, id))
	}
	slices.Sort(out)
	return out
}

// indexNode enters the events of c's keys (indexKeys), and fails when c
// answered from another server at the end (a failover: a SCAN cursor is
// one server's).
func (s *Store) indexNode(ctx context.Context, c redis.Cmdable, restoreIDs bool) error {
	before, err := runID(ctx, c)
	if err != nil {
		return err
	}
	if err := s.indexKeys(ctx, c, restoreIDs); err != nil {
		return err
	}
	after, err := runID(ctx, c)
	if err != nil {
		return err
	}
	if before != after {
		return errors.New("the server changed during the scan of its event keys (a failover)")
	}
	return nil
}

// runID is the run_id of the server c answers from.
func runID(ctx context.Context, c redis.Cmdable) (string, error) {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return "", err
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
			return v, nil
		}
	}
	return "", errors.New("no run_id in INFO server")
}

// eventKinds are the kinds of key "{<prefix>:<n>}:<kind>:<id>" an event
// keeps while it is stored: a delivery's hash, a DLQ entry, a fan-out
// record.
var eventKinds = []string{":ev:", ":dlq:", ":fan:"}

// indexKeys enters in the events index the event of each key of
// eventKinds that c holds, gives back the deliveries indexes of the DLQ
// entries of named destinations (restoreDeliveries) and, with restoreIDs,
// the (source, event id) indexes of every entry (restoreIDs).
func (s *Store) indexKeys(ctx context.Context, c redis.Cmdable, restoreIDs bool) error {
	match := "{" + globEscape(s.opts.Prefix) + ":*}:*"
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx, cursor, match, indexScanCount).Result()
		if err != nil {
			return err
		}
		byPart := map[string][]any{}
		var named, entries []namedEntry
		for _, k := range keys {
			end := strings.IndexByte(k, '}')
			tag, rest := k[:end+1], k[end+1:]
			if end < 0 || s.partIndexOfTag(tag) < 0 {
				continue // another prefix the pattern matched
			}
			for _, kind := range eventKinds {
				if id, ok := strings.CutPrefix(rest, kind); ok && id != "" {
					ev := storage.EventIDOfDelivery(id)
					byPart[tag] = append(byPart[tag], ev)
					if kind == ":dlq:" {
						entries = append(entries, namedEntry{partition{tag: tag}, id})
						if ev != id {
							named = append(named, namedEntry{partition{tag: tag}, id})
						}
					}
					break
				}
			}
		}
		if err := s.restoreDeliveries(ctx, named); err != nil {
			return err
		}
		if restoreIDs {
			if err := s.restoreIDs(ctx, entries); err != nil {
				return err
			}
		}
		if len(byPart) > 0 {
			_, err := s.c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
				for tag, ids := range byPart {
					members := make([]redis.Z, len(ids))
					for i, id := range ids {
						members[i] = redis.Z{Member: id}
					}
					pipe.ZAdd(ctx, partition{tag: tag}.events(), members...)
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

// partIndexOfTag is the index of the partition whose hash tag is tag, or
// -1 when it is none of this store's.
func (s *Store) partIndexOfTag(tag string) int {
	for i, p := range s.parts {
		if p.tag == tag {
			return i
		}
	}
	return -1
}

// globEscape escapes the characters SCAN's MATCH reads as a pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// indexEventsLoop runs IndexEvents until it succeeds or ctx ends, waiting
// between tries (Redis down at start: the store still opens) and logging
// each failure (listings read the queues until an index is complete). A
// store of another partition count is not indexed: every use of it fails.
func (s *Store) indexEventsLoop(ctx context.Context) {
	wait := time.Second
	for {
		err := s.IndexEvents(ctx)
		if err == nil || ctx.Err() != nil {
			return
		}
		var le *LayoutError
		if errors.As(err, &le) {
			return
		}
		s.log.Warn("indexing the stored events failed; trying again", zap.Duration("in", wait), zap.Error(err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Minute)
	}
}
