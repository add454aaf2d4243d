package redisstore

import (
	"context"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/storage"
)

// The counters. QueueByLane, Counts and DLQCounts read, in each
// partition, one key per lane and one per leased job, never the queued
// jobs or the DLQ entries:
//
//	{hookline:7}:q:<lane>             the lane queue: ZCARD, its queued and leased jobs
//	{hookline:7}:fanlanes             the deliveries of the fan-out records (fanout.go)
//	{hookline:7}:waiting:lanes        hash lane -> chained jobs waiting behind their head
//	{hookline:7}:dlqopen:counts       hash source \0 status -> DLQ entries
//	{hookline:7}:inflight             the leased jobs: each one's hash says its lease's
//	                                  end (field "lu") and its lane (field "ln")
//	{hookline:7}:counted:v1           set once the two hashes above are built
//
// The two counter hashes are kept by the scripts that change what they
// count, in the same script (luaCounts): exact by construction, whatever
// fails when, as a script runs whole or not at all. Their names are those
// of the keys every such script already has (waiting, dlq open) with a
// suffix, so that no script takes a key more.
//
// In flight: a leased job whose lease ran out is queued again
// (storage.EffectiveStatus), as Lookup reports it; the leased jobs are
// read (no more than the workers of every node lease at once, plus the
// leases of workers that died, until leased again), not counted.
//
// A store written by an earlier version has no counter hashes: the first
// Store of this version to use it builds them (migrate, countersScript),
// reading every waiting job and DLQ entry once, in one script per
// partition, before its first write. A store an earlier version wrote to
// after that (a downgrade, then an upgrade) holds counters that missed
// those writes: delete its counted:v1 markers (ResetCounters) and the
// next Store rebuilds them.

// luaCounts defines the counter helpers of the scripts:
//
//   - waitCount(waiting, lane, d) adds d to lane's waiting jobs (waiting
//     is the waiting hash's key);
//   - dlqField(entry) names the counter of the DLQ entry hash entry
//     (source \0 status; nil when there is no entry);
//   - dlqCount(open, field, d) adds d to the counter field (open is the
//     dlq open set's key; nil field: nothing).
const luaCounts = `
local function bump(h, field, d)
	if redis.call('HINCRBY', h, field, d) <= 0 then redis.call('HDEL', h, field) end
end
local function waitCount(waiting, lane, d)
	if lane then bump(waiting .. ':lanes', lane, d) end
end
local function dlqField(entry)
	local h = redis.call('HMGET', entry, 'src', 'st')
	if not h[2] then return nil end
	local src = h[1]
	if not src or src == '' then
		local ok, dec = pcall(cjson.decode, redis.call('HGET', entry, 'json') or '')
		src = (ok and type(dec) == 'table' and type(dec.source) == 'string' and dec.source) or ''
	end
	return src .. '\0' .. h[2]
end
local function dlqCount(open, field, d)
	if field then bump(open .. ':counts', field, d) end
end
`

// countersScript builds one partition's counter hashes from its waiting
// hash and DLQ entries, unless they are built (its marker is set).
//
//	KEYS: waiting, dlq open, dlq index, marker
//	ARGV: dlq entry key prefix
//	returns 1 if built, 0 if they were
var countersScript = redis.NewScript(luaCounts + `
if redis.call('EXISTS', KEYS[4]) == 1 then return 0 end
redis.call('DEL', KEYS[1] .. ':lanes', KEYS[2] .. ':counts')
for _, lane in ipairs(redis.call('HVALS', KEYS[1])) do waitCount(KEYS[1], lane, 1) end
for _, id in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
	dlqCount(KEYS[2], dlqField(ARGV[1] .. id), 1)
end
redis.call('SET', KEYS[4], '1')
return 1
`)

// countersMarker is the key saying p's counter hashes are built.
func (p partition) countersMarker() string { return p.key("counted:v1") }

// buildCounters builds the counters of every partition that has none
// (countersScript).
func (s *Store) buildCounters(ctx context.Context) error {
	for _, p := range s.parts {
		err := countersScript.Run(ctx, s.c, []string{p.key("waiting"), p.key("dlqopen"), p.key("dlqidx"), p.countersMarker()},
			p.dlqEntry("")).Err()
		if err != nil {
			return unavailable(err)
		}
	}
	return nil
}

// ResetCounters deletes the markers of the counters of every partition,
// so that the next Store to use the store rebuilds them (see luaCounts):
// for a store an earlier version wrote to after this one had built them.
func (s *Store) ResetCounters(ctx context.Context) error {
	keys := make([]string, len(s.parts))
	for i, p := range s.parts {
		keys[i] = p.countersMarker()
	}
	_, err := s.c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for _, k := range keys {
			pipe.Del(ctx, k)
		}
		return nil
	})
	return unavailable(err)
}

// Counts implements storage.Store: QueueByLane's and DLQCounts' answers
// (storage.SumCounts).
func (s *Store) Counts(ctx context.Context) (storage.Counts, error) {
	byLane, dlq, err := s.counted(ctx)
	if err != nil {
		return storage.Counts{}, err
	}
	return storage.SumCounts(byLane, dlq), nil
}

// QueueBySource implements storage.Store.
func (s *Store) QueueBySource(ctx context.Context) (map[string]storage.Counts, error) {
	byLane, err := s.QueueByLane(ctx)
	return storage.CountsBySource(byLane), err
}

