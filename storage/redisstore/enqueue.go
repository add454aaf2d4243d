package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/storage"
)

// Enqueue implements storage.Store.
func (s *Store) Enqueue(ctx context.Context, ev *storage.Event, dedupeUntil time.Time) (storage.EnqueueResult, error) {
	if err := ctx.Err(); err != nil {
		return storage.EnqueueResult{}, err
	}
	now := s.now()
	p := s.partitionForEvent(ev)
	data, err := json.Marshal(ev)
	if err != nil {
		return storage.EnqueueResult{}, err
	}
	ck := ""
	dedupe := "0"
	expires := ms(now) + 1
	if ev.Dedupe {
		ck, dedupe = storage.ClaimKey(ev.Source, ev.EventID), "1"
		expires = max(ms(dedupeUntil), expires)
	}
	lane := storage.LaneOf(ev)
	keys := []string{p.claim(ck), p.ids(ck), p.ev(ev.ID), p.key("claimexp"), p.lane(lane), p.key("lanes")}
	touch := "0"
	if s.opts.MinReplicas > 0 {
		touch = "1"
	}
	args := []any{ev.ID, dedupe, expires, data, ms(now), ck, touch, ev.Source, lane}
	var v any
	if s.opts.MinReplicas > 0 {
		v, err = s.run(ctx, p, enqueueScript, keys, args...)
	} else {
		// concurrent requests share round trips, as they share fsyncs in
		// the embedded store
		v, err = s.enqueues.do(ctx, scriptCall{keys: keys, args: args})
	}
	if err != nil {
		return storage.EnqueueResult{}, unavailable(err)
	}
	res, _ := v.([]any)
	if len(res) < 2 {
		return storage.EnqueueResult{}, unavailable(fmt.Errorf("unexpected enqueue reply %v", v))
	}
	id, _ := res[1].(string)
	if dup, _ := res[0].(int64); dup == 1 {
		st, err := s.statusOf(ctx, p, id, now)
		if err != nil {
			return storage.EnqueueResult{}, unavailable(err)
		}
		out := storage.EnqueueResult{Duplicate: true, ID: id, Status: st}
		if len(res) == 3 {
			if left, _ := res[2].(int64); left > 0 {
				out.DedupeUntil = now.Add(time.Duration(left) * time.Millisecond)
			}
		}
		return out, nil
	}
	return storage.EnqueueResult{ID: id, Status: storage.StatusQueued}, nil
}

// enqueueScript claims (source, event id) and enqueues the event in one step.
//
//	KEYS: claim, ids, event hash, claim expiry index, lane queue, lanes
//	ARGV: id, dedupe (0|1), claim expiry (Unix ms: the window ends when the
//	      caller said, however long the call took), event JSON, now ms, claim key text,
//	      touch (1: a duplicate rewrites its claim's TTL, so that a following
//	      WAIT also covers the original write), source, lane
//	returns {0, id} when stored, {1, existing id, claim ms left} for a duplicate
//
// A second run of the same call (go-redis resending it after a lost reply)
// finds the event it stored (ids are unique) and answers "stored" again.
var enqueueScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[3]) == 1 then return {0, ARGV[1]} end
if ARGV[2] == '1' then
	local existing = redis.call('GET', KEYS[1])
	if existing then
		local left = redis.call('PTTL', KEYS[1])
		if ARGV[7] == '1' and left > 0 then redis.call('PEXPIRE', KEYS[1], left) end
		return {1, existing, left}
	end
	redis.call('SET', KEYS[1], ARGV[1], 'PXAT', ARGV[3])
	redis.call('SET', KEYS[2], ARGV[1])
	redis.call('ZADD', KEYS[4], ARGV[3], ARGV[6])
end
redis.call('HSET', KEYS[3], 'ev', ARGV[4], 'st', 'queued', 'due', ARGV[5], 'rs', '0', 'att', '[]', 'ck', ARGV[6], 'src', ARGV[8])
redis.call('ZADD', KEYS[5], ARGV[5], ARGV[1])
redis.call('SADD', KEYS[6], ARGV[9])
return {0, ARGV[1]}
`)

// statusOf is the status of event id in partition p, for duplicate
// answers (see storage.EffectiveStatus).
func (s *Store) statusOf(ctx context.Context, p partition, id string, now time.Time) (storage.Status, error) {
	vals, err := s.c.HMGet(ctx, p.ev(id), "st", "lu").Result()
	if err != nil {
		return "", err
	}
	if st, ok := vals[0].(string); ok && st != "" {
		lu, _ := strconv.ParseInt(fmt.Sprint(vals[1]), 10, 64)
		return storage.EffectiveStatus(storage.Status(st), fromMS(lu), false, now), nil
	}
	n, err := s.c.Exists(ctx, p.dlqEntry(id)).Result()
	if err != nil {
		return "", err
	}
	return storage.EffectiveStatus("", time.Time{}, n > 0, now), nil
}
