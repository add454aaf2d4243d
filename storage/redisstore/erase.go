package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/storage"
)

// Erasure (storage.Eraser): one script in the event's partition removes
// every key of the event at once (deleted keys are gone from Redis's
// memory; what persistence files and replicas keep is described in
// docs/redis.md). A claim whose window has not ended stays to its end,
// and beside it the event's tombstone, which expires with it:
//
//	{hookline:7}:erased:<id>   "1", with the claim's TTL: the event was erased (storage.StatusErased)

// erased is the key of event id's tombstone in p.
func (p partition) erased(id string) string { return p.tag + ":erased:" + id }

// eraseBatchCalls is how many of a batch's erasures are in flight at once:
// each is a few round trips, one after the other.
const eraseBatchCalls = 16

// EraseBatch implements storage.Eraser: each event is erased by its own
// script in its partition, as Erase does, eraseBatchCalls at a time
// (there is nothing to do once for the batch: a deleted key's bytes leave
// Redis's memory with it).
func (s *Store) EraseBatch(ctx context.Context, source string, ids []string, now time.Time) ([]storage.EraseResult, error) {
	results := make([]storage.EraseResult, len(ids))
	errs := make([]error, len(ids))
	sem := make(chan struct{}, eraseBatchCalls)
	var wg sync.WaitGroup
	for i, id := range ids {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			res, err := s.eraseInternal(ctx, source, id, now)
			if !errors.Is(err, storage.ErrNotFound) {
				results[i], errs[i] = res, err
			}
		})
	}
	wg.Wait()
	return results, errors.Join(errs...)
}

// Erase implements storage.Store.
func (s *Store) Erase(ctx context.Context, source, eventID string, now time.Time) (storage.EraseResult, error) {
	if err := ctx.Err(); err != nil {
		return storage.EraseResult{}, err
	}
	ck := storage.ClaimKey(source, eventID)
	found, err := s.findEvent(ctx, ck, eventID)
	if err != nil {
		return storage.EraseResult{}, err
	}
	for _, c := range found {
		if res, err := s.erase(ctx, source, ck, c.p, c.id, now); !errors.Is(err, storage.ErrNotFound) {
			return res, err
		}
	}
	return storage.EraseResult{}, storage.ErrNotFound
}

// eraseInternal erases the event of source whose internal id is id, never
// one whose provider id is id (EraseBatch names events by their internal
// ids).
func (s *Store) eraseInternal(ctx context.Context, source, id string, now time.Time) (storage.EraseResult, error) {
	if err := ctx.Err(); err != nil {
		return storage.EraseResult{}, err
	}
	p, found, err := s.findInternal(ctx, id)
	if err != nil {
		return storage.EraseResult{}, err
	}
	if !found {
		return storage.EraseResult{}, storage.ErrNotFound
	}
	return s.erase(ctx, source, storage.ClaimKey(source, id), p, id, now)
}

// erase erases the event of source with internal id id in partition p, its
// claim key ck unless its records name another.
func (s *Store) erase(ctx context.Context, source, ck string, p partition, id string, now time.Time) (storage.EraseResult, error) {
	destinations, err := s.destinationsOf(ctx, p, id)
	if err != nil {
		return storage.EraseResult{}, unavailable(err)
	}
	if destinations == nil {
		destinations = []string{storage.DefaultDestination}
	}
	ids := make([]string, len(destinations))
	for i, d := range destinations {
		ids[i] = storage.DeliveryID(id, d)
	}
	// the claim is the one the event's records name (found by its internal
	// id, an event's claim key is not the one of the names given)
	if c, err := s.claimKeyOf(ctx, p, ids); err != nil {
		return storage.EraseResult{}, unavailable(err)
	} else if c != "" {
		ck = c
	}
	keys := []string{p.ids(ck), p.claim(ck), p.deliveries(id), p.erased(id), p.key("inflight"), p.key("done"),
		p.key("dlqidx"), p.key("dlqopen"), p.key("waiting"), p.key("lanes"), p.key("claimexp"), p.payload(id), p.events(), p.claimCut()}
	args := []any{id, source, ms(now), p.lanePrefix(), p.evPrefix(), p.chain(""), ck}
	for _, did := range ids {
		keys = append(keys, p.ev(did), p.dlqEntry(did))
		args = append(args, did)
	}
	v, err := s.run(ctx, p, eraseScript, keys, args...)
	if err != nil {
		return storage.EraseResult{}, unavailable(err)
	}
	res, _ := v.([]any)
	if len(res) != 3 {
		return storage.EraseResult{}, unavailable(fmt.Errorf("unexpected erase reply %v", v))
	}
	n, _ := res[0].(int64)
	entries, _ := res[1].(int64)
	until, _ := res[2].(int64)
	if n <= 0 {
		return storage.EraseResult{}, storage.ErrNotFound
	}
	out := storage.EraseResult{ID: id, Deliveries: int(n), DLQEntries: int(entries), DedupeUntil: fromMS(until)}
	return out, nil
}

