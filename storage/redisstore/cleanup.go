package redisstore

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/storage"
)

// cleanupBatch bounds one round of cleanup per partition.
const cleanupBatch = 500

// Cleanup implements storage.Store. Claims also expire by themselves (TTL).
func (s *Store) Cleanup(ctx context.Context, now time.Time, retention, dlqRetention time.Duration) (int, error) {
	total := 0
	doneCutoff, dlqCutoff := ms(now.Add(-retention)), ms(now.Add(-dlqRetention))
	for _, p := range s.parts {
		for {
			cks, err := s.c.ZRangeByScore(ctx, p.key("claimexp"), &redis.ZRangeBy{
				Min: "-inf", Max: "(" + strconv.FormatInt(ms(now), 10), Count: cleanupBatch}).Result()
			if err != nil {
				return total, unavailable(err)
			}
			for _, ck := range cks {
				if _, err := expireClaimScript.Run(ctx, s.c, []string{p.claim(ck), p.key("claimexp")}, ck, ms(now)).Result(); err != nil {
					return total, unavailable(err)
				}
				total++
			}
			if len(cks) < cleanupBatch {
				break
			}
		}
		for {
			ids, err := s.c.ZRangeByScore(ctx, p.key("done"), &redis.ZRangeBy{
				Min: "-inf", Max: "(" + strconv.FormatInt(doneCutoff, 10), Count: cleanupBatch}).Result()
			if err != nil {
				return total, unavailable(err)
			}
			for _, id := range ids {
				ck, err := s.c.HGet(ctx, p.ev(id), "ck").Result()
				if err != nil && !errors.Is(err, redis.Nil) {
					return total, unavailable(err)
				}
				ev := storage.EventIDOfDelivery(id)
				destinations, err := s.destinationsOf(ctx, p, ev)
				if err != nil {
					return total, unavailable(err)
				}
				keys := []string{p.ev(id), p.key("done"), p.ids(ck), p.deliveries(ev), p.payload(storage.PayloadID(id)), p.events()}
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
				if _, err := removeEventScript.Run(ctx, s.c, keys, id, doneCutoff, ev, others).Result(); err != nil {
					return total, unavailable(err)
				}
				total++
			}
			if len(ids) < cleanupBatch {
				break
			}
		}
		if dlqRetention <= 0 {
			continue
		}
		for {
			ids, err := s.c.ZRangeByScore(ctx, p.key("dlqidx"), &redis.ZRangeBy{
				Min: "-inf", Max: "(" + strconv.FormatInt(dlqCutoff, 10), Count: cleanupBatch}).Result()
			if err != nil {
				return total, unavailable(err)
			}
			for _, id := range ids {
				ev := storage.EventIDOfDelivery(id)
				destinations, err := s.destinationsOf(ctx, p, ev)
				if err != nil {
					return total, unavailable(err)
				}
				ck, err := s.claimKeyOf(ctx, p, []string{id})
				if err != nil {
					return total, unavailable(err)
				}
				keys := []string{p.dlqEntry(id), p.key("dlqidx"), p.key("dlqopen"), p.events(), p.deliveries(ev), p.ids(ck)}
				for _, d := range orDefault(destinations) {
					did := storage.DeliveryID(ev, d)
					keys = append(keys, p.ev(did), p.dlqEntry(did))
				}
				if _, err := removeEntryScript.Run(ctx, s.c, keys, id, dlqCutoff,
					p.key("waiting"), p.evPrefix(), p.lanePrefix(), p.key("lanes"), ms(now), ev).Result(); err != nil {
					return total, unavailable(err)
				}
				total++
			}
			if len(ids) < cleanupBatch {
				break
			}
		}
	}
	return total, nil
}

// expireClaimScript removes a claim whose window ended before the cutoff
// (the key's TTL does it too; Cleanup's clock decides here).
//
//	KEYS: claim, claim expiry index
//	ARGV: claim key text, cutoff ms
var expireClaimScript = redis.NewScript(`
local exp = redis.call('ZSCORE', KEYS[2], ARGV[1])
if exp and tonumber(exp) < tonumber(ARGV[2]) then
	redis.call('DEL', KEYS[1])
	redis.call('ZREM', KEYS[2], ARGV[1])
	return 1
end
return 0
`)

// removeEventScript deletes a finished delivery past retention, unless it
// was re-enqueued (or finished again) since Cleanup listed it. The event's
// payload record goes with its last delivery; its (source, event id)
// index, by which Lookup finds it once its claim ended, its deliveries
// index, which the listing and Lookup read the deliveries through, and
// its place in the events index (eventsindex.go) stay while a DLQ entry of
// one of its deliveries does (removeEntryScript removes them with the
// last).
//
//	KEYS: event hash (the delivery's), done, ids, deliveries index, payload
//	      record, events index, the event hashes of the event's other
//	      deliveries, then the DLQ entries of all its deliveries
//	ARGV: id (the delivery's), cutoff ms, event id, the number of other
//	      deliveries
var removeEventScript = redis.NewScript(`
local fin = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not fin or tonumber(fin) >= tonumber(ARGV[2]) then return 0 end
local st = redis.call('HGET', KEYS[1], 'st')
if st and st ~= 'delivered' and st ~= 'dead' then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
local entries = 7 + tonumber(ARGV[4])
for i = 7, entries - 1 do
	if redis.call('EXISTS', KEYS[i]) == 1 then return 1 end
end
redis.call('DEL', KEYS[5])
for i = entries, #KEYS do
	if redis.call('EXISTS', KEYS[i]) == 1 then return 1 end
end
if redis.call('GET', KEYS[3]) == ARGV[3] then redis.call('DEL', KEYS[3]) end
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
// index (if still the event's) with it, and the event out of the events
// index (eventsindex.go).
//
//	KEYS: dlq entry, dlq index, dlq open, events index, the event's
//	      deliveries index, its (source, event id) index, then for each of
//	      its deliveries: its event hash, its dlq entry
//	ARGV: id, cutoff ms, waiting hash, event key prefix, lane queue key
//	      prefix, lanes, now ms, event id
var removeEntryScript = redis.NewScript(luaReleaseEntry + `
local at = redis.call('ZSCORE', KEYS[2], ARGV[1])
if at and tonumber(at) >= tonumber(ARGV[2]) then return 0 end
releaseEntry(KEYS[1], ARGV[1], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7])
dlqCount(KEYS[3], dlqField(KEYS[1]), -1)
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('SREM', KEYS[3], ARGV[1])
for i = 7, #KEYS do
	if redis.call('EXISTS', KEYS[i]) == 1 then return 1 end
end
if redis.call('GET', KEYS[6]) == ARGV[8] then redis.call('DEL', KEYS[6]) end
redis.call('DEL', KEYS[5])
redis.call('ZREM', KEYS[4], ARGV[8])
return 1
`)
