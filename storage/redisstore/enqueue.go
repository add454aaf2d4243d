package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/storage"
)

// Enqueue implements storage.Store.
func (s *Store) Enqueue(ctx context.Context, ev *storage.Event, dedupeUntil time.Time) (storage.EnqueueResult, error) {
	if err := ctx.Err(); err != nil {
		return storage.EnqueueResult{}, err
	}
	now := s.now()
	jobs, destinations, err := storage.DeliveriesOf(ev)
	if err != nil {
		return storage.EnqueueResult{}, err
	}
	// a lone delivery's payload is stored apart from its job's JSON too
	// (in its hash, directCall): its raw bytes, which Lease hands out as
	// they are, where the job's JSON would carry the body base64-encoded
	// and decode it at every lease
	payload := storage.SharePayload(jobs, true)
	part := s.partIndexForEvent(ev)
	p := s.parts[part]
	ck := ""
	dedupe := "0"
	expires := ms(now) + 1
	if ev.Dedupe {
		ck, dedupe = storage.ClaimKey(ev.Source, ev.EventID), "1"
		expires = max(ms(dedupeUntil), expires)
	}
	touch := "0"
	if s.opts.MinReplicas > 0 {
		touch = "1"
	}
	head := []any{ev.ID, dedupe, expires, ms(now), ck, touch, ev.Source}
	sc, b := enqueueScript, s.enqueues
	var call scriptCall
	fan := fanOut(jobs, payload) && !s.direct
	if fan {
		sc, b = fanEnqueueScript, s.fanEnqueues
		call, err = fanCall(p, ck, ev.ID, ms(now), head, jobs, destinations, payload)
	} else {
		call, err = directCall(p, ck, ev.ID, head, jobs, destinations, payload)
	}
	if err != nil {
		return storage.EnqueueResult{}, err
	}
	var v any
	if s.opts.MinReplicas > 0 {
		v, err = s.run(ctx, p, sc, call.keys, call.args...)
	} else {
		// concurrent requests share round trips, as they share fsyncs in
		// the embedded store
		v, err = b.do(ctx, call)
	}
	if err != nil {
		return storage.EnqueueResult{}, unavailable(err)
	}
	res, _ := v.([]any)
	if len(res) < 2 {
		return storage.EnqueueResult{}, unavailable(fmt.Errorf("unexpected enqueue reply %v", v))
	}
	id, _ := res[1].(string)
	if dup, _ := res[0].(int64); dup == 1 {
		st, err := s.statusOf(ctx, p, id, now)
		if err != nil {
			return storage.EnqueueResult{}, unavailable(err)
		}
		gone, err := s.isErased(ctx, p, id)
		if err != nil {
			return storage.EnqueueResult{}, unavailable(err)
		}
		st = storage.ErasedStatus(gone, st)
		out := storage.EnqueueResult{Duplicate: true, ID: id, Status: st}
		if len(res) == 3 {
			if left, _ := res[2].(int64); left > 0 {
				out.DedupeUntil = now.Add(time.Duration(left) * time.Millisecond)
			}
		}
		return out, nil
	}
	out := storage.EnqueueResult{ID: id, Status: storage.StatusQueued}
	if !fan {
		// a fan-out record's deliveries are not jobs until a lease expands it
		out.Due = storage.NamedDue(jobs, time.UnixMilli(ms(now)), part)
	}
	return out, nil
}

// directCall is the enqueue of an event's deliveries in their usual form
// (enqueueScript): head holds its first arguments (ARGV 1 to 7). The
// payload goes in a payload record the deliveries share, or in the hash
// of the lone delivery (field "pb"): one key fewer an event, and the
// lease reads it with the rest of the hash.
func directCall(p partition, ck, id string, head []any, jobs []storage.Event, destinations []string, payload []byte) (scriptCall, error) {
	keys := []string{p.claim(ck), p.claimCut(), p.key("lanes"), p.deliveries(id), p.events()}
	var pb any = ""
	if payload != nil {
		pb = payload
	}
	args := append(head, storage.EncodeDestinations(destinations), pb)
	for i := range jobs {
		data, err := json.Marshal(&jobs[i])
		if err != nil {
			return scriptCall{}, err
		}
		lane := storage.LaneOf(&jobs[i])
		keys = append(keys, p.ev(jobs[i].ID), p.lane(lane))
		args = append(args, jobs[i].ID, data, lane)
	}
	if chains := chainsOf(jobs); chains != nil {
		args = append(append(args, p.key("waiting"), p.chain("")), chains...)
	}
	if payload != nil && len(jobs) > 1 {
		keys = append(keys, p.payload(id))
	}
	return scriptCall{keys: keys, args: args}, nil
}