// claimKeyOf is the claim key the first of the job hashes ids records
// (field "ck"), or else the one the first of their DLQ entries names (its
// source and event id: the entry of a delivery whose hash retention took);
// "" when none does. A claim key read from an entry is that of the
// event's provider id, which the event holds only if it was deduplicated:
// the scripts compare what is stored under it before they delete it.
func (s *Store) claimKeyOf(ctx context.Context, p partition, ids []string) (string, error) {
	cks := make([]*redis.StringCmd, len(ids))
	entries := make([]*redis.StringCmd, len(ids))
	err := s.readPipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, id := range ids {
			cks[i] = pipe.HGet(ctx, p.ev(id), "ck")
			entries[i] = pipe.HGet(ctx, p.dlqEntry(id), "json")
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	for _, c := range cks {
		if v := c.Val(); v != "" {
			return v, nil
		}
	}
	for _, c := range entries {
		if ck := claimKeyFrom("", c.Val()); ck != "" {
			return ck, nil
		}
	}
	return "", nil
}

// claimKeyFrom is the claim key ck a delivery's hash records (field
// "ck"), or else the one its DLQ entry (entryJSON) names; "" when neither
// is readable.
func claimKeyFrom(ck, entryJSON string) string {
	if ck != "" || entryJSON == "" {
		return ck
	}
	var e storage.DLQEntry
	if json.Unmarshal([]byte(entryJSON), &e) != nil || e.EventID == "" {
		return ""
	}
	return storage.ClaimKey(e.Source, e.EventID)
}

// eraseScript erases one event (storage.Eraser): for each delivery, it
// takes the job out of its ordered chain (the head is popped and the next
// job goes at now; a waiting job is removed: storage.ErasesFromChain,
// repeated here to hold atomically), out of every lane queue of the
// partition and of the in-flight, done, DLQ and waiting indexes, and
// deletes its hash and its DLQ entry; then the deliveries index, the
// payload record its deliveries shared, the (source, event id) index and
// the event's entry in the events index. A claim whose window has not
// ended is kept to its end (releaseClaim), and the tombstone set with the
// same TTL; one that ended goes. A job or entry of another source makes it
// refuse (nothing written), as does an event of which nothing is left.
//
//	KEYS: ids (layout 1), claim, deliveries index, tombstone, inflight,
//	      done, dlq index, dlq open, waiting, lanes, claim expiry index
//	      (layout 1), payload record, events index, claim cut, then for
//	      each delivery: its event hash, its dlq entry
//	ARGV: event id, source, now ms, lane queue key prefix, event key
//	      prefix, chain key prefix, claim key text, then each delivery's id
//	returns {deliveries removed (0: none found, -1: another source's),
//	         dlq entries removed, the kept claim's expiry ms (0: none)}
var eraseScript = redis.NewScript(luaPopChain + luaReleaseClaim + `
local n = (#KEYS - 14) / 2
local found = 0
for i = 0, n - 1 do
	local ev, entry = KEYS[15 + 2 * i], KEYS[16 + 2 * i]
	local src = redis.call('HGET', ev, 'src')
	local esrc = redis.call('HGET', entry, 'src')
	if (src and src ~= '' and src ~= ARGV[2]) or (esrc and esrc ~= '' and esrc ~= ARGV[2]) then return {-1, 0, 0} end
	if redis.call('EXISTS', ev) == 1 or redis.call('EXISTS', entry) == 1 then found = found + 1 end
end
if found == 0 then return {0, 0, 0} end
local entries = 0
local lanes = redis.call('SMEMBERS', KEYS[10])
for i = 0, n - 1 do
	local ev, entry, id = KEYS[15 + 2 * i], KEYS[16 + 2 * i], ARGV[8 + i]
	local chain = redis.call('HGET', ev, 'chain') or redis.call('HGET', entry, 'chain')
	if chain then
		local ckey = ARGV[6] .. chain
		if redis.call('LINDEX', ckey, 0) == id then
			popChain(ckey, id, KEYS[9], ARGV[5], ARGV[4], KEYS[10], ARGV[3])
		else
			redis.call('LREM', ckey, 0, id)
		end
	end
	local wl = redis.call('HGET', KEYS[9], id)
	if wl then
		redis.call('HDEL', KEYS[9], id)
		waitCount(KEYS[9], wl, -1)
	end
	for _, lane in ipairs(lanes) do
		if redis.call('ZREM', ARGV[4] .. lane, id) == 1 and redis.call('EXISTS', ARGV[4] .. lane) == 0 then
			redis.call('SREM', KEYS[10], lane) -- left empty (see finishOne)
		end
	end
	redis.call('SREM', KEYS[5], id)
	redis.call('ZREM', KEYS[6], id)
	redis.call('ZREM', KEYS[7], id)
	redis.call('SREM', KEYS[8], id)
	dlqCount(KEYS[8], dlqField(entry), -1)
	entries = entries + redis.call('DEL', entry)
	redis.call('DEL', ev)
end
redis.call('DEL', KEYS[3], KEYS[12])
redis.call('ZREM', KEYS[13], ARGV[1])
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
local exp, layout1 = releaseClaim(KEYS[2], KEYS[14], ARGV[1], ARGV[3])
if layout1 then
	-- a claim of layout 1: its end is in the claim expiry index
	exp = tonumber(redis.call('ZSCORE', KEYS[11], ARGV[7]) or '0')
	if exp <= tonumber(ARGV[3]) then exp = 0 end
end
if exp > 0 then redis.call('SET', KEYS[4], '1', 'PXAT', exp) end
return {found, entries, exp}
`)

// isErased reports whether event id of p has its tombstone.
func (s *Store) isErased(ctx context.Context, p partition, id string) (bool, error) {
	n, err := s.c.Exists(ctx, p.erased(id)).Result()
	return n > 0, err
}
