package redisstore

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/storage"
)

// cleanupBatch bounds one round of cleanup per partition.
const cleanupBatch = 500

// Cleanup implements storage.Store. A claim needs no sweep: Cleanup moves
// each partition's claim cut to now, whether a claim holds is read from
// its value and the cut, and its event's last record takes it
// (claims.go); the claim expiry index holds only the claims of layout 1 a
// store still has, which also expire by themselves (TTL). Each index of a partition is swept in rounds of at most cleanupBatch
// ids: a read of the ids past their time, a pipelined read of what their
// scripts are to be told (claim keys, deliveries indexes), then the
// scripts in one pipeline: three round trips a round, not three an id,
// so that a node's cleanup keeps up with what its deliveries finish.
func (s *Store) Cleanup(ctx context.Context, now time.Time, retention, dlqRetention time.Duration) (int, error) {
	total := 0
	doneCutoff, dlqCutoff := ms(now.Add(-retention)), ms(now.Add(-dlqRetention))
	// the claims whose window ended before now are over (claims.go)
	cuts := make([]scriptCall, len(s.parts))
	for i, p := range s.parts {
		cuts[i] = scriptCall{[]string{p.claimCut()}, []any{ms(now)}}
	}
	if _, err := s.evalPipelined(ctx, claimCutScript, cuts); err != nil {
		return 0, unavailable(err)
	}
	for _, p := range s.parts {
		n, err := s.sweep(ctx, p.key("claimexp"), ms(now), expireClaimScript, func(cks []string) ([]scriptCall, error) {
			calls := make([]scriptCall, len(cks))
			for i, ck := range cks {
				calls[i] = scriptCall{[]string{p.claim(ck), p.key("claimexp")}, []any{ck, ms(now)}}
			}
			return calls, nil
		})
		total += n
		if err != nil {
			return total, err
		}
		n, err = s.sweep(ctx, p.key("done"), doneCutoff, removeEventScript, func(ids []string) ([]scriptCall, error) {
			return s.removeEventCalls(ctx, p, ids, doneCutoff, now)
		})
		total += n
		if err != nil {
			return total, err
		}
		if dlqRetention <= 0 {
			continue // DLQ entries are kept for good
		}
		n, err = s.sweep(ctx, p.key("dlqidx"), dlqCutoff, removeEntryScript, func(ids []string) ([]scriptCall, error) {
			return s.removeEntryCalls(ctx, p, ids, dlqCutoff, now)
		})
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// sweep runs sc, in rounds of cleanupBatch, for the members of index (a
// sorted set by time) scored before cutoff, with the calls that calls
// makes of them; it returns how many the scripts removed. A round whose
// scripts removed none ends it (each left its id for a reason of its own:
// re-enqueued, dead-lettered again since it was read).
func (s *Store) sweep(ctx context.Context, index string, cutoff int64, sc *redis.Script, calls func(ids []string) ([]scriptCall, error)) (int, error) {
	total := 0
	for {
		ids, err := s.c.ZRangeByScore(ctx, index, &redis.ZRangeBy{
			Min: "-inf", Max: "(" + strconv.FormatInt(cutoff, 10), Count: cleanupBatch}).Result()
		if err != nil || len(ids) == 0 {
			return total, unavailable(err)
		}
		cs, err := calls(ids)
		if err != nil {
			return total, unavailable(err)
		}
		cmds, err := s.evalPipelined(ctx, sc, cs)
		if err != nil {
			return total, unavailable(err)
		}
		removed := 0
		for _, c := range cmds {
			if n, _ := c.Int(); n > 0 {
				removed++
			}
		}
		total += removed
		if len(ids) < cleanupBatch || removed == 0 {
			return total, nil
		}
	}
}

// roundReads is what a cleanup round reads of each of its ids, in one
// pipelined round trip: the claim key its hash records, its event's
// deliveries index and, for DLQ entries, the entry's JSON (claimKeyFrom:
// the hash may be gone).
type roundReads struct{ ck, dests, entry []*redis.StringCmd }

// readRound reads the roundReads of ids (entries: their DLQ entries' JSON
// too; otherwise each reads as "").
func (s *Store) readRound(ctx context.Context, p partition, ids []string, entries bool) (roundReads, error) {
	r := roundReads{make([]*redis.StringCmd, len(ids)), make([]*redis.StringCmd, len(ids)), make([]*redis.StringCmd, len(ids))}
	err := s.readPipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, id := range ids {
			r.ck[i] = pipe.HGet(ctx, p.ev(id), "ck")
			r.dests[i] = pipe.Get(ctx, p.deliveries(storage.EventIDOfDelivery(id)))
			if entries {
				r.entry[i] = pipe.HGet(ctx, p.dlqEntry(id), "json")
			} else {
				r.entry[i] = redis.NewStringResult("", nil)
			}
		}
		return nil
	})
	return r, err
}

