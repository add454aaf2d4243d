package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/storage"
)

// Lease implements storage.Store. One pipelined read finds, in every
// partition (or in the peek window's, while there is a backlog:
// window.go), the due jobs of each lane the gate lets through; the lanes
// take turns (storage.PickFair); paced lanes take their slots from the
// pace all nodes share; then each partition holding some of the chosen
// jobs leases them atomically, skipping any another node leased
// meanwhile. A node never leases more than it has idle workers for, so
// several nodes sharing a backlog do not herd onto it.
func (s *Store) Lease(ctx context.Context, now time.Time, n int, lease time.Duration, gate *storage.Gate) ([]*storage.Job, error) {
	if want, err := storage.LeaseWanted(ctx, n); !want {
		return nil, err
	}
	if err := s.migrate(ctx); err != nil {
		return nil, err
	}
	cands, err := s.peek(ctx, now, n, gate)
	if err != nil || len(cands) == 0 {
		return nil, err
	}
	picked, err := storage.Plan(cands, n, gate, &s.turns, func(want map[string]int) (map[string]int, error) {
		return s.pace(ctx, now, want, gate)
	})
	if err != nil {
		return nil, err
	}
	s.turns.Served(picked)
	return s.leaseCandidates(ctx, now, picked, lease)
}

// LeaseNamed implements storage.Store: one lease script in each partition
// named, in one round trip, and no peek.
func (s *Store) LeaseNamed(ctx context.Context, now time.Time, cands []storage.Candidate, lease time.Duration) ([]*storage.Job, error) {
	due, err := storage.LeasableNamed(ctx, cands, now)
	if err != nil {
		return nil, err
	}
	if err := s.migrate(ctx); err != nil {
		return nil, err
	}
	// a fan-out record (lane "") is expanded by a lease, not leased; a
	// partition out of range names nothing here
	due = slices.DeleteFunc(due, func(c storage.Candidate) bool {
		return c.Lane == "" || c.Part < 0 || c.Part >= len(s.parts)
	})
	return s.leaseCandidates(ctx, now, due, lease)
}

// leaseCandidates leases picked (each still due when its script runs),
// one script per partition in one round trip, and hands the jobs out in
// picked's order.
func (s *Store) leaseCandidates(ctx context.Context, now time.Time, picked []storage.Candidate, lease time.Duration) ([]*storage.Job, error) {
	if len(picked) == 0 {
		return nil, nil
	}
	rank := make(map[string]int, len(picked))
	var order []int
	byPart := make(map[int][]any)
	for i, c := range picked {
		rank[c.ID] = i
		if byPart[c.Part] == nil {
			order = append(order, c.Part)
		}
		byPart[c.Part] = append(byPart[c.Part], c.Lane, c.ID)
	}
	until := now.Add(lease)
	calls := make([]scriptCall, len(order))
	for k, i := range order {
		p := s.parts[i]
		// the token names the partition: Finish must find the job where it
		// was leased, whatever its event fields hash to
		args := []any{ms(now), ms(until), p.evPrefix(), strconv.Itoa(i) + ":" + storage.NewLeaseToken(), p.lanePrefix(), p.tag}
		calls[k] = scriptCall{keys: []string{p.key("inflight")}, args: append(args, byPart[i]...)}
	}
	// one round trip for every partition's share
	leased, err := s.evalPipelined(ctx, leaseScript, calls)
	var jobs []*storage.Job
	for _, cmd := range leased {
		v, cerr := cmd.Result()
		if cerr != nil {
			continue // that partition's jobs stay due; the others were leased
		}
		rows, _ := v.([]any)
		for _, row := range rows {
			job, derr := decodeLeased(row, until)
			if derr != nil {
				s.poison(ctx, row, derr) // undecodable record: to the DLQ, not back at every lease
				continue
			}
			jobs = append(jobs, job)
		}
	}
	if len(jobs) == 0 && err != nil {
		return nil, unavailable(err)
	}
	// hand out in the order chosen
	slices.SortStableFunc(jobs, func(a, b *storage.Job) int { return rank[a.ID] - rank[b.ID] })
	return jobs, nil
}

