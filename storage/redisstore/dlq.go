package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/storage"
)

// DLQList implements storage.Store: the DLQ index of every partition is
// walked newest first from the cursor or f.Until (walkIndex), filtering on
// the entries' small fields (src, dst, ty, st); only the entries on the
// page are read in full.
func (s *Store) DLQList(ctx context.Context, f storage.DLQFilter) (storage.DLQPage, error) {
	page := storage.DLQPage{Entries: []storage.DLQEntry{}}
	untimed := f // the scores bound the time, the entry read in full decides
	untimed.Since, untimed.Until = time.Time{}, time.Time{}
	w := indexWalk{index: "dlqidx", desc: true, since: f.Since, until: f.Until, cursor: f.Cursor,
		limit: f.EffectiveLimit(), budget: f.ScanBudget(), hash: partition.dlqEntry,
		match: func(_ string, ix storage.IndexEntry, present, complete bool) bool {
			return present && (!complete || untimed.MatchesIndex(ix, time.Time{}))
		}}
	if untimed == (storage.DLQFilter{Limit: f.Limit, Cursor: f.Cursor}) {
		w.match = nil // every entry matches: no field to read
	}
	hits, next, err := s.walkIndex(ctx, w)
	if err != nil {
		return page, err
	}
	cmds := make([]*redis.StringCmd, len(hits))
	err = s.readPipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, h := range hits {
			cmds[i] = pipe.HGet(ctx, h.p.dlqEntry(h.pos.ID), "json")
		}
		return nil
	})
	if err != nil {
		return page, unavailable(err)
	}
	var parts []partition
	for i, h := range hits {
		var e storage.DLQEntry
		if json.Unmarshal([]byte(cmds[i].Val()), &e) != nil || !f.Matches(&e) {
			continue // removed meanwhile, or not a match once read in full
		}
		e.Payload, e.Headers = nil, nil
		page.Entries = append(page.Entries, e)
		parts = append(parts, h.p)
	}
	page.NextCursor = next
	if err := s.fillWaiting(ctx, page.Entries, func(i int) partition { return parts[i] }); err != nil {
		return storage.DLQPage{Entries: []storage.DLQEntry{}}, err
	}
	return page, nil
}

// DLQGet implements storage.Store.
func (s *Store) DLQGet(ctx context.Context, id string) (*storage.DLQEntry, error) {
	p, e, err := s.findEntry(ctx, id)
	if err != nil {
		return nil, err
	}
	one := []storage.DLQEntry{*e}
	if err := s.fillWaiting(ctx, one, func(int) partition { return p }); err != nil {
		return nil, err
	}
	return &one[0], nil
}

// recountDLQ is DLQCounts counted from the entries (Recount): two small
// fields of every entry.
func (s *Store) recountDLQ(ctx context.Context) (map[string]map[storage.DLQStatus]int, error) {
	out := map[string]map[storage.DLQStatus]int{}
	err := s.scanFields(ctx, "dlqidx", partition.dlqEntry, []string{"src", "st"}, func(p partition, id string, v []any) {
		if v[1] == nil {
			return // removed meanwhile
		}
		src, _ := v[0].(string)
		st, _ := v[1].(string)
		if src == "" { // written before the src field existed
			e, err := s.getEntry(ctx, p, id)
			if err != nil {
				return
			}
			src = e.Source
		}
		if out[src] == nil {
			out[src] = map[storage.DLQStatus]int{}
		}
		out[src][storage.DLQStatus(st)]++
	})
	return out, err
}

// scanFields reads the given hash fields of every member of each
// partition's sorted set index (e.g. "due"), 500 per round trip, calling fn
// with the values (nil where absent). Meant for operator views and metrics.
func (s *Store) scanFields(ctx context.Context, index string, hashKey func(partition, string) string,
	fields []string, fn func(p partition, id string, vals []any)) error {
	for _, p := range s.parts {
		ids, err := s.c.ZRange(ctx, p.key(index), 0, -1).Result()
		if err != nil {
			return unavailable(err)
		}
		for start := 0; start < len(ids); start += 500 {
			chunk := ids[start:min(start+500, len(ids))]
			cmds := make([]*redis.SliceCmd, len(chunk))
			err := s.readPipelined(ctx, func(pipe redis.Pipeliner) error {
				for i, id := range chunk {
					cmds[i] = pipe.HMGet(ctx, hashKey(p, id), fields...)
				}
				return nil
			})
			if err != nil {
				return unavailable(err)
			}
			for i, c := range cmds {
				if v := c.Val(); len(v) == len(fields) {
					fn(p, chunk[i], v)
				}
			}
		}
	}
	return nil
}

// getEntry reads a DLQ entry; storage.ErrDLQNotFound when absent.
func (s *Store) getEntry(ctx context.Context, p partition, id string) (*storage.DLQEntry, error) {
	v, err := s.c.HGet(ctx, p.dlqEntry(id), "json").Result()
	if errors.Is(err, redis.Nil) {
		return nil, storage.ErrDLQNotFound
	}
	if err != nil {
		return nil, err
	}
	e := new(storage.DLQEntry)
	if err := json.Unmarshal([]byte(v), e); err != nil {
		return nil, fmt.Errorf("decoding dlq entry %s: %v", id, err)
	}
	return e, nil
}

