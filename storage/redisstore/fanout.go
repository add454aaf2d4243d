package redisstore

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/storage"
)

// Fan-out records. An event with several deliveries none of which is
// ordered is stored by the enqueue script as one record, beside its claim
// and in the same atomic step: its deliveries, payload record and
// deliveries index, written once, not as a job hash and a lane queue entry
// per delivery (the fan-out target of docs/reference.md: three destinations cost at most 1.3x one):
//
//	{hookline:7}:fan                zset event id -> due ms: the events still in that form
//	{hookline:7}:fan:<event id>     the record (fanRecord): due, source, claim key, deliveries
//	                                index, deliveries (id, lane, event JSON, a line each), payload record
//	{hookline:7}:fanlanes           hash: the lanes of a record's deliveries (space-separated) ->
//	                                how many records have those lanes, for the counts
//
// luaExpandFan turns such a record into the event's usual keys (a job hash
// and a lane queue entry per delivery, as enqueueScript writes them, the
// payload record, the deliveries index) and deletes it, in one step: an
// event is in one form or the other, never with some deliveries missing,
// whatever fails when. Every reader expands before it reads, or counts the
// record as its deliveries:
//
//   - Lease expands a partition's oldest records when it finds fewer due
//     jobs there than it wants, as many as are missing (peekScript), and
//     otherwise lets them take turns with the lanes (lane "", expanded by
//     leaseScript when picked): the deliveries then wait in their own
//     lanes, each held back on its own. Records are expanded as the
//     workers need jobs, not as events arrive: the cost of a delivery's
//     keys is paid with its delivery, not at ingest. While the gate skips
//     every lane of every record of the partition (its sources held: a
//     pause that accepts), none is expanded (fanHeld): the records wait
//     as they were stored, at no cost, and ingest is not slowed by an
//     expansion nobody needs yet; when only some are held, the oldest are
//     expanded whatever the gate, each delivery then held in its lane;
//   - NextDue reports a record as due (headsScript), unless fanHeld;
//   - Counts and QueueByLane count its deliveries as queued in their
//     lanes (the fanlanes counters: no record is read);
//   - every read of an event by its id goes through destinationsOf, which
//     expands it first (Lookup, a duplicate's status, Erase, Cleanup), and
//     findEvent knows an event by its record;
//   - the other readers (Finish, the DLQ, replays, poison salvage) only
//     meet jobs that were leased, hence expanded.
//
// An event with ordered deliveries is stored in the usual form at once
// (its chains take their places at enqueue), as is an event with one
// delivery.

// fan is the key of event id's fan-out record in p.
func (p partition) fan(id string) string { return p.tag + ":fan:" + id }

// fanOut reports whether an event's jobs (DeliveriesOf's, after
// SharePayload) are stored as a fan-out record: several deliveries
// sharing a payload record, none of them ordered.
func fanOut(jobs []storage.Event, payload []byte) bool {
	return len(jobs) > 1 && payload != nil && chainsOf(jobs) == nil
}

// fanCall is the enqueue of an event's fan-out record (fanEnqueueScript),
// due at due (Unix ms): head holds its first arguments (fanEnqueueScript's
// ARGV 1 to 7).
func fanCall(p partition, ck, id string, due int64, head []any, jobs []storage.Event, destinations []string, payload []byte) (scriptCall, error) {
	ds := make([]fanDelivery, len(jobs))
	lanes := make([]string, len(jobs))
	for i := range jobs {
		data, err := json.Marshal(&jobs[i])
		if err != nil {
			return scriptCall{}, err
		}
		lanes[i] = storage.LaneOf(&jobs[i])
		ds[i] = fanDelivery{id: jobs[i].ID, lane: lanes[i], doc: data}
	}
	keys := []string{p.claim(ck), p.claimCut(), p.fan(id), p.key("fan"), p.ev(jobs[0].ID), p.key("fanlanes"), p.events()}
	rec := fanRecord(due, jobs[0].Source, ck, storage.EncodeDestinations(destinations), ds, payload)
	// no lane holds a space
	args := append(head, rec, strings.Join(lanes, " "))
	return scriptCall{keys: keys, args: args}, nil
}

// fanDelivery is one delivery of a fan-out record: its job's id, lane and
// event JSON.
type fanDelivery struct {
	id, lane string
	doc      []byte
}