// leaseScript leases the given jobs of one partition, each only if it is
// still due (another node may have leased it since it was peeked).
//
//	KEYS: inflight
//	ARGV: now ms, lease-until ms, event key prefix, token prefix,
//	      lane queue key prefix, partition tag, then lane, id pairs (lane
//	      "": a fan-out record peekScript listed, expanded, not leased)
//	returns {{id, token, event JSON, attempts JSON, round start}, ...},
//	        with a sixth element for a job whose payload is stored apart
//	        from its JSON: the payload, from its hash (field "pb") or from
//	        the payload record it names (field "pl"; false if it is missing)
var leaseScript = redis.NewScript(luaExpandFan + `
local out = {}
for i = 7, #ARGV, 2 do
	local lane, id = ARGV[i], ARGV[i + 1]
	local q = ARGV[5] .. lane
	local due = lane ~= '' and redis.call('ZSCORE', q, id)
	if lane == '' then
		expandFan(ARGV[6], id)
	elseif due and tonumber(due) <= tonumber(ARGV[1]) then
		local k = ARGV[3] .. id
		-- the record decides, not the index: only a queued job or one whose
		-- lease ran out is leased; any other entry is stale and removed
		local h = redis.call('HMGET', k, 'st', 'lu', 'ev', 'att', 'rs', 'pl', 'pb')
		local st = h[1]
		if st == 'queued' or (st == 'in_flight' and tonumber(h[2] or '0') <= tonumber(ARGV[1])) then
			local tok = ARGV[4] .. ':' .. i
			redis.call('HSET', k, 'lease', tok, 'lu', ARGV[2], 'due', ARGV[2], 'st', 'in_flight', 'ln', lane)
			redis.call('ZADD', q, ARGV[2], id)
			redis.call('SADD', KEYS[1], id)
			if h[7] then
				out[#out + 1] = {id, tok, h[3], h[4], h[5], h[7]}
			elseif h[6] then
				out[#out + 1] = {id, tok, h[3], h[4], h[5], redis.call('GET', h[6])}
			else
				out[#out + 1] = {id, tok, h[3], h[4], h[5]}
			end
		else
			redis.call('ZREM', q, id)
			if redis.call('EXISTS', q) == 0 then redis.call('SREM', ARGV[6] .. ':lanes', lane) end
		end
	end
end
return out
`)

// decodeLeased reads a job of leaseScript's reply, its shared payload
// joined (storage.JoinPayload).
func decodeLeased(row any, until time.Time) (*storage.Job, error) {
	f, _ := row.([]any)
	if len(f) != 5 && len(f) != 6 {
		return nil, fmt.Errorf("unexpected lease reply")
	}
	str := func(i int) string { s, _ := f[i].(string); return s }
	job := &storage.Job{Lease: str(1), LeaseUntil: until}
	if err := json.Unmarshal([]byte(str(2)), &job.Event); err != nil {
		return nil, fmt.Errorf("decoding event %s: %v", str(0), err)
	}
	if a := str(3); a != "" {
		if err := json.Unmarshal([]byte(a), &job.Attempts); err != nil {
			return nil, fmt.Errorf("decoding attempts of %s: %v", str(0), err)
		}
	}
	job.RoundStart, _ = strconv.Atoi(str(4))
	if err := storage.JoinPayload(&job.Event, leasedPayload(f)); err != nil {
		return nil, err
	}
	return job, nil
}

// leasedPayload is the payload record a row of leaseScript's reply
// carries (nil: none).
func leasedPayload(f []any) []byte {
	if len(f) < 6 {
		return nil
	}
	if v, ok := f[5].(string); ok {
		return []byte(v)
	}
	return nil
}

// skipArgs lists the gate's skip entries as script arguments: lane, then
// 1 (skipped) or 0, for luaSkipped.
func skipArgs(gate *storage.Gate) []any {
	if gate == nil {
		return nil
	}
	var out []any
	for lane, skip := range gate.Skip {
		out = append(out, lane, flag(skip))
	}
	return out
}

// peek lists up to n due jobs of each lane the gate lets through: in the
// partitions of the peek window (window.go), in one pipelined round trip,
// and in the others in a second one when those hold fewer than n; or in
// every partition at once, without a backlog or when the gate paces a
// lane.
func (s *Store) peek(ctx context.Context, now time.Time, n int, gate *storage.Gate) ([]storage.Candidate, error) {
	first, rest := s.window.order(len(s.parts), gate == nil || len(gate.Pace) == 0)
	out, full, err := s.peekParts(ctx, now, n, gate, first)
	read := len(first)
	if err == nil && rest != nil && len(out) < n {
		var more []storage.Candidate
		var moreFull int
		more, moreFull, err = s.peekParts(ctx, now, n, gate, rest)
		out, full, read = append(out, more...), full+moreFull, read+len(rest)
	}
	if err != nil {
		return nil, err
	}
	s.window.found(full, read)
	return out, nil
}