// findEntry locates a DLQ entry by id: the partition is not derivable from
// the id alone, so all partitions are asked in one pipeline.
func (s *Store) findEntry(ctx context.Context, id string) (partition, *storage.DLQEntry, error) {
	p, e, _, err := s.findEntryRaw(ctx, id)
	return p, e, err
}

// findEntryRaw is findEntry, with the entry's JSON as stored: the scripts
// that write an entry back compare it with what is stored then
// (entryChanged).
func (s *Store) findEntryRaw(ctx context.Context, id string) (partition, *storage.DLQEntry, string, error) {
	cmds := make([]*redis.StringCmd, len(s.parts))
	err := s.readPipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, p := range s.parts {
			cmds[i] = pipe.HGet(ctx, p.dlqEntry(id), "json")
		}
		return nil
	})
	if err != nil {
		return partition{}, nil, "", unavailable(err)
	}
	for i, c := range cmds {
		if v, err := c.Result(); err == nil {
			e := new(storage.DLQEntry)
			if err := json.Unmarshal([]byte(v), e); err != nil {
				return partition{}, nil, "", unavailable(fmt.Errorf("decoding dlq entry %s: %v", id, err))
			}
			return s.parts[i], e, v, nil
		}
	}
	return partition{}, nil, "", storage.ErrDLQNotFound
}

// entryRetries bounds how often an operator's change to a DLQ entry reads
// it again when it changed between its read and its script (a rekey
// re-sealed it, another node changed it).
const entryRetries = 5

// entryChanged is a DLQ script's answer when the entry's JSON is no
// longer the one its caller read.
const entryChanged = -2

// retryChanged runs op, a read of a DLQ entry and the script writing it
// back, again while the script answers entryChanged.
func retryChanged(op func() (any, error)) error {
	for range entryRetries {
		v, err := op()
		if err != nil {
			return err
		}
		if n, _ := v.(int64); n != entryChanged {
			return scriptStatus(v)
		}
	}
	return fmt.Errorf("%w: the entry kept changing", storage.ErrUnavailable)
}

// DLQRetry implements storage.Store.
func (s *Store) DLQRetry(ctx context.Context, id string, due time.Time) error {
	return retryChanged(func() (any, error) { return s.dlqRetry(ctx, id, due) })
}

func (s *Store) dlqRetry(ctx context.Context, id string, due time.Time) (any, error) {
	now := s.now()
	p, e, raw, err := s.findEntryRaw(ctx, id)
	if err != nil {
		return nil, err
	}
	// decided here on what was read, and again by the script on what is
	// stored (it may have changed since)
	if err := e.Transition(storage.DLQRetried, "", now); err != nil {
		return nil, err
	}
	var stored *storage.Event
	if h, err := s.getEvent(ctx, p, id); err != nil {
		return nil, unavailable(err)
	} else if h != nil {
		stored = &h.ev
	}
	ev := storage.RetryEvent(stored, e)
	evJSON, _ := json.Marshal(ev)
	attJSON, _ := json.Marshal(e.Attempts)
	entryJSON, _ := json.Marshal(e)
	ck := ""
	if ev.Dedupe {
		ck = storage.ClaimKey(ev.Source, ev.EventID)
	}
	lane := storage.LaneOf(&ev)
	args := []any{id, ms(storage.RequeueDue(due, now)), entryJSON, evJSON, attJSON, len(e.Attempts), ck, e.Source, lane,
		string(e.Status), flag(e.Status.Open()), raw}
	v, err := s.run(ctx, p, dlqRetryScript,
		[]string{p.dlqEntry(id), p.key("dlqopen"), p.ev(id), p.key("done"), p.lane(lane), p.key("lanes")},
		append(args, refusedFrom(storage.DLQRetried)...)...)
	if err != nil {
		return nil, unavailable(err)
	}
	return v, nil
}

