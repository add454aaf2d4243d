package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/storage"
)

// Lookup implements storage.Store.
func (s *Store) Lookup(ctx context.Context, source, eventID string) (*storage.EventInfo, error) {
	now := s.now()
	ck := storage.ClaimKey(source, eventID)
	p := s.partitionOf(ck)
	// the claim names the event while it is kept (claims.go); an event of
	// layout 1 whose claim ended is named by its ids key
	id, err := s.c.Get(ctx, p.claim(ck)).Result()
	id = claimedID(id)
	if errors.Is(err, redis.Nil) {
		id, err = s.c.Get(ctx, p.ids(ck)).Result()
	}
	if errors.Is(err, redis.Nil) {
		// events without a provider id are found by their internal id
		id, p, err = eventID, s.partitionOf(eventID), nil
	}
	if err != nil {
		return nil, unavailable(err)
	}
	info, err := s.lookupIn(ctx, p, id, source, now)
	if !errors.Is(err, storage.ErrNotFound) {
		return info, err
	}
	// an event with ordered deliveries lives by its order key
	// (partitionForEvent): wherever another partition knows it
	found, err := s.findEvent(ctx, ck, eventID)
	if err != nil {
		return nil, err
	}
	for _, c := range found {
		if c.p == p && c.id == id {
			continue
		}
		if info, err := s.lookupIn(ctx, c.p, c.id, source, now); !errors.Is(err, storage.ErrNotFound) {
			return info, err
		}
	}
	return nil, storage.ErrNotFound
}

// lookupIn is Lookup's answer for event id of source in partition p.
func (s *Store) lookupIn(ctx context.Context, p partition, id, source string, now time.Time) (*storage.EventInfo, error) {
	destinations, err := s.destinationsOf(ctx, p, id)
	if err != nil {
		return nil, unavailable(err)
	}
	return storage.LookupEvent(id, destinations, func(id string) (*storage.EventInfo, error) {
		return s.deliveryInfo(ctx, p, id, source, now)
	})
}

// named is an event a partition knows by the names given to findEvent.
type named struct {
	p  partition
	id string
}

// findEvent asks every partition, in one pipeline, for the event claimed
// under claim key ck, or else for eventID as an internal id (an event
// without a provider id): each partition and id that names one, in
// Lookup's order of preference (the claims, the ids keys of layout 1, the
// id's own records), for the caller to try in turn: a claim kept to its
// window's end may name an event that is gone, where another partition
// (an ordered event's, placed by its order key) holds one that is kept.
// None when no partition knows it.
func (s *Store) findEvent(ctx context.Context, ck, eventID string) ([]named, error) {
	type read struct {
		claim, ids *redis.StringCmd
		own        *redis.IntCmd
	}
	reads := make([]read, len(s.parts))
	err := s.readPipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, q := range s.parts {
			reads[i] = read{pipe.Get(ctx, q.claim(ck)), pipe.Get(ctx, q.ids(ck)),
				pipe.Exists(ctx, q.ev(eventID), q.deliveries(eventID), q.dlqEntry(eventID), q.fan(eventID))}
		}
		return nil
	})
	if err != nil {
		return nil, unavailable(err)
	}
	var out []named
	for _, pick := range []func(r read) string{
		func(r read) string { return claimedID(r.claim.Val()) },
		func(r read) string { return r.ids.Val() },
		func(r read) string {
			if r.own.Val() > 0 {
				return eventID
			}
			return ""
		},
	} {
		for i, r := range reads {
			if v := pick(r); v != "" && !slices.Contains(out, named{s.parts[i], v}) {
				out = append(out, named{s.parts[i], v})
			}
		}
	}
	return out, nil
}

// findInternal is the partition holding the event whose internal id is id
// (found false: nothing of it is stored), as findEvent's last resort does.
func (s *Store) findInternal(ctx context.Context, id string) (p partition, found bool, err error) {
	own := make([]*redis.IntCmd, len(s.parts))
	_, err = s.c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, q := range s.parts {
			own[i] = pipe.Exists(ctx, q.ev(id), q.deliveries(id), q.dlqEntry(id), q.fan(id))
		}
		return nil
	})
	if err != nil {
		return partition{}, false, unavailable(err)
	}
	for i, c := range own {
		if c.Val() > 0 {
			return s.parts[i], true, nil
		}
	}
	return partition{}, false, nil
}