// peekParts runs peekScript in the partitions parts, in one pipelined
// round trip: the candidates, and how many partitions held at least n.
func (s *Store) peekParts(ctx context.Context, now time.Time, n int, gate *storage.Gate, parts []int) (out []storage.Candidate, full int, err error) {
	skip := skipArgs(gate)
	calls := make([]scriptCall, len(parts))
	for k, i := range parts {
		p := s.parts[i]
		calls[k] = scriptCall{keys: []string{p.key("lanes"), p.key("fan")}, args: append([]any{ms(now), n, p.lanePrefix(), p.tag}, skip...)}
	}
	cmds, err := s.evalPipelined(ctx, peekScript, calls)
	if err != nil {
		return nil, 0, unavailable(err)
	}
	for k, cmd := range cmds {
		v, _ := cmd.Val().([]any)
		if len(v) >= 3*n {
			full++
		}
		for j := 0; j+2 < len(v); j += 3 {
			lane, _ := v[j].(string)
			id, _ := v[j+1].(string)
			due, _ := strconv.ParseFloat(fmt.Sprint(v[j+2]), 64)
			out = append(out, storage.Candidate{Lane: lane, ID: id, Due: time.UnixMilli(int64(due)), Part: parts[k]})
		}
	}
	return out, full, nil
}

// peekScript lists, for each lane of one partition the gate does not
// skip, up to n jobs due at or before now (the tenants' shares of a lane
// up to n together, each up to its quota first: storage.ShareQuota, then
// the rest of those cut short when the shares held fewer than n). When it finds fewer than n, it
// first expands as many of the partition's oldest fan-out records due by
// now as are missing (luaExpandFan, whatever the gate: their deliveries
// are then held back in their own lanes) and lists again: records are
// expanded as the workers need jobs, not as events arrive. Then it lists
// up to n of the records left, due by now, as the jobs of lane "": they
// take turns with the lanes (storage.PickFair), and the lease script
// expands those picked, so that fanned-out events get their share while
// other lanes are busy. Unless the gate holds every record's lanes
// (fanHeld): then it neither expands nor lists any.
//
//	KEYS: lanes, fan-out index
//	ARGV: now ms, n, lane queue key prefix, partition tag, skip entries
//	      (skipArgs)...
//	returns {lane, id, due ms, lane, id, due ms, ...}
var peekScript = redis.NewScript(luaSkipped + luaShareQuota + luaFanHeld + luaExpandFan + `
local skip = {}
for i = 5, #ARGV, 2 do skip[ARGV[i]] = ARGV[i + 1] end
local n = tonumber(ARGV[2])
local function list()
	local out = {}
	local bases = {}
	for _, lane in ipairs(redis.call('SMEMBERS', KEYS[1])) do
		if not skipped(skip, lane) then
			local base = string.match(lane, '^[^#]*')
			if not bases[base] then bases[base] = {} end
			table.insert(bases[base], lane)
		end
	end
	local function read(lane, from, count)
		local r = redis.call('ZRANGEBYSCORE', ARGV[3] .. lane, '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', from, count)
		for i = 1, #r, 2 do
			out[#out + 1] = lane
			out[#out + 1] = r[i]
			out[#out + 1] = r[i + 1]
		end
		return #r / 2
	end
	for _, lanes in pairs(bases) do
		local q = shareQuota(#lanes, n)
		local found, cut = 0, {}
		for _, lane in ipairs(lanes) do
			local got = read(lane, 0, q)
			found = found + got
			if got == q and q < n then cut[#cut + 1] = lane end
		end
		if found < n then
			for _, lane in ipairs(cut) do read(lane, q, n - found) end
		end
	end
	return out
end
local out = list()
if fanHeld(ARGV[4], skip) then return out end
local missing = n - #out / 3
if missing > 0 then
	local expanded = 0
	for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'LIMIT', 0, missing)) do
		expanded = expanded + math.max(expandFan(ARGV[4], id), 0)
	end
	if expanded > 0 then out = list() end
end
local fan = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, n)
for i = 1, #fan, 2 do
	out[#out + 1] = ''
	out[#out + 1] = fan[i]
	out[#out + 1] = fan[i + 1]
end
return out
`)