// dlqRetryScript re-enqueues a DLQ entry's event with a fresh budget. The
// entry statuses it refuses are storage.DLQRefusedFrom(retried), passed by the
// caller. It re-enqueues only a dead event (or one whose record is gone):
// storage.CheckRetryEvent's rule, repeated here to hold atomically
// (TestDLQRetryEventLuaAgreesWithGo keeps the two in step). The event
// re-enqueued has the entry's own copy of the payload (storage.OwnPayload):
// it no longer reads a payload record its event's deliveries share, nor
// the payload its hash kept.
//
//	KEYS: dlq entry, dlq open, event hash, done, lane queue, lanes
//	ARGV: id, due ms, entry JSON (retried), event JSON, attempts JSON, round start,
//	      claim key, source, lane, entry status (retried), entry open (1|0),
//	      the entry JSON read, refused entry statuses...
//	returns 1, 0 (no entry), -1 (conflict) or -2 (the entry changed since
//	it was read: read it again, entryChanged)
var dlqRetryScript = redis.NewScript(luaCounts + `
local st = redis.call('HGET', KEYS[1], 'st')
if not st then return 0 end
if redis.call('HGET', KEYS[1], 'json') ~= ARGV[12] then return -2 end
for i = 13, #ARGV do
	if st == ARGV[i] then return -1 end
end
local est = redis.call('HGET', KEYS[3], 'st')
if est and est ~= 'dead' then return -1 end
local counted = dlqField(KEYS[1])
redis.call('HSET', KEYS[1], 'json', ARGV[3], 'st', ARGV[10])
dlqCount(KEYS[2], counted, -1)
dlqCount(KEYS[2], dlqField(KEYS[1]), 1)
if ARGV[11] == '1' then
	redis.call('SADD', KEYS[2], ARGV[1])
else
	redis.call('SREM', KEYS[2], ARGV[1])
end
redis.call('HSET', KEYS[3], 'ev', ARGV[4], 'att', ARGV[5], 'rs', ARGV[6], 'st', 'queued', 'due', ARGV[2], 'fin', '0', 'lease', '', 'lu', '0', 'ck', ARGV[7], 'src', ARGV[8])
redis.call('HDEL', KEYS[3], 'pl', 'pb')
redis.call('ZREM', KEYS[4], ARGV[1])
redis.call('ZADD', KEYS[5], ARGV[2], ARGV[1])
redis.call('SADD', KEYS[6], ARGV[9])
return 1
`)

// DLQSetStatus implements storage.Store.
func (s *Store) DLQSetStatus(ctx context.Context, id string, status storage.DLQStatus, text string, now time.Time) error {
	if err := storage.CheckDLQSettable(status); err != nil {
		return err
	}
	return retryChanged(func() (any, error) {
		p, e, raw, err := s.findEntryRaw(ctx, id)
		if err != nil {
			return nil, err
		}
		// decided here on what was read, and again by the script on what
		// is stored (it may have changed since)
		if err := e.Transition(status, text, now); err != nil {
			return nil, err
		}
		entryJSON, _ := json.Marshal(e)
		args := append([]any{id, string(status), entryJSON, flag(status.Open()), flag(storage.ReleasesChain(status)),
			p.key("waiting"), p.evPrefix(), p.lanePrefix(), p.key("lanes"), ms(now), raw}, refusedFrom(status)...)
		v, err := s.run(ctx, p, dlqStatusScript, []string{p.dlqEntry(id), p.key("dlqopen")}, args...)
		if err != nil {
			return nil, unavailable(err)
		}
		return v, nil
	})
}

// dlqStatusScript sets an entry's operator status. The statuses it refuses
// to move from are storage.DLQRefusedFrom(status), passed by the caller.
// An entry whose delivery blocks its chain releases it when the status
// does (storage.ReleasesChain; luaReleaseEntry).
//
//	KEYS: dlq entry, dlq open
//	ARGV: id, status, entry JSON, open (1|0: storage.DLQStatus.Open),
//	      release (1|0: storage.ReleasesChain), waiting hash, event key
//	      prefix, lane queue key prefix, lanes, now ms, the entry JSON
//	      read, refused statuses...
//	returns 1, 0 (no entry), -1 (conflict) or -2 (the entry changed since
//	it was read: read it again, entryChanged)
var dlqStatusScript = redis.NewScript(luaReleaseEntry + `
local st = redis.call('HGET', KEYS[1], 'st')
if not st then return 0 end
if redis.call('HGET', KEYS[1], 'json') ~= ARGV[11] then return -2 end
for i = 12, #ARGV do
	if st == ARGV[i] then return -1 end
end
if ARGV[5] == '1' then releaseEntry(KEYS[1], ARGV[1], ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10]) end
local counted = dlqField(KEYS[1])
redis.call('HSET', KEYS[1], 'json', ARGV[3], 'st', ARGV[2])
dlqCount(KEYS[2], counted, -1)
dlqCount(KEYS[2], dlqField(KEYS[1]), 1)
if ARGV[4] == '1' then
	redis.call('SADD', KEYS[2], ARGV[1])
else
	redis.call('SREM', KEYS[2], ARGV[1])
end
return 1
`)

// refusedFrom is storage.DLQRefusedFrom(to) as script arguments: the entry
// statuses a script must refuse to move to to, atomically.
func refusedFrom(to storage.DLQStatus) []any {
	var out []any
	for _, st := range storage.DLQRefusedFrom(to) {
		out = append(out, string(st))
	}
	return out
}

// flag is a boolean as a script argument.
func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// scriptStatus is the error of a DLQ script's answer.
func scriptStatus(v any) error { return scriptResult(v, storage.ErrDLQNotFound, storage.ErrConflict) }

// scriptResult is the error of a script answering 1 (done), 0 (notFound)
// or -1 (conflict).
func scriptResult(v any, notFound, conflict error) error {
	switch n, _ := v.(int64); n {
	case 1:
		return nil
	case 0:
		return notFound
	}
	return conflict
}