// fanRecord encodes a fan-out record, one string (one SET, the cheapest
// write): five lines (due ms, source, then the byte lengths of the claim
// key, the deliveries index and the deliveries), then those three, then
// the payload record to the end. The deliveries are a line each of id,
// lane and event JSON, one after the other: none of them holds a newline
// (encoding/json escapes control characters), nor does a source; the
// claim key (a provider's event id in it) may, hence the lengths.
func fanRecord(due int64, src, ck, dests string, ds []fanDelivery, payload []byte) []byte {
	n := len(ds) - 1
	for _, d := range ds {
		n += len(d.id) + len(d.lane) + len(d.doc) + 2
	}
	out := make([]byte, 0, 64+len(src)+len(ck)+len(dests)+n+len(payload))
	out = strconv.AppendInt(out, due, 10)
	out = append(out, '\n')
	out = append(out, src...)
	out = append(out, '\n')
	for _, l := range []int{len(ck), len(dests), n} {
		out = strconv.AppendInt(out, int64(l), 10)
		out = append(out, '\n')
	}
	out = append(out, ck...)
	out = append(out, dests...)
	for i, d := range ds {
		if i > 0 {
			out = append(out, '\n')
		}
		out = append(out, d.id...)
		out = append(out, '\n')
		out = append(out, d.lane...)
		out = append(out, '\n')
		out = append(out, d.doc...)
	}
	return append(out, payload...)
}

// fanPayloadAt is where the payload record starts in fan-out record rec
// (fanRecord; expandFan reads it the same way), false if rec does not
// parse.
func fanPayloadAt(rec string) (int, bool) {
	pos := 0
	at := 0
	for i := range 5 {
		e := strings.IndexByte(rec[pos:], '\n')
		if e < 0 {
			return 0, false
		}
		if i >= 2 {
			n, err := strconv.Atoi(rec[pos : pos+e])
			if err != nil || n < 0 || n > len(rec) {
				return 0, false
			}
			at += n
		}
		pos += e + 1
	}
	at += pos
	if at > len(rec) {
		return 0, false
	}
	return at, true
}

// fanEnqueueScript claims (source, event id) and stores the event as a
// fan-out record, in one step (enqueueScript's claim, luaClaim).
//
//	KEYS: claim, claim cut (claims.go), fan-out record, fan-out index, the
//	      first delivery's event hash, fanlanes, events index
//	ARGV: enqueueScript's first seven (event id, dedupe, claim expiry, now
//	      ms, claim key text, touch, source), the record (fanRecord), the
//	      lanes of its deliveries (space-separated)
//	returns enqueueScript's reply
//
// A second run of the same call (go-redis resending it after a lost
// reply) finds the record, or the first delivery it was expanded into,
// and answers "stored" again.
var fanEnqueueScript = redis.NewScript(luaClaim + `
if redis.call('EXISTS', KEYS[3], KEYS[5]) > 0 then return {0, ARGV[1]} end
local dup = claim()
if dup then return dup end
redis.call('SET', KEYS[3], ARGV[8])
redis.call('ZADD', KEYS[4], ARGV[4], ARGV[1])
redis.call('HINCRBY', KEYS[6], ARGV[9], 1)
redis.call('ZADD', KEYS[7], 0, ARGV[1])
return {0, ARGV[1]}
`)

