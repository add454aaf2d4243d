package redisstore

import "github.com/redis/go-redis/v9"

// The Lua scripts. Every key a script touches carries the same hash tag
// (its partition), so each script runs on one Cluster node, atomically.
// Keys built inside a script (an event's hash from its id) share the tag of
// the declared keys, as queues on Redis Cluster commonly do.

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

// peekScript lists, for each lane of one partition the gate does not
// skip, up to n jobs due at or before now (read only).
//
//	KEYS: lanes
//	ARGV: now ms, n, lane queue key prefix, skipped lanes...
//	returns {lane, id, due ms, lane, id, due ms, ...}
var peekScript = redis.NewScript(`
local skip = {}
for i = 4, #ARGV do skip[ARGV[i]] = true end
local out = {}
for _, lane in ipairs(redis.call('SMEMBERS', KEYS[1])) do
	if not skip[lane] then
		local r = redis.call('ZRANGEBYSCORE', ARGV[3] .. lane, '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[2]))
		for i = 1, #r, 2 do
			out[#out + 1] = lane
			out[#out + 1] = r[i]
			out[#out + 1] = r[i + 1]
		end
	end
end
return out
`)

// headsScript lists the first job of each lane of one partition the gate
// does not skip (read only), for NextDue.
//
//	KEYS: lanes
//	ARGV: lane queue key prefix, skipped lanes...
//	returns {lane, due ms, ...}
var headsScript = redis.NewScript(`
local skip = {}
for i = 2, #ARGV do skip[ARGV[i]] = true end
local out = {}
for _, lane in ipairs(redis.call('SMEMBERS', KEYS[1])) do
	if not skip[lane] then
		local r = redis.call('ZRANGE', ARGV[1] .. lane, 0, 0, 'WITHSCORES')
		if r[1] then
			out[#out + 1] = lane
			out[#out + 1] = r[2]
		end
	end
end
return out
`)

// paceScript takes up to want slots of a lane's pace for all the nodes
// sharing the store: the GCRA of storage.Rate.Take, in microseconds.
//
//	KEYS: pace
//	ARGV: now us, want, interval us, burst
//	returns {granted, new tat us}
var paceScript = redis.NewScript(`
local now = tonumber(ARGV[1])
local want = tonumber(ARGV[2])
local iv = tonumber(ARGV[3])
local burst = tonumber(ARGV[4])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local room = (burst - 1) * iv - (tat - now)
if room < 0 or want <= 0 then return {0, tat} end
local g = math.min(want, math.floor(room / iv) + 1)
tat = tat + g * iv
redis.call('SET', KEYS[1], string.format('%.0f', tat), 'PX', math.ceil((tat - now) / 1000) + 60000)
return {g, tat}
`)

// countsScript counts one partition's jobs (read only).
//
//	KEYS: lanes, inflight, dlq open
//	ARGV: lane queue key prefix
//	returns {queued and leased, leased, open DLQ entries}
var countsScript = redis.NewScript(`
local n = 0
for _, lane in ipairs(redis.call('SMEMBERS', KEYS[1])) do
	n = n + redis.call('ZCARD', ARGV[1] .. lane)
end
return {n, redis.call('SCARD', KEYS[2]), redis.call('SCARD', KEYS[3])}
`)

// laneCountsScript counts the jobs of each lane of one partition, and the
// leased ones among them (read only). Only jobs due after now can be
// leased, so only those records are read.
//
//	KEYS: lanes
//	ARGV: now ms, lane queue key prefix, event key prefix
//	returns {lane, jobs, leased, lane, jobs, leased, ...}
var laneCountsScript = redis.NewScript(`
local out = {}
for _, lane in ipairs(redis.call('SMEMBERS', KEYS[1])) do
	local q = ARGV[2] .. lane
	local total = redis.call('ZCARD', q)
	local leased = 0
	for _, id in ipairs(redis.call('ZRANGEBYSCORE', q, '(' .. ARGV[1], '+inf')) do
		local h = redis.call('HMGET', ARGV[3] .. id, 'st', 'lu')
		if h[1] == 'in_flight' and tonumber(h[2] or '0') > tonumber(ARGV[1]) then leased = leased + 1 end
	end
	if total > 0 then
		out[#out + 1] = lane
		out[#out + 1] = total
		out[#out + 1] = leased
	end
end
return out
`)

