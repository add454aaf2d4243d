package redisstore

import (
	"context"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/storage"
)

// The walk DLQList and ListDelivered share over each partition's time
// index (a sorted set scored by milliseconds): it examines members from a
// position on, reading a few small fields of each member's hash (never
// the JSON with the payload), at most a budget of them, and merges the
// partitions' matches into one order. A partition that stopped early
// (its share of the budget spent, or a page of matches found) bounds
// what the page can say: only members at or before the least advanced
// stop were examined in every partition, so the page ends there and its
// cursor goes on from there. Nothing is listed twice or skipped when
// members arrive meanwhile (they arrive at the newest end), and a cursor
// is a position, not an offset.

// listChunk is how many members of one partition a round reads.
const listChunk = 200

// indexWalk is one page's walk.
type indexWalk struct {
	index string // the sorted set of each partition: "dlqidx" or "done"
	desc  bool   // newest first
	// since and until bound the scores, inclusive, to the millisecond
	// (zero: unbounded).
	since, until time.Time
	// cursor is where an earlier page stopped (storage.ListCursor; "":
	// from the start): members at or before it are not examined.
	cursor string
	limit  int // matches wanted
	budget int // members examined at most, over all partitions
	// hash is the hash of a member.
	hash func(p partition, id string) string
	// match reports whether the member may be on the page from what its
	// hash keeps of it (indexEntry). It may say yes when the fields cannot
	// tell (a member written before they existed): the caller decides on
	// the member read in full. Nil: every member matches, no field is read.
	match func(id string, ix storage.IndexEntry, present, complete bool) bool
}

// indexFields are the hash fields a listing reads of each member: what a
// DLQ entry's hash and a finished job's keep of storage.IndexEntry.
var indexFields = []string{"src", "dst", "ty", "st", "tn"}

// indexEntry reads indexFields' values: present false when the member is
// gone (no status), complete false when it was written before the fields
// existed (the caller reads it in full). A member without a tenant has no
// "tn" field.
func indexEntry(v []any) (ix storage.IndexEntry, present, complete bool) {
	if len(v) != len(indexFields) || v[3] == nil {
		return ix, false, false
	}
	ix = storage.IndexEntry{Source: str(v[0]), Destination: str(v[1]), Type: str(v[2]), Status: str(v[3]), Tenant: str(v[4])}
	return ix, true, v[0] != nil && v[2] != nil
}

// indexHit is one member the walk matched.
type indexHit struct {
	p   partition
	pos storage.ListPosition
}

// partWalk is the walk's state in one partition.
type partWalk struct {
	p partition
	// last is the last member examined (or the cursor): the next are
	// beyond it.
	last    storage.ListPosition
	hasLast bool
	// bound is the score the next read starts at (inclusive) and ties
	// how many members at that score were read already (its offset).
	bound   int64
	ties    int64
	scanned int
	hits    []indexHit
	done    bool // nothing is left in the range
	stopped bool // stopped with members left: its budget or limit
}

// beyond reports whether a is past b in the walk's order.
func (w *indexWalk) beyond(a, b storage.ListPosition) bool {
	if w.desc {
		return a.Compare(b) < 0
	}
	return a.Compare(b) > 0
}

