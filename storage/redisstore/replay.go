package redisstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/storage"
)

// listBatch is how many finished events ListDelivered reads per round trip.
const listBatch = 200

// ListDelivered implements storage.Store: each partition's done index (by
// finish time) is walked from f.Since to f.Until, its events read in
// batches; the partitions' matches are merged, oldest delivery first
// (events delivered within the same millisecond by id).
func (s *Store) ListDelivered(ctx context.Context, f storage.ReplayFilter) ([]storage.EventInfo, error) {
	limit := f.EffectiveLimit()
	lo, hi := "-inf", "+inf"
	if !f.Since.IsZero() {
		lo = strconv.FormatInt(ms(f.Since), 10)
	}
	if !f.Until.IsZero() {
		hi = strconv.FormatInt(ms(f.Until), 10)
	}
	out := []storage.EventInfo{}
	for _, p := range s.parts {
		found := 0
		for offset := int64(0); found < limit; offset += listBatch {
			ids, err := s.c.ZRangeByScore(ctx, p.key("done"), &redis.ZRangeBy{Min: lo, Max: hi, Offset: offset, Count: listBatch}).Result()
			if err != nil {
				return nil, unavailable(err)
			}
			cmds := make([]*redis.SliceCmd, len(ids))
			_, err = s.c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
				for i, id := range ids {
					cmds[i] = pipe.HMGet(ctx, p.ev(id), "st", "ev", "att", "fin")
				}
				return nil
			})
			if err != nil && !errors.Is(err, redis.Nil) {
				return nil, unavailable(err)
			}
			for _, cmd := range cmds {
				if found == limit {
					break
				}
				if info, ok := deliveredInfo(cmd.Val(), f); ok {
					out = append(out, *info)
					found++
				}
			}
			if len(ids) < listBatch {
				break
			}
		}
	}
	// the order of each partition's done index: by finish time (ms), then id
	slices.SortFunc(out, func(a, b storage.EventInfo) int {
		return cmp.Or(a.FinishedAt.Compare(b.FinishedAt), cmp.Compare(a.ID, b.ID))
	})
	return out[:min(len(out), limit)], nil
}

// deliveredInfo is the EventInfo of an event hash's st, ev, att and fin
// fields, if the filter matches it (an unreadable event is not replayed).
func deliveredInfo(vals []any, f storage.ReplayFilter) (*storage.EventInfo, bool) {
	if len(vals) != 4 {
		return nil, false
	}
	str := func(i int) string { v, _ := vals[i].(string); return v }
	var ev storage.Event
	if json.Unmarshal([]byte(str(1)), &ev) != nil {
		return nil, false
	}
	var attempts []storage.Attempt
	if a := str(2); a != "" && json.Unmarshal([]byte(a), &attempts) != nil {
		return nil, false
	}
	finMS, _ := strconv.ParseInt(str(3), 10, 64)
	fin, st := fromMS(finMS), storage.Status(str(0))
	if !f.Matches(&ev, st, fin) {
		return nil, false
	}
	return storage.NewEventInfo(&ev, attempts, st, time.Time{}, fin), true
}

// Replay implements storage.Store. The event is read, turned into its
// replay in Go (storage.ReplayJob), and queued by replayScript, which
// does it only if the event is still the delivered one that was read.
func (s *Store) Replay(ctx context.Context, info *storage.EventInfo, due time.Time) error {
	p, fields, err := s.findFinished(ctx, info)
	if err != nil {
		return err
	}
	if err := storage.CheckReplayEvent(storage.Status(fields["st"])); err != nil {
		return err
	}
	job := storage.Job{}
	if err := json.Unmarshal([]byte(fields["ev"]), &job.Event); err != nil {
		return unavailable(err)
	}
	if a := fields["att"]; a != "" {
		if err := json.Unmarshal([]byte(a), &job.Attempts); err != nil {
			return unavailable(err)
		}
	}
	storage.ReplayJob(&job)
	evJSON, err := json.Marshal(job.Event)
	if err != nil {
		return err
	}
	lane := storage.LaneOf(&job.Event)
	v, err := s.run(ctx, p, replayScript,
		[]string{p.ev(info.ID), p.key("done"), p.lane(lane), p.key("lanes")},
		info.ID, ms(due), fields["fin"], fields["att"], evJSON, job.RoundStart, lane)
	if err != nil {
		return unavailable(err)
	}
	return scriptResult(v, storage.ErrNotFound, storage.ErrNotDelivered)
}

// findFinished reads the hash of the event info names, in the partition
// of its claim key or of its id (an event without a provider id lives by
// its id): the fields are empty when it is gone.
func (s *Store) findFinished(ctx context.Context, info *storage.EventInfo) (partition, map[string]string, error) {
	parts := []partition{s.partitionOf(storage.ClaimKey(info.Source, info.EventID)), s.partitionOf(info.ID)}
	cmds := make([]*redis.MapStringStringCmd, len(parts))
	_, err := s.c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, p := range parts {
			cmds[i] = pipe.HGetAll(ctx, p.ev(info.ID))
		}
		return nil
	})
	if err != nil {
		return partition{}, nil, unavailable(err)
	}
	for i, cmd := range cmds {
		if m := cmd.Val(); m["ev"] != "" && m["src"] == info.Source {
			return parts[i], m, nil
		}
	}
	return parts[0], map[string]string{}, nil
}

// replayScript queues a delivered event in its replay lane, if it is
// still the delivered event Replay read (same finish time, same attempts:
// a concurrent replay, or its delivery, changed them). It is not
// idempotent (a second run answers conflict): it runs at most once.
//
//	KEYS: event hash, done, lane queue (the replay lane), lanes
//	ARGV: id, due ms, finish ms as read, attempts JSON as read,
//	      event JSON (its replay), round start, lane
//	returns 1, 0 (gone) or -1 (no longer the delivered event read)
var replayScript = redis.NewScript(`
local h = redis.call('HMGET', KEYS[1], 'st', 'fin', 'att')
if not h[1] then return 0 end
if h[1] ~= 'delivered' or h[2] ~= ARGV[3] or (h[3] or '') ~= ARGV[4] then return -1 end
redis.call('HSET', KEYS[1], 'ev', ARGV[5], 'st', 'queued', 'due', ARGV[2], 'rs', ARGV[6], 'fin', '0', 'lease', '', 'lu', '0')
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[1])
redis.call('SADD', KEYS[4], ARGV[7])
return 1
`)
