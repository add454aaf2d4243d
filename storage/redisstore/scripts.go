package redisstore

import "github.com/redis/go-redis/v9"

// The Lua scripts. Every key a script touches carries the same hash tag
// (its partition), so each script runs on one Cluster node, atomically.
// Keys built inside a script (an event's hash from its id) share the tag of
// the declared keys, as queues on Redis Cluster commonly do.

// enqueueScript claims (source, event id) and enqueues the event in one step.
//
//	KEYS: claim, ids, event hash, due, claim expiry index
//	ARGV: id, dedupe (0|1), claim TTL ms, event JSON, now ms, claim key text,
//	      touch (1: a duplicate rewrites its claim's TTL, so that a following
//	      WAIT also covers the original write), source
//	returns {0, id} when stored, {1, existing id, claim ms left} for a duplicate
var enqueueScript = redis.NewScript(`
if ARGV[2] == '1' then
	local existing = redis.call('GET', KEYS[1])
	if existing then
		local left = redis.call('PTTL', KEYS[1])
		if ARGV[7] == '1' and left > 0 then redis.call('PEXPIRE', KEYS[1], left) end
		return {1, existing, left}
	end
	redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
	redis.call('SET', KEYS[2], ARGV[1])
	redis.call('ZADD', KEYS[5], tonumber(ARGV[5]) + tonumber(ARGV[3]), ARGV[6])
end
redis.call('HSET', KEYS[3], 'ev', ARGV[4], 'st', 'queued', 'due', ARGV[5], 'rs', '0', 'att', '[]', 'ck', ARGV[6], 'src', ARGV[8])
redis.call('ZADD', KEYS[4], ARGV[5], ARGV[1])
return {0, ARGV[1]}
`)

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

// leaseScript leases up to n due jobs of one partition.
//
//	KEYS: due, inflight
//	ARGV: now ms, n, lease-until ms, event key prefix, token prefix
//	returns {{id, token, event JSON, attempts JSON, round start}, ...}
var leaseScript = redis.NewScript(`
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
local out = {}
for i, id in ipairs(ids) do
	local k = ARGV[4] .. id
	if redis.call('EXISTS', k) == 1 then
		local tok = ARGV[5] .. ':' .. i
		redis.call('HSET', k, 'lease', tok, 'lu', ARGV[3], 'due', ARGV[3], 'st', 'in_flight')
		redis.call('ZADD', KEYS[1], ARGV[3], id)
		redis.call('SADD', KEYS[2], id)
		local v = redis.call('HMGET', k, 'ev', 'att', 'rs')
		out[#out + 1] = {id, tok, v[1], v[2], v[3]}
	else
		redis.call('ZREM', KEYS[1], id)
	end
end
return out
`)

// finishScript records a worker's outcome if it still holds the lease.
//
//	KEYS: event hash, due, inflight, done, dlq entry, dlq index, dlq open
//	ARGV: id, token, result (retry|release|delivered|dead), now ms, due ms,
//	      attempts JSON, stripped event JSON, dlq entry JSON, source
//	returns 1, or 0 when the lease was lost
var finishScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'lease') ~= ARGV[2] then return 0 end
redis.call('SREM', KEYS[3], ARGV[1])
local r = ARGV[3]
if r == 'retry' or r == 'release' then
	redis.call('HSET', KEYS[1], 'att', ARGV[6], 'st', 'queued', 'due', ARGV[5], 'lease', '', 'lu', '0')
	redis.call('ZADD', KEYS[2], ARGV[5], ARGV[1])
	return 1
end
redis.call('HSET', KEYS[1], 'ev', ARGV[7], 'att', ARGV[6], 'st', r, 'fin', ARGV[4], 'due', '0', 'lease', '', 'lu', '0')
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[4], ARGV[4], ARGV[1])
if r == 'dead' then
	local old = redis.call('HGET', KEYS[5], 'at')
	if old then redis.call('ZREM', KEYS[6], ARGV[1]) end
	redis.call('HSET', KEYS[5], 'json', ARGV[8], 'st', 'pending', 'at', ARGV[4], 'src', ARGV[9])
	redis.call('ZADD', KEYS[6], ARGV[4], ARGV[1])
	redis.call('SADD', KEYS[7], ARGV[1])
end
return 1
`)

// dlqRetryScript re-enqueues a DLQ entry's event with a fresh budget.
//
//	KEYS: dlq entry, dlq open, event hash, due, done
//	ARGV: id, now ms, entry JSON (retried), event JSON, attempts JSON, round start, claim key text, source
//	returns 1, 0 (no entry) or -1 (conflict)
var dlqRetryScript = redis.NewScript(`
local st = redis.call('HGET', KEYS[1], 'st')
if not st then return 0 end
if st == 'retried' or st == 'discarded' then return -1 end
local est = redis.call('HGET', KEYS[3], 'st')
if est and est ~= 'dead' then return -1 end
redis.call('HSET', KEYS[1], 'json', ARGV[3], 'st', 'retried')
redis.call('SREM', KEYS[2], ARGV[1])
redis.call('HSET', KEYS[3], 'ev', ARGV[4], 'att', ARGV[5], 'rs', ARGV[6], 'st', 'queued', 'due', ARGV[2], 'fin', '0', 'lease', '', 'lu', '0', 'ck', ARGV[7], 'src', ARGV[8])
redis.call('ZREM', KEYS[5], ARGV[1])
redis.call('ZADD', KEYS[4], ARGV[2], ARGV[1])
return 1
`)

// dlqStatusScript sets an entry's operator status.
//
//	KEYS: dlq entry, dlq open
//	ARGV: id, status, entry JSON
//	returns 1, 0 (no entry) or -1 (conflict)
var dlqStatusScript = redis.NewScript(`
local st = redis.call('HGET', KEYS[1], 'st')
if not st then return 0 end
if st == 'retried' then return -1 end
redis.call('HSET', KEYS[1], 'json', ARGV[3], 'st', ARGV[2])
if ARGV[2] == 'pending' or ARGV[2] == 'investigating' then
	redis.call('SADD', KEYS[2], ARGV[1])
else
	redis.call('SREM', KEYS[2], ARGV[1])
end
return 1
`)

// removeEventScript deletes a finished event past retention, unless it was
// re-enqueued (or finished again) since Cleanup listed it.
//
//	KEYS: event hash, done, ids
//	ARGV: id, cutoff ms
var removeEventScript = redis.NewScript(`
local fin = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not fin or tonumber(fin) >= tonumber(ARGV[2]) then return 0 end
local st = redis.call('HGET', KEYS[1], 'st')
if st and st ~= 'delivered' and st ~= 'dead' then return 0 end
if redis.call('GET', KEYS[3]) == ARGV[1] then redis.call('DEL', KEYS[3]) end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
`)

// removeEntryScript deletes a DLQ entry past dlq_retention, unless it was
// dead-lettered again since Cleanup listed it.
//
//	KEYS: dlq entry, dlq index, dlq open
//	ARGV: id, cutoff ms
var removeEntryScript = redis.NewScript(`
local at = redis.call('ZSCORE', KEYS[2], ARGV[1])
if at and tonumber(at) >= tonumber(ARGV[2]) then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('SREM', KEYS[3], ARGV[1])
return 1
`)