// walkIndex walks w over every partition: the hits of the page in the
// walk's order (at most w.limit), and the cursor the next page goes on
// from ("": the range is exhausted), or storage.ErrInvalidCursor.
func (s *Store) walkIndex(ctx context.Context, w indexWalk) (hits []indexHit, next string, err error) {
	after, hasAfter, err := storage.ParseListCursor(w.cursor)
	if err != nil {
		return nil, "", err
	}
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if !w.since.IsZero() {
		lo = ms(w.since)
	}
	if !w.until.IsZero() {
		hi = ms(w.until)
	}
	if lo > hi {
		return nil, "", nil
	}
	perPart := max(w.limit, (w.budget+len(s.parts)-1)/len(s.parts))
	walks := make([]*partWalk, len(s.parts))
	for i, p := range s.parts {
		pw := &partWalk{p: p, last: after, hasLast: hasAfter, bound: hi}
		if !w.desc {
			pw.bound = lo
		}
		if hasAfter {
			if w.desc {
				pw.bound = min(pw.bound, after.At)
			} else {
				pw.bound = max(pw.bound, after.At)
			}
		}
		walks[i] = pw
	}
	for {
		var active []*partWalk
		for _, pw := range walks {
			if !pw.done && !pw.stopped {
				active = append(active, pw)
			}
		}
		if len(active) == 0 {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, "", err
		}
		if err := s.walkRound(ctx, &w, active, perPart, lo, hi); err != nil {
			return nil, "", err
		}
	}
	// the page ends at the least advanced stop: every partition examined
	// everything up to it
	var end storage.ListPosition
	bounded := false
	for _, pw := range walks {
		if pw.stopped && (!bounded || w.beyond(end, pw.last)) {
			end, bounded = pw.last, true
		}
	}
	for _, pw := range walks {
		for _, h := range pw.hits {
			if !bounded || !w.beyond(h.pos, end) {
				hits = append(hits, h)
			}
		}
	}
	slices.SortFunc(hits, func(a, b indexHit) int {
		if w.desc {
			return b.pos.Compare(a.pos)
		}
		return a.pos.Compare(b.pos)
	})
	switch {
	case len(hits) > w.limit:
		hits = hits[:w.limit]
		return hits, storage.ListCursor(hits[w.limit-1].pos), nil
	case bounded:
		return hits, storage.ListCursor(end), nil
	}
	return hits, "", nil
}

// walkRound reads the next chunk of every active partition (one pipeline
// for the ranges, one for the fields) and examines it.
func (s *Store) walkRound(ctx context.Context, w *indexWalk, active []*partWalk, perPart int, lo, hi int64) error {
	ranges := make([]*redis.ZSliceCmd, len(active))
	counts := make([]int, len(active))
	_, err := s.c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, pw := range active {
			counts[i] = min(listChunk, perPart-pw.scanned)
			by := &redis.ZRangeBy{Offset: pw.ties, Count: int64(counts[i])}
			if w.desc {
				by.Max, by.Min = scoreArg(pw.bound), scoreArg(lo)
				ranges[i] = pipe.ZRevRangeByScoreWithScores(ctx, pw.p.key(w.index), by)
			} else {
				by.Min, by.Max = scoreArg(pw.bound), scoreArg(hi)
				ranges[i] = pipe.ZRangeByScoreWithScores(ctx, pw.p.key(w.index), by)
			}
		}
		return nil
	})
	if err != nil {
		return unavailable(err)
	}
	fields := make([][]*redis.SliceCmd, len(active))
	if w.match != nil {
		err = s.readPipelined(ctx, func(pipe redis.Pipeliner) error {
			for i, pw := range active {
				for _, z := range ranges[i].Val() {
					fields[i] = append(fields[i], pipe.HMGet(ctx, w.hash(pw.p, z.Member.(string)), indexFields...))
				}
			}
			return nil
		})
		if err != nil {
			return unavailable(err)
		}
	}
	for i, pw := range active {
		zs := ranges[i].Val()
		for j, z := range zs {
			pos := storage.ListPosition{At: int64(z.Score), ID: z.Member.(string)}
			if pos.At == pw.bound {
				pw.ties++
			} else {
				pw.bound, pw.ties = pos.At, 1
			}
			if pw.hasLast && !w.beyond(pos, pw.last) {
				continue // at or before the cursor, or read again after a change
			}
			pw.scanned++
			pw.last, pw.hasLast = pos, true
			ok := w.match == nil
			if !ok {
				ix, present, complete := indexEntry(fields[i][j].Val())
				ok = w.match(pos.ID, ix, present, complete)
			}
			if ok {
				pw.hits = append(pw.hits, indexHit{pw.p, pos})
				if len(pw.hits) == w.limit {
					pw.stopped = true
					break
				}
			}
			if pw.scanned == perPart {
				pw.stopped = true
				break
			}
		}
		if !pw.stopped && len(zs) < counts[i] {
			pw.done = true
		}
	}
	return nil
}

// scoreArg is a score bound as ZRANGEBYSCORE takes it.
func scoreArg(v int64) string {
	switch v {
	case math.MinInt64:
		return "-inf"
	case math.MaxInt64:
		return "+inf"
	}
	return strconv.FormatInt(v, 10)
}

// str is a field HMGET read ("" when absent).
func str(v any) string {
	s, _ := v.(string)
	return s
}
