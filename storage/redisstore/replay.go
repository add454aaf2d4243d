package redisstore

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/storage"
)

// ListDelivered implements storage.Store: the done index (by finish time)
// of every partition is walked oldest first from the cursor or f.Since to
// f.Until (walkIndex), filtering on the events' small fields (st, src,
// dst, ty); only the events on the page are read in full.
func (s *Store) ListDelivered(ctx context.Context, f storage.ReplayFilter) (storage.ReplayPage, error) {
	page := storage.ReplayPage{Events: []storage.EventInfo{}}
	untimed := f // the scores bound the time (to the millisecond), the event read in full decides the rest
	untimed.Since, untimed.Until = time.Time{}, time.Time{}
	// a finish time is kept to the millisecond: since within a millisecond
	// starts at the next one (as the finish time read back, truncated, is
	// before it), until within one ends with it
	since := f.Since
	if t := since.Truncate(time.Millisecond); !t.Equal(since) {
		since = t.Add(time.Millisecond)
	}
	hits, next, err := s.walkIndex(ctx, indexWalk{index: "done", since: since, until: f.Until, cursor: f.Cursor,
		limit: f.EffectiveLimit(), budget: f.ScanBudget(), hash: partition.ev,
		match: func(id string, ix storage.IndexEntry, present, complete bool) bool {
			if !complete { // finished before the fields existed: read in full
				return present && ix.Status == string(storage.StatusDelivered)
			}
			return untimed.MatchesIndex(id, ix, time.Time{})
		}})
	if err != nil {
		return page, err
	}
	cmds := make([]*redis.SliceCmd, len(hits))
	err = s.readPipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, h := range hits {
			cmds[i] = pipe.HMGet(ctx, h.p.ev(h.pos.ID), "st", "fin", "ev", "att")
		}
		return nil
	})
	if err != nil {
		return page, unavailable(err)
	}
	for _, cmd := range cmds {
		v := cmd.Val()
		if len(v) != 4 {
			continue
		}
		st := storage.Status(str(v[0]))
		finMS, _ := strconv.ParseInt(str(v[1]), 10, 64)
		fin := fromMS(finMS)
		var ev storage.Event
		var attempts []storage.Attempt
		if json.Unmarshal([]byte(str(v[2])), &ev) != nil {
			continue // removed meanwhile, or unreadable: not replayed
		}
		if a := str(v[3]); a != "" && json.Unmarshal([]byte(a), &attempts) != nil {
			continue
		}
		if untimed.Matches(&ev, st, fin) { // fin has the scores' resolution, which decided the time
			page.Events = append(page.Events, *storage.NewEventInfo(&ev, attempts, st, time.Time{}, fin))
		}
	}
	page.NextCursor = next
	return page, nil
}

// Replay implements storage.Store. The event is read, turned into its
// replay in Go (storage.ReplayJob), and queued by replayScript, which
// does it only if the event is still the delivered one that was read.
func (s *Store) Replay(ctx context.Context, info *storage.EventInfo, due time.Time) error {
	due = storage.RequeueDue(due, s.now())
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
	cmds := make([]*redis.SliceCmd, len(parts))
	_, err := s.c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, p := range parts {
			cmds[i] = pipe.HMGet(ctx, p.ev(info.ID), hashFields...)
		}
		return nil
	})
	if err != nil {
		return partition{}, nil, unavailable(err)
	}
	for i, cmd := range cmds {
		if m := hashMap(cmd.Val()); m["ev"] != "" && m["src"] == info.Source {
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
