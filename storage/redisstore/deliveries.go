package redisstore

import (
	"context"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/storage"
)

// An event with several deliveries (or a non-default one) keeps its
// deliveries index ({hookline:7}:dests:<id>) while a hash or a DLQ entry
// of one of its deliveries is kept: the event list, Lookup and erasure
// read the deliveries through it. An earlier version deleted it with the
// event's last hash, DLQ entries of named destinations left or not, and a
// node of that version sharing the store may still do so; IndexEvents,
// which Open runs and a tenant's erasure runs first, gives it back from
// the DLQ entries its scan meets (restoreDeliveries).

// An earlier version also deleted the (source, event id) index
// ({hookline:7}:ids:<claim key>) with the event's last hash: once its claim
// ended, Lookup and DELETE by the provider's id no longer found an event
// whose DLQ entry was kept. The first IndexEvents of this version writes
// it again from every entry (restoreIDs), once (the marker
// {hookline:meta}:ids-restored); a node of an earlier version still
// deletes it with the last hash during a rolling upgrade.

// idsRestoredMarker is the key saying that restoreIDs went over every
// DLQ entry.
func (s *Store) idsRestoredMarker() string { return "{" + s.opts.Prefix + ":meta}:ids-restored" }

// restoreIDs writes the (source, event id) index of each entry's event
// (restoreIDScript), the entries' JSON read in one round trip and the
// scripts sent in another. An event without a provider's id (its event id
// is its internal id) never had one.
func (s *Store) restoreIDs(ctx context.Context, entries []namedEntry) error {
	if len(entries) == 0 {
		return nil
	}
	docs := make([]*redis.StringCmd, len(entries))
	err := s.readPipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, e := range entries {
			docs[i] = pipe.HGet(ctx, e.p.dlqEntry(e.id), "json")
		}
		return nil
	})
	if err != nil {
		return err
	}
	var calls []scriptCall
	for i, e := range entries {
		ev := storage.EventIDOfDelivery(e.id)
		ck := claimKeyFrom("", docs[i].Val())
		if _, eventID, ok := storage.SplitClaimKey(ck); ok && eventID != "" && eventID != ev {
			calls = append(calls, scriptCall{[]string{e.p.ids(ck), e.p.dlqEntry(e.id)}, []any{ev}})
		}
	}
	if len(calls) == 0 {
		return nil
	}
	_, err = s.evalPipelined(ctx, restoreIDScript, calls)
	return err
}

// restoreIDScript writes an event's (source, event id) index while its
// DLQ entry is there, unless it names a later event (ids are time-ordered:
// the later event took the provider's id, as it would have at enqueue).
//
//	KEYS: the (source, event id) index, the entry
//	ARGV: the event id
//	returns 1 if written
var restoreIDScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
local cur = redis.call('GET', KEYS[1])
if cur and cur >= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
return 1
`)

// namedEntry is a DLQ entry (of a named destination, for
// restoreDeliveries) the indexing met.
type namedEntry struct {
	p  partition
	id string // the entry's (and its delivery's) id
}

// restoreDeliveries makes sure the deliveries index of each entry's event
// holds the entry's destination: it reads the indexes in one pipelined
// round trip, and runs restoreDeliveryScript for each one that is missing
// or misses the destination (none, unless a version that deleted it ran).
func (s *Store) restoreDeliveries(ctx context.Context, entries []namedEntry) error {
	if len(entries) == 0 {
		return nil
	}
	dests := make([]*redis.StringCmd, len(entries))
	err := s.readPipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, e := range entries {
			dests[i] = pipe.Get(ctx, e.p.deliveries(storage.EventIDOfDelivery(e.id)))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i, e := range entries {
		d := storage.DestinationOfDelivery(e.id)
		if slices.Contains(storage.DecodeDestinations(dests[i].Val()), d) {
			continue
		}
		ev := storage.EventIDOfDelivery(e.id)
		keys := []string{e.p.deliveries(ev), e.p.dlqEntry(e.id), e.p.ev(ev), e.p.dlqEntry(ev)}
		if _, err := s.eval(ctx, restoreDeliveryScript, keys, d, storage.DefaultDestination); err != nil {
			return err
		}
	}
	return nil
}

// restoreDeliveryScript adds a DLQ entry's destination to its event's
// deliveries index if the entry is still there and the index misses it;
// an index made anew starts with the default destination if the event's
// default delivery left its hash or DLQ entry.
//
//	KEYS: deliveries index, the entry, the default delivery's hash and entry
//	ARGV: the entry's destination, the default destination's name
//	returns 1 if the index was written
var restoreDeliveryScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
local v = redis.call('GET', KEYS[1])
if not v then
	v = ''
	if redis.call('EXISTS', KEYS[3], KEYS[4]) > 0 then v = ARGV[2] end
end
for d in string.gmatch(v, '[^,]+') do
	if d == ARGV[1] then return 0 end
end
if v ~= '' then v = v .. ',' end
redis.call('SET', KEYS[1], v .. ARGV[1])
return 1
`)