// deliveryInfo is what Lookup reports of the delivery id of an event of
// source in partition p: from its hash, or its DLQ entry once the hash is
// gone (nil: neither is left).
func (s *Store) deliveryInfo(ctx context.Context, p partition, id, source string, now time.Time) (*storage.EventInfo, error) {
	h, err := s.getEvent(ctx, p, id)
	if err != nil {
		return nil, unavailable(err)
	}
	if info := deliveryInfoOf(h, nil, source, now); info != nil {
		return info, nil
	}
	e, err := s.getEntry(ctx, p, id)
	if err != nil && !errors.Is(err, storage.ErrDLQNotFound) {
		return nil, unavailable(err)
	}
	return deliveryInfoOf(nil, e, source, now), nil
}

// deliveryInfoOf is what Lookup reports of a delivery of an event of
// source from its hash h, or else its DLQ entry e (either nil when
// absent; nil: neither is of source).
func deliveryInfoOf(h *eventHash, e *storage.DLQEntry, source string, now time.Time) *storage.EventInfo {
	if h != nil && h.ev.Source == source {
		st := storage.EffectiveStatus(h.status, h.lu, false, now)
		return storage.NewEventInfo(&h.ev, h.attempts, st, h.due, h.fin)
	}
	if e != nil && e.Source == source {
		return storage.DeadEventInfo(e)
	}
	return nil
}

// eventHash is an event's hash as stored.
type eventHash struct {
	ev       storage.Event
	attempts []storage.Attempt
	status   storage.Status
	due, fin time.Time
	lu       time.Time
}

func (s *Store) getEvent(ctx context.Context, p partition, id string) (*eventHash, error) {
	vals, err := s.c.HMGet(ctx, p.ev(id), hashFields...).Result()
	if err != nil {
		return nil, err
	}
	return parseEvent(id, hashMap(vals))
}

// hashFields are the fields of an event's hash that its readers other
// than the lease use (parseEvent's, and the source): not its payload
// (field "pb"), which can be large.
var hashFields = []string{"ev", "st", "att", "due", "fin", "lu", "src"}

// hashMap is the map of the fields HMGET read of hashFields, those
// missing left out (none: the hash is gone).
func hashMap(vals []any) map[string]string {
	m := make(map[string]string, len(vals))
	for i, v := range vals {
		if str, ok := v.(string); ok && i < len(hashFields) {
			m[hashFields[i]] = str
		}
	}
	return m
}

// parseEvent reads the hash m of event id (nil: there is none).
func parseEvent(id string, m map[string]string) (*eventHash, error) {
	if len(m) == 0 || m["ev"] == "" {
		return nil, nil
	}
	h := &eventHash{status: storage.Status(m["st"])}
	if err := json.Unmarshal([]byte(m["ev"]), &h.ev); err != nil {
		return nil, fmt.Errorf("decoding event %s: %v", id, err)
	}
	if a := m["att"]; a != "" {
		if err := json.Unmarshal([]byte(a), &h.attempts); err != nil {
			return nil, fmt.Errorf("decoding attempts of %s: %v", id, err)
		}
	}
	num := func(k string) time.Time { v, _ := strconv.ParseInt(m[k], 10, 64); return fromMS(v) }
	h.due, h.fin, h.lu = num("due"), num("fin"), num("lu")
	return h, nil
}

// recountLanes is QueueByLane counted from the lane queues (Recount):
// only the records of jobs due later (leased, or waiting for a retry)
// are read.
func (s *Store) recountLanes(ctx context.Context) (map[string]storage.Counts, error) {
	now := ms(s.now())
	calls := make([]scriptCall, len(s.parts))
	for i, p := range s.parts {
		calls[i] = scriptCall{keys: []string{p.key("lanes"), p.key("waiting")}, args: []any{now, p.lanePrefix(), p.evPrefix(), p.tag}}
	}
	cmds, err := s.evalPipelined(ctx, laneCountsScript, calls)
	if err != nil {
		return nil, unavailable(err)
	}
	out := map[string]storage.Counts{}
	for _, cmd := range cmds {
		v, _ := cmd.Val().([]any)
		for j := 0; j+2 < len(v); j += 3 {
			lane, _ := v[j].(string)
			jobs, _ := v[j+1].(int64)
			leased, _ := v[j+2].(int64)
			key := lane
			n := out[key]
			n.InFlight += int(leased)
			n.Queued += int(jobs - leased)
			out[key] = n
		}
	}
	return out, nil
}

