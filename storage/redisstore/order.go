package redisstore

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/storage"
)

// The chains of ordered jobs (storage.ChainOf), in the partition of the
// jobs they hold:
//
//	{hookline:7}:chain:<chain name>   list of job ids, in the order they were accepted; the first is the head
//	{hookline:7}:waiting              hash id -> lane: the chained jobs behind their head (queued, in no lane queue)
//
// A Lua script touches one slot, so a chain must live with its jobs: an
// event with ordered deliveries is placed by its order key instead of its
// claim key (orderPlacement), so that every event of one key of a source
// shares one partition. A chained job's hash records its chain's name
// (field "chain"), so that a job whose event cannot be decoded keeps its
// key (poison); a dead job's DLQ entry hash records its chain's key (field
// "chain"), so that the scripts settling or removing the entry release the
// key atomically. Stores without ordered jobs have none of these keys or
// fields.

// chain is the key of chain name in p.
func (p partition) chain(name string) string { return p.tag + ":chain:" + name }

// chainArgs are the script arguments a chain's pop needs (luaPopChain):
// chain key, waiting hash, event key prefix, lane queue key prefix, lanes,
// now ms.
func (p partition) chainArgs(name string, now time.Time) []any {
	return []any{p.chain(name), p.key("waiting"), p.evPrefix(), p.lanePrefix(), p.key("lanes"), ms(now)}
}

// orderPlacement is the key an event with ordered deliveries (order key
// key, storage.OrderKeyOf) is placed by: its source and key, so that its
// chains live with it. A provider's resend has the same body, hence the
// same key and partition, where its claim is found.
func orderPlacement(source, key string) string { return "order:" + source + "\x00" + key }

// luaPopChain defines popChain: it pops id off chain if it is the chain's
// head, and makes the next job due at now (off the waiting hash, into its
// lane queue). A next job whose record is gone (never expected) is popped
// too, so that it cannot stall its key.
const luaPopChain = luaCounts + `
local function popChain(chain, id, waiting, evPrefix, lanePrefix, lanes, now)
	if redis.call('LINDEX', chain, 0) ~= id then return end
	redis.call('LPOP', chain)
	local nxt = redis.call('LINDEX', chain, 0)
	while nxt do
		local lane = redis.call('HGET', waiting, nxt)
		if redis.call('HDEL', waiting, nxt) == 1 then waitCount(waiting, lane, -1) end
		if lane and redis.call('EXISTS', evPrefix .. nxt) == 1 then
			redis.call('HSET', evPrefix .. nxt, 'due', now)
			redis.call('ZADD', lanePrefix .. lane, now, nxt)
			redis.call('SADD', lanes, lane)
			return
		end
		redis.call('LPOP', chain)
		nxt = redis.call('LINDEX', chain, 0)
	end
end
`

// luaReleaseEntry defines releaseEntry, on top of popChain: the DLQ entry
// hash entry is settled (resolved, discarded) or removed; if its job is the
// head of the chain the entry records, blocked behind it (neither queued
// nor in flight: storage.HeadBlocks, repeated here to hold atomically), it
// is popped and the next job goes at now.
const luaReleaseEntry = luaPopChain + `
local function releaseEntry(entry, id, waiting, evPrefix, lanePrefix, lanes, now)
	local chain = redis.call('HGET', entry, 'chain')
	if not chain then return end
	local st = redis.call('HGET', evPrefix .. id, 'st')
	if st == 'queued' or st == 'in_flight' then return end
	popChain(chain, id, waiting, evPrefix, lanePrefix, lanes, now)
end
`

// fillWaiting sets the Waiting count (storage.ChainWaiting) of the open
// entries of an ordered delivery among entries, each in the partition
// part gives, in one pipelined read; the others are left alone (no round
// trip when there is none).
func (s *Store) fillWaiting(ctx context.Context, entries []storage.DLQEntry, part func(i int) partition) error {
	type read struct {
		i      int
		head   *redis.StringCmd
		length *redis.IntCmd
	}
	var reads []read
	for i := range entries {
		if entries[i].Status.Open() && storage.ChainOfEntry(&entries[i]) != "" {
			reads = append(reads, read{i: i})
		}
	}
	if len(reads) == 0 {
		return nil
	}
	err := s.readPipelined(ctx, func(pipe redis.Pipeliner) error {
		for k := range reads {
			e := &entries[reads[k].i]
			key := part(reads[k].i).chain(storage.ChainOfEntry(e))
			reads[k].head = pipe.LIndex(ctx, key, 0)
			reads[k].length = pipe.LLen(ctx, key)
		}
		return nil
	})
	if err != nil {
		return unavailable(err)
	}
	for _, r := range reads {
		e := &entries[r.i]
		e.Waiting = storage.ChainWaiting(e, r.head.Val(), int(r.length.Val()))
	}
	return nil
}