// paceKey is the key of the pace lane takes its slots from
// (storage.PaceOf: a source's lanes share one).
func (s *Store) paceKey(lane string) string {
	return "{" + s.opts.Prefix + ":pace:" + storage.PaceOf(lane) + "}"
}

// pace takes, for each paced lane in want, up to that many slots of the
// lane's shared pace, and returns how many each got.
func (s *Store) pace(ctx context.Context, now time.Time, want map[string]int, gate *storage.Gate) (map[string]int, error) {
	var lanes []string
	var calls []scriptCall
	for lane, k := range want {
		r, ok := gate.RateOf(lane)
		if !ok {
			continue
		}
		lanes = append(lanes, lane)
		calls = append(calls, scriptCall{keys: []string{s.paceKey(lane)},
			args: []any{now.UnixMicro(), k, max(r.Interval().Microseconds(), 1), r.Burst()}})
	}
	if len(calls) == 0 {
		return map[string]int{}, nil
	}
	cmds, err := s.evalPipelined(ctx, paceScript, calls)
	if err != nil {
		return nil, unavailable(err)
	}
	out := make(map[string]int, len(lanes))
	for i, cmd := range cmds {
		v, _ := cmd.Val().([]any)
		if len(v) == 2 {
			g, _ := v[0].(int64)
			out[lanes[i]] = int(g)
		}
	}
	return out, nil
}

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

// NextDue implements storage.Store: the first job of every lane the gate
// lets through, and the next slot of the paced ones, in one round trip.
func (s *Store) NextDue(ctx context.Context, gate *storage.Gate) (time.Time, bool, error) {
	if err := s.migrate(ctx); err != nil {
		return time.Time{}, false, err
	}
	skip := skipArgs(gate)
	calls := make([]scriptCall, len(s.parts))
	for i, p := range s.parts {
		calls[i] = scriptCall{keys: []string{p.key("lanes"), p.key("fan")}, args: append([]any{p.lanePrefix(), p.tag}, skip...)}
	}
	heads, err := s.evalPipelined(ctx, headsScript, calls)
	if err != nil {
		return time.Time{}, false, unavailable(err)
	}
	// the pace of every paced lane with a head (a destination's lane
	// follows its source's rate: storage.GateLaneOf), one read per pace
	paces := map[string]*redis.StringCmd{}
	err = s.readPipelined(ctx, func(pipe redis.Pipeliner) error {
		for _, c := range heads {
			v, _ := c.Val().([]any)
			for j := 0; j+1 < len(v); j += 2 {
				lane, _ := v[j].(string)
				if _, ok := gate.RateOf(lane); ok && paces[storage.PaceOf(lane)] == nil {
					paces[storage.PaceOf(lane)] = pipe.Get(ctx, s.paceKey(lane))
				}
			}
		}
		return nil
	})
	if err != nil {
		return time.Time{}, false, unavailable(err)
	}
	var best time.Time
	var ok bool
	for _, c := range heads {
		v, _ := c.Val().([]any)
		for j := 0; j+1 < len(v); j += 2 {
			lane, _ := v[j].(string)
			d, _ := strconv.ParseFloat(fmt.Sprint(v[j+1]), 64)
			due := time.UnixMilli(int64(d))
			if pc, paced := paces[storage.PaceOf(lane)]; paced {
				if tat, err := pc.Int64(); err == nil {
					r, _ := gate.RateOf(lane)
					if next := r.NextSlot(time.UnixMicro(tat)); next.After(due) {
						due = next
					}
				}
			}
			if !ok || due.Before(best) {
				best, ok = due, true
			}
		}
	}
	return best, ok, nil
}

// headsScript lists the first job of each lane of one partition the gate
// does not skip (read only), for NextDue; and the first fan-out record,
// as lane "" (Lease expands it whatever the gate), unless the gate holds
// every record's lanes (fanHeld).
//
//	KEYS: lanes, fan-out index
//	ARGV: lane queue key prefix, partition tag, skip entries (skipArgs)...
//	returns {lane, due ms, ...}
var headsScript = redis.NewScript(luaSkipped + luaFanHeld + `
local skip = {}
for i = 3, #ARGV, 2 do skip[ARGV[i]] = ARGV[i + 1] end
local out = {}
local fan = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
if fan[1] and not fanHeld(ARGV[2], skip) then
	out[1] = ''
	out[2] = fan[2]
end
for _, lane in ipairs(redis.call('SMEMBERS', KEYS[1])) do
	if not skipped(skip, lane) then
		local r = redis.call('ZRANGE', ARGV[1] .. lane, 0, 0, 'WITHSCORES')
		if r[1] then
			out[#out + 1] = lane
			out[#out + 1] = r[2]
		end
	end
end
return out
`)