// QueueByLane implements storage.Store: from the counters (see luaCounts).
func (s *Store) QueueByLane(ctx context.Context) (map[string]storage.Counts, error) {
	byLane, _, err := s.counted(ctx)
	return byLane, err
}

// DLQCounts implements storage.Store: from the counters.
func (s *Store) DLQCounts(ctx context.Context) (map[string]map[storage.DLQStatus]int, error) {
	_, dlq, err := s.counted(ctx)
	return dlq, err
}

// counted reads QueueByLane's and DLQCounts' answers: countedScript in
// every partition, one pipelined round trip.
func (s *Store) counted(ctx context.Context) (map[string]storage.Counts, map[string]map[storage.DLQStatus]int, error) {
	if err := s.migrate(ctx); err != nil {
		return nil, nil, err
	}
	now := ms(s.now())
	calls := make([]scriptCall, len(s.parts))
	for i, p := range s.parts {
		calls[i] = scriptCall{keys: []string{p.key("lanes"), p.key("waiting"), p.key("inflight"), p.key("dlqopen")},
			args: []any{now, p.lanePrefix(), p.evPrefix(), p.tag}}
	}
	cmds, err := s.evalPipelined(ctx, countedScript, calls)
	if err != nil {
		return nil, nil, unavailable(err)
	}
	byLane := map[string]storage.Counts{}
	dlq := map[string]map[storage.DLQStatus]int{}
	for _, cmd := range cmds {
		v, _ := cmd.Val().([]any)
		if len(v) != 2 {
			continue
		}
		lanes, _ := v[0].([]any)
		for j := 0; j+2 < len(lanes); j += 3 {
			lane, _ := lanes[j].(string)
			jobs, _ := lanes[j+1].(int64)
			leased, _ := lanes[j+2].(int64)
			n := byLane[lane]
			n.InFlight += int(leased)
			n.Queued += int(jobs - leased)
			byLane[lane] = n
		}
		counts, _ := v[1].([]any)
		for j := 0; j+1 < len(counts); j += 2 {
			field, _ := counts[j].(string)
			v, _ := counts[j+1].(string)
			k, err := strconv.Atoi(v)
			src, st, ok := cutZero(field)
			if !ok || err != nil || k == 0 {
				continue
			}
			if dlq[src] == nil {
				dlq[src] = map[storage.DLQStatus]int{}
			}
			dlq[src][storage.DLQStatus(st)] += k
		}
	}
	return byLane, dlq, nil
}

// cutZero splits a DLQ counter's field (source \0 status).
func cutZero(f string) (string, string, bool) {
	for i := 0; i < len(f); i++ {
		if f[i] == 0 {
			return f[:i], f[i+1:], true
		}
	}
	return "", "", false
}

// countedScript reads one partition's counts (read only): each lane's
// jobs (its queue's ZCARD, its waiting chained jobs, the deliveries of
// the fan-out records: luaFanLanes) and leased jobs (the in-flight set's
// jobs whose lease has not run out: their lane is their hash's field
// "ln", or for a job leased by an earlier version the lane queue holding
// it), and the DLQ counters.
//
//	KEYS: lanes, waiting, inflight, dlq open
//	ARGV: now ms, lane queue key prefix, event key prefix, partition tag
//	returns {{lane, jobs, leased, lane, jobs, leased, ...}, {source \0 status, n, ...}}
var countedScript = redis.NewScript(luaFanLanes + `
local jobs = {}
local h = redis.call('HGETALL', KEYS[2] .. ':lanes')
for i = 1, #h, 2 do jobs[h[i]] = (jobs[h[i]] or 0) + tonumber(h[i + 1]) end
fanLanes(ARGV[4], jobs)
local lanes = redis.call('SMEMBERS', KEYS[1])
for _, lane in ipairs(lanes) do
	jobs[lane] = (jobs[lane] or 0) + redis.call('ZCARD', ARGV[2] .. lane)
end
local leased = {}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[3])) do
	local f = redis.call('HMGET', ARGV[3] .. id, 'st', 'lu', 'ln')
	if f[1] == 'in_flight' and tonumber(f[2] or '0') > tonumber(ARGV[1]) then
		local lane = f[3]
		if not lane then
			for _, l in ipairs(lanes) do
				if redis.call('ZSCORE', ARGV[2] .. l, id) then lane = l break end
			end
		end
		if lane then leased[lane] = (leased[lane] or 0) + 1 end
	end
end
local out = {}
for lane, n in pairs(jobs) do
	if n > 0 then
		out[#out + 1] = lane
		out[#out + 1] = n
		out[#out + 1] = leased[lane] or 0
	end
end
return {out, redis.call('HGETALL', KEYS[4] .. ':counts')}
`)

// Recount implements storage.Recounter: QueueByLane and DLQCounts as
// they were before the counters, reading the records of the jobs due
// later and every DLQ entry.
func (s *Store) Recount(ctx context.Context) (map[string]storage.Counts, map[string]map[storage.DLQStatus]int, error) {
	byLane, err := s.recountLanes(ctx)
	if err != nil {
		return nil, nil, err
	}
	dlq, err := s.recountDLQ(ctx)
	return byLane, dlq, err
}