// leaseScript leases the given jobs of one partition, each only if it is
// still due (another node may have leased it since it was peeked).
//
//	KEYS: inflight
//	ARGV: now ms, lease-until ms, event key prefix, token prefix,
//	      lane queue key prefix, then lane, id pairs
//	returns {{id, token, event JSON, attempts JSON, round start}, ...}
var leaseScript = redis.NewScript(`
local out = {}
for i = 6, #ARGV, 2 do
	local lane, id = ARGV[i], ARGV[i + 1]
	local q = ARGV[5] .. lane
	local due = redis.call('ZSCORE', q, id)
	if due and tonumber(due) <= tonumber(ARGV[1]) then
		local k = ARGV[3] .. id
		-- the record decides, not the index: only a queued job or one whose
		-- lease ran out is leased; any other entry is stale and removed
		local h = redis.call('HMGET', k, 'st', 'lu', 'ev', 'att', 'rs')
		local st = h[1]
		if st == 'queued' or (st == 'in_flight' and tonumber(h[2] or '0') <= tonumber(ARGV[1])) then
			local tok = ARGV[4] .. ':' .. i
			redis.call('HSET', k, 'lease', tok, 'lu', ARGV[2], 'due', ARGV[2], 'st', 'in_flight')
			redis.call('ZADD', q, ARGV[2], id)
			redis.call('SADD', KEYS[1], id)
			out[#out + 1] = {id, tok, h[3], h[4], h[5]}
		else
			redis.call('ZREM', q, id)
		end
	end
end
return out
`)

// migrateLanesScript builds the lane queues of one partition from its due
// index (stores written before lanes existed: every job in one zset), then
// drops that index; it runs once a partition.
//
//	KEYS: legacy due index, lanes, migrated marker
//	ARGV: event key prefix, lane queue key prefix
var migrateLanesScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
local r = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
for i = 1, #r, 2 do
	local id = r[i]
	local src = redis.call('HGET', ARGV[1] .. id, 'src')
	if not src or src == '' then
		local ev = redis.call('HGET', ARGV[1] .. id, 'ev')
		local ok, dec = pcall(cjson.decode, ev or '')
		src = (ok and type(dec) == 'table' and dec.source) or ''
	end
	redis.call('ZADD', ARGV[2] .. src, r[i + 1], id)
	redis.call('SADD', KEYS[2], src)
end
redis.call('DEL', KEYS[1])
redis.call('SET', KEYS[3], '1')
return #r / 2
`)

// finishScript records a worker's outcome if it still holds the lease.
//
//	KEYS: event hash, inflight, done, dlq entry, dlq index, dlq open,
//	      lane queue, lanes
//	ARGV: id, token, result (retry|release|delivered|dead), now ms, due ms,
//	      attempts JSON, stripped event JSON, dlq entry JSON, source, lane
//	returns 1, or 0 when the lease was lost
var finishScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'lease') ~= ARGV[2] then return 0 end
redis.call('SREM', KEYS[2], ARGV[1])
local r = ARGV[3]
if r == 'retry' or r == 'release' then
	redis.call('HSET', KEYS[1], 'att', ARGV[6], 'st', 'queued', 'due', ARGV[5], 'lease', '', 'lu', '0')
	redis.call('ZADD', KEYS[7], ARGV[5], ARGV[1])
	redis.call('SADD', KEYS[8], ARGV[10])
	return 1
end
redis.call('HSET', KEYS[1], 'ev', ARGV[7], 'att', ARGV[6], 'st', r, 'fin', ARGV[4], 'due', '0', 'lease', '', 'lu', '0')
redis.call('ZREM', KEYS[7], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[1])
if r == 'dead' then
	local old = redis.call('HGET', KEYS[4], 'at')
	if old then redis.call('ZREM', KEYS[5], ARGV[1]) end
	redis.call('HSET', KEYS[4], 'json', ARGV[8], 'st', 'pending', 'at', ARGV[4], 'src', ARGV[9])
	redis.call('ZADD', KEYS[5], ARGV[4], ARGV[1])
	redis.call('SADD', KEYS[6], ARGV[1])
end
return 1
`)

// dlqRetryScript re-enqueues a DLQ entry's event with a fresh budget.
//
//	KEYS: dlq entry, dlq open, event hash, done, lane queue, lanes
//	ARGV: id, now ms, entry JSON (retried), event JSON, attempts JSON, round start, claim key text, source, lane
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
redis.call('ZREM', KEYS[4], ARGV[1])
redis.call('ZADD', KEYS[5], ARGV[2], ARGV[1])
redis.call('SADD', KEYS[6], ARGV[9])
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