// laneCountsScript counts the jobs of each lane of one partition, and the
// leased ones among them (read only). Only jobs due after now can be
// leased, so only those records are read. The chained jobs waiting behind
// their head count as their lane's (queued), as do the deliveries of the
// partition's fan-out records (luaFanLanes).
//
//	KEYS: lanes, waiting
//	ARGV: now ms, lane queue key prefix, event key prefix, partition tag
//	returns {lane, jobs, leased, lane, jobs, leased, ...}
var laneCountsScript = redis.NewScript(luaFanLanes + `
local waiting = {}
for _, lane in ipairs(redis.call('HVALS', KEYS[2])) do waiting[lane] = (waiting[lane] or 0) + 1 end
fanLanes(ARGV[4], waiting)
local lanes = redis.call('SMEMBERS', KEYS[1])
local listed = {}
for _, lane in ipairs(lanes) do listed[lane] = true end
for lane in pairs(waiting) do
	if not listed[lane] then lanes[#lanes + 1] = lane end
end
local out = {}
for _, lane in ipairs(lanes) do
	local q = ARGV[2] .. lane
	local total = redis.call('ZCARD', q) + (waiting[lane] or 0)
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

// pausedKey holds the source pauses of earlier versions (a set of
// source names, read as refuse-mode pauses); pausesKey the pauses (a hash
// of storage.PauseKey to storage.EncodePause). Both are small and share
// one slot, outside the partitions.
func (s *Store) pausedKey() string { return "{" + s.opts.Prefix + ":meta}:paused" }
func (s *Store) pausesKey() string { return "{" + s.opts.Prefix + ":meta}:pauses" }

// tenantPausesKey holds the tenants' pauses (storage.IsTenantPauseKey),
// beside the others in their slot: a node of a build from before them
// reads pausesKey only.
func (s *Store) tenantPausesKey() string { return "{" + s.opts.Prefix + ":meta}:tenantpauses" }

// pausesOf is the hash of the pause stored under key.
func (s *Store) pausesOf(key string) string {
	if storage.IsTenantPauseKey(key) {
		return s.tenantPausesKey()
	}
	return s.pausesKey()
}

// SetPause implements storage.Store.
func (s *Store) SetPause(ctx context.Context, p storage.Pause) error {
	_, err := s.c.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.HSet(ctx, s.pausesOf(p.Key()), p.Key(), storage.EncodePause(p))
		pipe.SRem(ctx, s.pausedKey(), p.Key())
		return nil
	})
	return unavailable(err)
}

// resumeScript removes a pause (new or legacy) and returns it:
//
//	KEYS[1] pauses hash, KEYS[2] legacy set; ARGV[1] key
//	returns false (none), "" (legacy) or the stored value
var resumeScript = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v then
	redis.call('HDEL', KEYS[1], ARGV[1])
	redis.call('SREM', KEYS[2], ARGV[1])
	return v
end
if redis.call('SREM', KEYS[2], ARGV[1]) == 1 then return '' end
return false
`)

// Resume implements storage.Store.
func (s *Store) Resume(ctx context.Context, key string) (storage.Pause, bool, error) {
	v, err := resumeScript.Run(ctx, s.c, []string{s.pausesOf(key), s.pausedKey()}, key).Text()
	if errors.Is(err, redis.Nil) {
		return storage.Pause{}, false, nil
	}
	if err != nil {
		return storage.Pause{}, false, unavailable(err)
	}
	p, err := storage.DecodePause(key, []byte(v))
	return p, err == nil, err
}

// Pauses implements storage.Store.
func (s *Store) Pauses(ctx context.Context) ([]storage.Pause, error) {
	var (
		legacy          *redis.StringSliceCmd
		pauses, tenants *redis.MapStringStringCmd
	)
	_, err := s.c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		legacy = pipe.SMembers(ctx, s.pausedKey())
		pauses = pipe.HGetAll(ctx, s.pausesKey())
		tenants = pipe.HGetAll(ctx, s.tenantPausesKey())
		return nil
	})
	if err != nil {
		return nil, unavailable(err)
	}
	seen := map[string]bool{}
	var out []storage.Pause
	for _, m := range []map[string]string{pauses.Val(), tenants.Val()} {
		for k, v := range m {
			p, err := storage.DecodePause(k, []byte(v))
			if err != nil {
				return nil, err
			}
			seen[k] = true
			out = append(out, p)
		}
	}
	for _, k := range legacy.Val() {
		if !seen[k] {
			out = append(out, storage.Pause{Source: k})
		}
	}
	storage.SortPauses(out)
	return out, nil
}

// expirePauseScript deletes a pause if it is still the given value:
//
//	KEYS[1] pauses hash; ARGV[1] key, ARGV[2] value; returns 1 if deleted
var expirePauseScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
	return redis.call('HDEL', KEYS[1], ARGV[1])
end
return 0
`)

// ExpirePause implements storage.Store.
func (s *Store) ExpirePause(ctx context.Context, p storage.Pause) (bool, error) {
	n, err := expirePauseScript.Run(ctx, s.c, []string{s.pausesOf(p.Key())}, p.Key(), storage.EncodePause(p)).Int()
	if err != nil {
		return false, unavailable(err)
	}
	return n == 1, nil
}