// luaExpandFan defines expandFan(tag, id): it turns event id's fan-out
// record in the partition of hash tag tag (if it has one) into the
// event's usual keys, as enqueueScript writes them for deliveries that
// are not ordered: the payload record, the deliveries index, and for each
// delivery its job hash (queued, due when the event was enqueued) and its
// lane queue entry; then it deletes the record. It returns the number of
// deliveries written (0: no record; -1: a record that does not parse,
// taken out of the index and kept for inspection).
const luaExpandFan = `
local function expandFan(tag, id)
	local fk = tag .. ':fan:' .. id
	local rec = redis.call('GET', fk)
	if not rec then
		redis.call('ZREM', tag .. ':fan', id)
		return 0
	end
	-- read it all first: a record that does not parse (never written so)
	-- is left as it is, out of the index, rather than expanded in part or
	-- blocking the partition's leases
	local h, pos = {}, 1
	for i = 1, 5 do
		local e = string.find(rec, '\n', pos, true)
		if not e then
			redis.call('ZREM', tag .. ':fan', id)
			return -1
		end
		h[i] = string.sub(rec, pos, e - 1)
		pos = e + 1
	end
	local ckl, dl, nl = tonumber(h[3]), tonumber(h[4]), tonumber(h[5])
	if not ckl or not dl or not nl or pos + ckl + dl + nl - 1 > #rec then
		redis.call('ZREM', tag .. ':fan', id)
		return -1
	end
	local ck, dests = string.sub(rec, pos, pos + ckl - 1), string.sub(rec, pos + ckl, pos + ckl + dl - 1)
	pos = pos + ckl + dl
	local d = string.sub(rec, pos, pos + nl - 1)
	local payload = string.sub(rec, pos + nl)
	local jobs, lanes, docs = {}, {}, {}
	pos = 1
	while pos <= #d do
		local a = string.find(d, '\n', pos, true)
		local b = a and string.find(d, '\n', a + 1, true)
		if not b then
			redis.call('ZREM', tag .. ':fan', id)
			return -1
		end
		local c = string.find(d, '\n', b + 1, true) or (#d + 1)
		jobs[#jobs + 1] = string.sub(d, pos, a - 1)
		lanes[#lanes + 1] = string.sub(d, a + 1, b - 1)
		docs[#docs + 1] = string.sub(d, b + 1, c - 1)
		pos = c + 1
	end
	if #jobs == 0 then
		redis.call('ZREM', tag .. ':fan', id)
		return -1
	end
	local pl, due = tag .. ':pl:' .. id, h[1]
	redis.call('SET', pl, payload)
	if dests ~= '' then redis.call('SET', tag .. ':dests:' .. id, dests) end
	for i = 1, #jobs do
		redis.call('HSET', tag .. ':ev:' .. jobs[i], 'ev', docs[i], 'st', 'queued', 'due', due, 'rs', '0', 'att', '[]', 'ck', ck, 'src', h[2], 'pl', pl)
		redis.call('ZADD', tag .. ':q:' .. lanes[i], due, jobs[i])
	end
	redis.call('SADD', tag .. ':lanes', unpack(lanes))
	redis.call('DEL', fk)
	redis.call('ZREM', tag .. ':fan', id)
	local combo = table.concat(lanes, ' ')
	if redis.call('HINCRBY', tag .. ':fanlanes', combo, -1) <= 0 then redis.call('HDEL', tag .. ':fanlanes', combo) end
	return #jobs
end
`

// luaFanHeld defines fanHeld(tag, skip) (after luaSkipped): whether the
// gate's skip entries skip every lane of every fan-out record of the
// partition of hash tag tag, read from its fanlanes counters (a field per
// set of lanes that some records have). No counters (no records, or a
// store whose counters are not built yet): false, so that records are
// never left waiting for want of a counter.
const luaFanHeld = `
local function fanHeld(tag, skip)
	local combos = redis.call('HKEYS', tag .. ':fanlanes')
	if #combos == 0 then return false end
	for _, combo in ipairs(combos) do
		for lane in string.gmatch(combo, '[^ ]+') do
			if not skipped(skip, lane) then return false end
		end
	end
	return true
end
`

// luaFanLanes defines fanLanes(tag, counts): it adds to counts (lane ->
// jobs) the deliveries of the fan-out records of the partition of hash
// tag tag, from its fanlanes counters (read only).
const luaFanLanes = `
local function fanLanes(tag, counts)
	local h = redis.call('HGETALL', tag .. ':fanlanes')
	for i = 1, #h, 2 do
		local n = tonumber(h[i + 1])
		for lane in string.gmatch(h[i], '[^ ]+') do counts[lane] = (counts[lane] or 0) + n end
	end
end
`

// expandScript expands one event's fan-out record, if it has one
// (luaExpandFan), and returns its deliveries index.
//
//	KEYS: fan-out record, fan-out index, deliveries index
//	ARGV: partition tag, event id
//	returns the deliveries index (false: none)
var expandScript = redis.NewScript(luaExpandFan + `
if redis.call('EXISTS', KEYS[1]) == 1 then expandFan(ARGV[1], ARGV[2]) end
return redis.call('GET', KEYS[3])
`)