// removeEventCalls are the removeEventScript calls of the finished
// deliveries ids of p (a finished delivery's event is no fan-out record:
// it was expanded to be leased).
func (s *Store) removeEventCalls(ctx context.Context, p partition, ids []string, cutoff int64, now time.Time) ([]scriptCall, error) {
	r, err := s.readRound(ctx, p, ids, false)
	if err != nil {
		return nil, err
	}
	calls := make([]scriptCall, len(ids))
	for i, id := range ids {
		ev := storage.EventIDOfDelivery(id)
		destinations := storage.DecodeDestinations(r.dests[i].Val())
		ck := r.ck[i].Val()
		keys := []string{p.ev(id), p.key("done"), p.ids(ck), p.deliveries(ev), p.payload(storage.PayloadID(id)), p.events(), p.claim(ck), p.claimCut()}
		others := 0
		for _, d := range destinations {
			if other := storage.DeliveryID(ev, d); other != id {
				keys = append(keys, p.ev(other))
				others++
			}
		}
		for _, d := range orDefault(destinations) {
			keys = append(keys, p.dlqEntry(storage.DeliveryID(ev, d)))
		}
		calls[i] = scriptCall{keys, []any{id, cutoff, ev, others, ms(now)}}
	}
	return calls, nil
}

// removeEntryCalls are the removeEntryScript calls of the DLQ entries ids
// of p.
func (s *Store) removeEntryCalls(ctx context.Context, p partition, ids []string, cutoff int64, now time.Time) ([]scriptCall, error) {
	r, err := s.readRound(ctx, p, ids, true)
	if err != nil {
		return nil, err
	}
	calls := make([]scriptCall, len(ids))
	for i, id := range ids {
		ev := storage.EventIDOfDelivery(id)
		ck := claimKeyFrom(r.ck[i].Val(), r.entry[i].Val())
		keys := []string{p.dlqEntry(id), p.key("dlqidx"), p.key("dlqopen"), p.events(), p.deliveries(ev), p.ids(ck), p.claim(ck), p.claimCut()}
		for _, d := range orDefault(storage.DecodeDestinations(r.dests[i].Val())) {
			did := storage.DeliveryID(ev, d)
			keys = append(keys, p.ev(did), p.dlqEntry(did))
		}
		calls[i] = scriptCall{keys, []any{id, cutoff, p.key("waiting"), p.evPrefix(), p.lanePrefix(), p.key("lanes"), ms(now), ev}}
	}
	return calls, nil
}

// expireClaimScript removes a claim of layout 1 whose window ended before
// the cutoff (the key's TTL does it too; Cleanup's clock decides here),
// and its entry in the claim expiry index. A claim of layout 2 that a
// later event wrote under the same key since is not the indexed one, and
// stays.
//
//	KEYS: claim, claim expiry index
//	ARGV: claim key text, cutoff ms
var expireClaimScript = redis.NewScript(luaClaimed + `
local exp = redis.call('ZSCORE', KEYS[2], ARGV[1])
if exp and tonumber(exp) < tonumber(ARGV[2]) then
	local id, ends = claimed(redis.call('GET', KEYS[1]))
	if id and not ends then redis.call('DEL', KEYS[1]) end
	redis.call('ZREM', KEYS[2], ARGV[1])
	return 1
end
return 0
`)