// Finish implements storage.Store.
func (s *Store) Finish(ctx context.Context, job *storage.Job, out storage.Outcome) error {
	now := s.now()
	p, ok := s.leasePartition(job.Lease)
	if !ok {
		return storage.ErrLeaseLost
	}
	attempts := job.Attempts
	if out.Attempt != nil {
		attempts = append(slices.Clip(attempts), *out.Attempt)
	}
	attJSON, err := json.Marshal(attempts)
	if err != nil {
		return err
	}
	var evJSON, entryJSON, entryStatus, entryOpen string
	due := out.DueAt(now)
	status := out.Result.Status()
	switch status {
	case "":
		return fmt.Errorf("unknown result %d", out.Result)
	case storage.StatusDead: // the DLQ entry keeps the payload; a delivered event keeps its own for a replay
		stripped := job.Event
		stripped.Body, stripped.Headers, stripped.Sealed = nil, nil, nil
		b, err := json.Marshal(stripped)
		if err != nil {
			return err
		}
		evJSON = string(b)
		earlier, err := s.getEntry(ctx, p, job.ID)
		if errors.Is(err, storage.ErrDLQNotFound) {
			earlier, err = nil, nil
		}
		if err != nil {
			return unavailable(err)
		}
		e := storage.NewDLQEntry(job, attempts, out.Error, now, earlier)
		b, err = json.Marshal(e)
		if err != nil {
			return err
		}
		entryJSON, entryStatus, entryOpen = string(b), string(e.Status), flag(e.Status.Open())
	}
	lane := storage.LaneOf(&job.Event)
	if out.MovesApart(&job.Event) {
		apart := job.Event
		apart.Apart = true
		lane, evJSON = storage.LaneOf(&apart), markApart
	}
	keys := p.finishKeys(job.ID, lane)
	args := []any{job.ID, job.Lease, string(status), ms(now), ms(due), attJSON, evJSON, entryJSON, job.Source, lane, entryStatus, entryOpen,
		job.Destination, job.Type, job.Tenant}
	if chain := storage.ChainOf(&job.Event); chain != "" {
		args = append(append(args, flag(storage.PopsChain(&job.Event, out.Result))), p.chainArgs(chain, now)...)
	}
	var v any
	if s.opts.MinReplicas > 0 {
		v, err = s.run(ctx, p, finishScript, keys, args...)
	} else {
		v, err = s.finishes.do(ctx, scriptCall{keys: keys, args: args})
	}
	if err != nil {
		return unavailable(err)
	}
	if n, _ := v.(int64); n == 0 {
		return storage.ErrLeaseLost
	}
	return nil
}

// markApart, as finishOne's event JSON of a queued job, marks the stored
// event Apart (storage.Outcome.Apart): it waits in its tenant's own lane.
const markApart = "apart"

// finishKeys are finishOne's KEYS for job id on lane.
func (p partition) finishKeys(id, lane string) []string {
	return []string{p.ev(id), p.key("inflight"), p.key("done"),
		p.dlqEntry(id), p.key("dlqidx"), p.key("dlqopen"), p.lane(lane), p.key("lanes")}
}

