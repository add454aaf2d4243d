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
			infos, err := s.readDelivered(ctx, p, ids, f)
			if err != nil {
				return nil, err
			}
			infos = infos[:min(len(infos), limit-found)]
			out = append(out, infos...)
			found += len(infos)
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

// readDelivered reads the events ids of partition p that f matches, in
// the order of ids: first the fields the filter needs but the type, then
// the event and attempts of the delivered ones of the source (only those
// carry a payload worth reading).
func (s *Store) readDelivered(ctx context.Context, p partition, ids []string, f storage.ReplayFilter) ([]storage.EventInfo, error) {
	heads := make([]*redis.SliceCmd, len(ids))
	_, err := s.c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, id := range ids {
			heads[i] = pipe.HMGet(ctx, p.ev(id), "st", "src", "fin")
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, unavailable(err)
	}
	type head struct {
		id  string
		st  storage.Status
		fin time.Time
	}
	var wanted []head
	for i, cmd := range heads {
		v := cmd.Val()
		if len(v) != 3 {
			continue
		}
		str := func(i int) string { s, _ := v[i].(string); return s }
		finMS, _ := strconv.ParseInt(str(2), 10, 64)
		h := head{id: ids[i], st: storage.Status(str(0)), fin: fromMS(finMS)}
		// the type, the destination (and a source not in the hash) are
		// checked once the event is read
		src := cmp.Or(str(1), f.Source)
		if f.Matches(&storage.Event{ID: h.id, Source: src, Type: f.Type, Destination: f.Destination}, h.st, h.fin) {
			wanted = append(wanted, h)
		}
	}
	bodies := make([]*redis.SliceCmd, len(wanted))
	_, err = s.c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, h := range wanted {
			bodies[i] = pipe.HMGet(ctx, p.ev(h.id), "ev", "att")
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, unavailable(err)
	}
	var out []storage.EventInfo
	for i, cmd := range bodies {
		v := cmd.Val()
		if len(v) != 2 {
			continue
		}
		str := func(i int) string { s, _ := v[i].(string); return s }
		var ev storage.Event
		var attempts []storage.Attempt
		if json.Unmarshal([]byte(str(0)), &ev) != nil {
			continue // an unreadable event is not replayed
		}
		if a := str(1); a != "" && json.Unmarshal([]byte(a), &attempts) != nil {
			continue
		}
		if h := wanted[i]; f.Matches(&ev, h.st, h.fin) {
			out = append(out, *storage.NewEventInfo(&ev, attempts, h.st, time.Time{}, h.fin))
		}
	}
	return out, nil
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
// of its claim key or of its event's id (an event without a provider id
// lives by its id, storage.EventIDOfDelivery), or else in any other (an
// event with ordered deliveries lives by its order key, which info does
// not hold): the fields are empty when it is gone.
func (s *Store) findFinished(ctx context.Context, info *storage.EventInfo) (partition, map[string]string, error) {
	parts := []partition{s.partitionOf(storage.ClaimKey(info.Source, info.EventID)), s.partitionOf(storage.EventIDOfDelivery(info.ID))}
	p, m, err := s.readFinished(ctx, info, parts)
	if err != nil || m["ev"] != "" {
		return p, m, err
	}
	var others []partition
	for _, q := range s.parts {
		if q != parts[0] && q != parts[1] {
			others = append(others, q)
		}
	}
	if len(others) > 0 {
		if q, m, err := s.readFinished(ctx, info, others); err != nil || m["ev"] != "" {
			return q, m, err
		}
	}
	return parts[0], map[string]string{}, nil
}

// readFinished reads the hash of the event info names in each of parts, in
// one pipeline, and returns the first that holds it (fields empty: none).
func (s *Store) readFinished(ctx context.Context, info *storage.EventInfo, parts []partition) (partition, map[string]string, error) {
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
	return partition{}, map[string]string{}, nil
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