// removeEventScript deletes a finished delivery past retention, unless it
// was re-enqueued (or finished again) since Cleanup listed it. The event's
// payload record goes with its last delivery; its claim (releaseClaim)
// and the ids key of layout 1, by which Lookup finds it once its claim
// ended, its deliveries index, which the listing and Lookup read the
// deliveries through, and its place in the events index (eventsindex.go)
// stay while a DLQ entry of one of its deliveries does (removeEntryScript
// removes them with the last).
//
//	KEYS: event hash (the delivery's), done, ids, deliveries index, payload
//	      record, events index, claim, claim cut, the event hashes of the
//	      event's other deliveries, then the DLQ entries of all its
//	      deliveries
//	ARGV: id (the delivery's), cutoff ms, event id, the number of other
//	      deliveries, now ms
var removeEventScript = redis.NewScript(luaReleaseClaim + `
local fin = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not fin or tonumber(fin) >= tonumber(ARGV[2]) then return 0 end
local st = redis.call('HGET', KEYS[1], 'st')
if st and st ~= 'delivered' and st ~= 'dead' then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
local entries = 9 + tonumber(ARGV[4])
for i = 9, entries - 1 do
	if redis.call('EXISTS', KEYS[i]) == 1 then return 1 end
end
redis.call('DEL', KEYS[5])
for i = entries, #KEYS do
	if redis.call('EXISTS', KEYS[i]) == 1 then return 1 end
end
if redis.call('GET', KEYS[3]) == ARGV[3] then redis.call('DEL', KEYS[3]) end
releaseClaim(KEYS[7], KEYS[8], ARGV[3], ARGV[5])
redis.call('DEL', KEYS[4])
redis.call('ZREM', KEYS[6], ARGV[3])
return 1
`)

// removeEntryScript deletes a DLQ entry past dlq_retention, unless it was
// dead-lettered again since Cleanup listed it. An entry whose delivery
// blocks its chain goes as if discarded: the next job goes
// (luaReleaseEntry), so that no key stays blocked by an entry that is gone.
// The last record of its event (no hash nor entry of any of its
// deliveries left) takes its deliveries index and its (source, event id)
// index of layout 1 and its claim (releaseClaim), each if still the
// event's, with it, and the event out of the events index
// (eventsindex.go).
//
//	KEYS: dlq entry, dlq index, dlq open, events index, the event's
//	      deliveries index, its ids key (layout 1), its claim, the claim
//	      cut, then for each of its deliveries: its event hash, its dlq
//	      entry
//	ARGV: id, cutoff ms, waiting hash, event key prefix, lane queue key
//	      prefix, lanes, now ms, event id
var removeEntryScript = redis.NewScript(luaReleaseEntry + luaReleaseClaim + `
local at = redis.call('ZSCORE', KEYS[2], ARGV[1])
if at and tonumber(at) >= tonumber(ARGV[2]) then return 0 end
releaseEntry(KEYS[1], ARGV[1], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7])
dlqCount(KEYS[3], dlqField(KEYS[1]), -1)
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('SREM', KEYS[3], ARGV[1])
for i = 9, #KEYS do
	if redis.call('EXISTS', KEYS[i]) == 1 then return 1 end
end
if redis.call('GET', KEYS[6]) == ARGV[8] then redis.call('DEL', KEYS[6]) end
releaseClaim(KEYS[7], KEYS[8], ARGV[8], ARGV[7])
redis.call('DEL', KEYS[5])
redis.call('ZREM', KEYS[4], ARGV[8])
return 1
`)