// luaFinishOne defines finishOne(KEYS, ARGV), which records a worker's
// outcome if it still holds the lease; finishScript runs it for one job,
// finishManyScript for several of one partition.
//
//	KEYS: event hash, inflight, done, dlq entry, dlq index, dlq open,
//	      lane queue, lanes
//	ARGV: id, token, the status the job takes (queued|delivered|dead:
//	      storage.Result.Status), now ms, due ms,
//	      attempts JSON, stripped event JSON (dead; "": keep the stored
//	      one; for a queued job markApart: the stored one marked Apart),
//	      dlq entry JSON, source, lane,
//	      dlq entry status, dlq entry open (1|0: storage.DLQStatus.Open),
//	      destination, type, tenant ("": none),
//	      then for a chained job only: pop (1|0: storage.PopsChain), its
//	      chain's arguments (partition.chainArgs)
//	returns 1, or 0 when the lease was lost
//
// A chained job that dies records its chain in its DLQ entry hash, for
// the scripts that settle or remove the entry (luaReleaseEntry). A
// finished job's hash and a DLQ entry's keep the fields a listing filters
// on (src, dst, ty, st, and tn when it has a tenant: storage.IndexEntry), so that DLQList and
// ListDelivered need not read the event or entry JSON to filter.
const luaFinishOne = luaPopChain + `
local function finishOne(KEYS, ARGV)
	if redis.call('HGET', KEYS[1], 'lease') ~= ARGV[2] then return 0 end
	redis.call('SREM', KEYS[2], ARGV[1])
	-- leased from another lane than its own (an event with a tenant that
	-- an earlier version queued in its base lane): out of that one too
	local ln = redis.call('HGET', KEYS[1], 'ln')
	if ln and ln ~= '' and ln ~= ARGV[10] then
		local old = string.sub(KEYS[7], 1, #KEYS[7] - #ARGV[10]) .. ln
		redis.call('ZREM', old, ARGV[1])
		if redis.call('EXISTS', old) == 0 then redis.call('SREM', KEYS[8], ln) end
	end
	local st = ARGV[3]
	if st == 'queued' then
		if ARGV[7] == 'apart' then
			-- into its tenant's own lane (ARGV[10]) for good: the stored
			-- event says so, as the one field json.Unmarshal reads first
			local ev = redis.call('HGET', KEYS[1], 'ev')
			if ev and string.sub(ev, 1, 1) == '{' then
				redis.call('HSET', KEYS[1], 'ev', '{"apart":true,' .. string.sub(ev, 2), 'ln', ARGV[10])
			end
		end
		redis.call('HSET', KEYS[1], 'att', ARGV[6], 'st', 'queued', 'due', ARGV[5], 'lease', '', 'lu', '0')
		redis.call('ZADD', KEYS[7], ARGV[5], ARGV[1])
		redis.call('SADD', KEYS[8], ARGV[10])
		return 1
	end
	if ARGV[7] ~= '' then redis.call('HSET', KEYS[1], 'ev', ARGV[7]) end
	redis.call('HSET', KEYS[1], 'att', ARGV[6], 'st', st, 'fin', ARGV[4], 'due', '0', 'lease', '', 'lu', '0', 'dst', ARGV[13], 'ty', ARGV[14])
	if ARGV[15] ~= '' then redis.call('HSET', KEYS[1], 'tn', ARGV[15]) end
	redis.call('ZREM', KEYS[7], ARGV[1])
	-- a lane left empty leaves the lanes set, which every lease walks (a
	-- tenant's own lanes come and go); whatever queues a job in a lane
	-- adds the lane again
	if redis.call('EXISTS', KEYS[7]) == 0 then redis.call('SREM', KEYS[8], ARGV[10]) end
	redis.call('ZADD', KEYS[3], ARGV[4], ARGV[1])
	if ARGV[16] == '1' then popChain(ARGV[17], ARGV[1], ARGV[18], ARGV[19], ARGV[20], ARGV[21], ARGV[22]) end
	if st == 'dead' then
		local old = redis.call('HGET', KEYS[4], 'at')
		if old then redis.call('ZREM', KEYS[5], ARGV[1]) end
		local counted = dlqField(KEYS[4])
		redis.call('HSET', KEYS[4], 'json', ARGV[8], 'st', ARGV[11], 'at', ARGV[4], 'src', ARGV[9], 'dst', ARGV[13], 'ty', ARGV[14])
		if ARGV[15] ~= '' then redis.call('HSET', KEYS[4], 'tn', ARGV[15]) end
		dlqCount(KEYS[6], counted, -1)
		dlqCount(KEYS[6], dlqField(KEYS[4]), 1)
		if ARGV[17] then redis.call('HSET', KEYS[4], 'chain', ARGV[17]) end
		redis.call('ZADD', KEYS[5], ARGV[4], ARGV[1])
		if ARGV[12] == '1' then
			redis.call('SADD', KEYS[6], ARGV[1])
		else
			redis.call('SREM', KEYS[6], ARGV[1])
		end
	end
	return 1
end
`

// finishScript is finishOne for one job (a Finish that waits for
// replicas: MinReplicas).
var finishScript = redis.NewScript(luaFinishOne + `return finishOne(KEYS, ARGV)`)