// enqueueScript claims (source, event id) and enqueues every delivery of
// the event in one step: an event is never stored with some of its
// deliveries missing.
//
//	KEYS: claim, claim cut (claims.go), lanes, deliveries index, events
//	      index (browse.go), then for each delivery: its event hash, its
//	      lane queue; last, for an event whose deliveries share a payload
//	      record (storage.SharePayload), the payload record
//	ARGV: event id, dedupe (0|1), claim expiry (Unix ms: the window ends
//	      when the caller said, however long the call took), now ms, claim
//	      key text, touch (1: a duplicate rewrites its claim, so that a
//	      following WAIT also covers the original write), source, the
//	      deliveries index ("": none, the default delivery alone), the
//	      payload ("": the jobs keep their own), then for each delivery:
//	      its id, its event JSON, its lane; then, for an event with
//	      ordered deliveries only (chainsOf): the waiting hash, the chain
//	      key prefix, and for each delivery its chain's name ("": not
//	      chained)
//	returns {0, id} when stored, {1, existing id, claim ms left} for a duplicate
//
// A second run of the same call (go-redis resending it after a lost reply)
// finds the first delivery it stored (ids are unique) and answers "stored"
// again. An ordered delivery is appended to its chain, whose name its hash
// records (field "chain": a record whose event cannot be decoded keeps its
// key, see poison); unless it is the chain's head it waits (due 0, in the
// waiting hash, not in its lane queue). The payload goes in the payload
// record, which each delivery names in its hash (field "pl"), or without
// one in the hash of the lone delivery (field "pb"), for the scripts that
// hand out its body (leaseScript).
var enqueueScript = redis.NewScript(luaClaim + luaCounts + `
if redis.call('EXISTS', KEYS[6]) == 1 then return {0, ARGV[1]} end
local dup = claim()
if dup then return dup end
if ARGV[8] ~= '' then redis.call('SET', KEYS[4], ARGV[8]) end
redis.call('ZADD', KEYS[5], 0, ARGV[1])
local n = math.floor((#KEYS - 5) / 2)
local pf, pv = nil, nil
if #KEYS > 5 + 2 * n then
	pf, pv = 'pl', KEYS[#KEYS]
	redis.call('SET', pv, ARGV[9])
elseif ARGV[9] ~= '' then
	pf, pv = 'pb', ARGV[9]
end
local ordered = #ARGV > 9 + 3 * n
local lanes = {}
for i = 0, n - 1 do
	local id, lane, k = ARGV[10 + 3 * i], ARGV[12 + 3 * i], KEYS[6 + 2 * i]
	local chain = ordered and ARGV[12 + 3 * n + i] or ''
	local due = ARGV[4]
	if chain ~= '' and redis.call('RPUSH', ARGV[11 + 3 * n] .. chain, id) > 1 then
		due = '0'
		redis.call('HSET', ARGV[10 + 3 * n], id, lane)
		waitCount(ARGV[10 + 3 * n], lane, 1)
	else
		redis.call('ZADD', KEYS[7 + 2 * i], due, id)
	end
	if pf then
		redis.call('HSET', k, 'ev', ARGV[11 + 3 * i], 'st', 'queued', 'due', due, 'rs', '0', 'att', '[]', 'ck', ARGV[5], 'src', ARGV[7], pf, pv)
	else
		redis.call('HSET', k, 'ev', ARGV[11 + 3 * i], 'st', 'queued', 'due', due, 'rs', '0', 'att', '[]', 'ck', ARGV[5], 'src', ARGV[7])
	end
	if chain ~= '' then redis.call('HSET', k, 'chain', chain) end
	lanes[i + 1] = lane
end
redis.call('SADD', KEYS[3], unpack(lanes))
return {0, ARGV[1]}
`)

// statusOf is the status of event id in partition p, for duplicate
// answers (see storage.EffectiveStatus, storage.EventStatus).
func (s *Store) statusOf(ctx context.Context, p partition, id string, now time.Time) (storage.Status, error) {
	destinations, err := s.destinationsOf(ctx, p, id)
	if err != nil {
		return "", err
	}
	return storage.EventStatus(id, destinations, func(id string) (storage.Status, error) {
		vals, err := s.c.HMGet(ctx, p.ev(id), "st", "lu").Result()
		if err != nil {
			return "", err
		}
		if st, ok := vals[0].(string); ok && st != "" {
			lu, _ := strconv.ParseInt(fmt.Sprint(vals[1]), 10, 64)
			return storage.EffectiveStatus(storage.Status(st), fromMS(lu), false, now), nil
		}
		n, err := s.c.Exists(ctx, p.dlqEntry(id)).Result()
		if err != nil {
			return "", err
		}
		return storage.EffectiveStatus("", time.Time{}, n > 0, now), nil
	})
}

// destinationsOf reads the deliveries index of event id in partition p
// (nil: none, its one delivery is the default's), after expanding the
// event's fan-out record if it still has one (expandScript): every read
// of an event by its id starts here, and then finds its usual keys.
func (s *Store) destinationsOf(ctx context.Context, p partition, id string) ([]string, error) {
	v, err := s.eval(ctx, expandScript, []string{p.fan(id), p.key("fan"), p.deliveries(id)}, p.tag, id)
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	str, _ := v.(string)
	return storage.DecodeDestinations(str), err
}

// chainsOf lists, for an event with ordered deliveries, the name of each
// delivery's chain ("": not chained), as enqueueScript takes them; nil
// when none is chained (the script's arguments are then as they were
// before ordering existed).
func chainsOf(jobs []storage.Event) []any {
	var out []any
	for i := range jobs {
		if name := storage.ChainOf(&jobs[i]); name != "" {
			if out == nil {
				out = make([]any, len(jobs))
				for k := range out {
					out[k] = ""
				}
			}
			out[i] = name
		}
	}
	return out
}