// finishManyScript runs finishOne for several jobs of one partition, in
// order, each on its own: one that fails (an error raised by a command)
// answers its error, and the others go on. One script for the batch the
// finish batcher sends to a partition, not one per job: Redis spends more
// on running a script than on the few commands of a finish.
//
//	KEYS: each job's finishOne KEYS, one after the other
//	ARGV: for each job: its number of KEYS, its number of ARGV, its ARGV
//	returns each job's reply (1, or 0 when the lease was lost), or "ERR "
//	        and the error raised
var finishManyScript = redis.NewScript(luaFinishOne + `
local out, k, a = {}, 0, 1
while a <= #ARGV do
	local nk, na = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
	local keys, args = {}, {}
	for i = 1, nk do keys[i] = KEYS[k + i] end
	for i = 1, na do args[i] = ARGV[a + 1 + i] end
	k, a = k + nk, a + 2 + na
	local ok, res = pcall(finishOne, keys, args)
	if ok then
		out[#out + 1] = res
	else
		out[#out + 1] = 'ERR ' .. (type(res) == 'table' and tostring(res.err) or tostring(res))
	end
end
return out
`)

// leasePartition is the partition named by a lease token ("<n>:...").
func (s *Store) leasePartition(token string) (partition, bool) {
	n, _, ok := strings.Cut(token, ":")
	i, err := strconv.Atoi(n)
	if !ok || err != nil || i < 0 || i >= len(s.parts) {
		return partition{}, false
	}
	return s.parts[i], true
}

// QueueHeads implements storage.Store: queueHeadsScript in every
// partition, one pipelined round trip, one ZRANGE per lane plus the
// first fan-out records (fanout.go), reported under their source's lane.
func (s *Store) QueueHeads(ctx context.Context) (map[string]time.Time, error) {
	if err := s.migrate(ctx); err != nil {
		return nil, err
	}
	calls := make([]scriptCall, len(s.parts))
	for i, p := range s.parts {
		calls[i] = scriptCall{keys: []string{p.key("lanes"), p.key("fan")}, args: []any{p.lanePrefix(), p.tag + ":fan:", queueHeadsFan}}
	}
	heads, err := s.evalPipelined(ctx, queueHeadsScript, calls)
	if err != nil {
		return nil, unavailable(err)
	}
	out := map[string]time.Time{}
	for _, c := range heads {
		v, _ := c.Val().([]any)
		for j := 0; j+1 < len(v); j += 2 {
			lane, _ := v[j].(string)
			ms, err := strconv.ParseFloat(fmt.Sprint(v[j+1]), 64)
			if err != nil {
				continue
			}
			due := time.UnixMilli(int64(ms))
			if t, ok := out[lane]; !ok || due.Before(t) {
				out[lane] = due
			}
		}
	}
	return out, nil
}

// queueHeadsFan is how many of a partition's oldest fan-out records
// QueueHeads reads (a GET each) to find their sources: the oldest events
// of the sources among them; a source whose only waiting events are
// records past them is reported by its lanes alone, once expanded.
const queueHeadsFan = 64

// queueHeadsScript lists the first job of each lane of one partition and,
// for the first fan-out records (oldest first), each one's due time under
// its source (the record's second line), as that source's lane (read
// only).
//
//	KEYS: lanes, fan-out index
//	ARGV: lane queue key prefix, fan-out record key prefix, records to read
//	returns {lane, due ms, ...}
var queueHeadsScript = redis.NewScript(`
local out = {}
for _, lane in ipairs(redis.call('SMEMBERS', KEYS[1])) do
	local r = redis.call('ZRANGE', ARGV[1] .. lane, 0, 0, 'WITHSCORES')
	if r[1] then
		out[#out + 1] = lane
		out[#out + 1] = r[2]
	end
end
local fan = redis.call('ZRANGE', KEYS[2], 0, tonumber(ARGV[3]) - 1, 'WITHSCORES')
for i = 1, #fan, 2 do
	local rec = redis.call('GETRANGE', ARGV[2] .. fan[i], 0, 1023)
	local a = string.find(rec, '\n', 1, true)
	local b = a and string.find(rec, '\n', a + 1, true)
	if b then
		out[#out + 1] = string.sub(rec, a + 1, b - 1)
		out[#out + 1] = fan[i + 1]
	end
end
return out
`)
