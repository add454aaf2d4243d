package redisstore

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/storage"
)

// ListEvents implements storage.Store. A page reads the partitions'
// events indexes (eventsindex.go) from its cursor on, newest first, a
// chunk of ids at a time, and merges them: at most f.ScanBudget() events,
// each read as Lookup reads it, 100 at a time in a few pipelined round
// trips, whatever the store holds. Until an events index was complete
// (a store written by an earlier version, being indexed), it reads the
// queues instead (listQueues). Meant for operators, not for hot paths.
func (s *Store) ListEvents(ctx context.Context, f storage.EventFilter) (storage.EventPage, error) {
	after, err := storage.ParseEventCursor(f.Cursor)
	if err != nil {
		return storage.EventPage{Events: []storage.EventInfo{}}, err
	}
	if !s.eventsIndexed(ctx) {
		return s.listQueues(ctx, f, after)
	}
	page, err := s.listIndexed(ctx, f, after)
	if err != nil {
		return storage.EventPage{Events: []storage.EventInfo{}}, err
	}
	return page, nil
}

// listIndexed is ListEvents over the events indexes, below the cursor's
// event (after; "": from the newest).
func (s *Store) listIndexed(ctx context.Context, f storage.EventFilter, after string) (storage.EventPage, error) {
	page := storage.EventPage{Events: []storage.EventInfo{}}
	limit, budget := f.EffectiveLimit(), f.ScanBudget()
	now := s.now()
	heads := newIndexHeads(s.parts, after)
	examined, last := 0, ""
	for {
		if len(page.Events) == limit || examined == budget {
			more, err := heads.more(ctx, s.c)
			if err != nil {
				return page, err
			}
			if more {
				page.NextCursor = storage.EventCursor(last)
			}
			return page, nil
		}
		n := min(browseBatch, budget-examined)
		if f == (storage.EventFilter{Limit: f.Limit, Cursor: f.Cursor}) {
			n = min(n, limit-len(page.Events)) // every event found is listed
		}
		batch, err := heads.take(ctx, s.c, n)
		if err != nil {
			return page, err
		}
		if len(batch) == 0 {
			return page, nil
		}
		if err := s.markFans(ctx, batch); err != nil {
			return page, err
		}
		infos, gone, err := s.browseInfos(ctx, batch, now)
		if err != nil {
			return page, err
		}
		if err := s.dropGone(ctx, batch, gone); err != nil {
			return page, err
		}
		for j, info := range infos {
			if len(page.Events) == limit || examined == budget {
				page.NextCursor = storage.EventCursor(last)
				return page, nil
			}
			examined, last = examined+1, batch[j].id
			if info != nil && f.Matches(info) {
				page.Events = append(page.Events, *info)
			}
		}
	}
}

// markFans marks the events of ids still kept as fan-out records (read
// by browseInfos once expanded), in one pipelined round trip.
func (s *Store) markFans(ctx context.Context, ids []browseID) error {
	cmds := make([]*redis.IntCmd, len(ids))
	_, err := s.c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, b := range ids {
			cmds[i] = pipe.Exists(ctx, b.p.fan(b.id))
		}
		return nil
	})
	if err != nil {
		return unavailable(err)
	}
	for i, c := range cmds {
		ids[i].fan = c.Val() == 1
	}
	return nil
}

// dropGone takes out of their events index the ids of which nothing was
// found (gone[i]): an event removed without leaving the index (by a node
// of an earlier version, or entered again by IndexEvents as it went). The
// reads may be stale or have failed: dropGoneScript drops an id only if
// nothing of it is left when it runs.
func (s *Store) dropGone(ctx context.Context, ids []browseID, gone []bool) error {
	byPart := map[partition][]any{}
	for i, b := range ids {
		if gone[i] {
			byPart[b.p] = append(byPart[b.p], b.id)
		}
	}
	for p, ids := range byPart {
		if _, err := s.eval(ctx, dropGoneScript, []string{p.events()}, append([]any{p.tag, storage.DefaultDestination}, ids...)...); err != nil {
			return unavailable(err)
		}
	}
	return nil
}

// dropGoneScript takes out of a partition's events index each of the
// given events of which no delivery's hash or DLQ entry is left (the
// default delivery's, and those its deliveries index names) nor a fan-out
// record, and deletes the deliveries index left of it (a node of an
// earlier version removed the last named entry without it). Nothing
// brings an event back once they are all gone.
//
//	KEYS: events index
//	ARGV: the partition's hash tag, the default destination's name, then
//	      the event ids
//	returns the number of ids dropped
var dropGoneScript = redis.NewScript(`
local t, n = ARGV[1], 0
for i = 3, #ARGV do
	local id = ARGV[i]
	if redis.call('EXISTS', t .. ':ev:' .. id, t .. ':dlq:' .. id, t .. ':fan:' .. id) == 0 then
		local dk, left = t .. ':dests:' .. id, false
		local v = redis.call('GET', dk)
		for d in string.gmatch(v or '', '[^,]+') do
			local did = id
			if d ~= ARGV[2] then did = id .. '~' .. d end
			if redis.call('EXISTS', t .. ':ev:' .. did, t .. ':dlq:' .. did) > 0 then
				left = true
				break
			end
		end
		if not left then
			if v then redis.call('DEL', dk) end
			n = n + redis.call('ZREM', KEYS[1], id)
		end
	end
end
return n
`)

// indexHeads merges the partitions' events indexes, newest first: each
// partition's next ids, read a chunk at a time below the last one read.
type indexHeads struct {
	parts []indexHead
	last  string // the last id taken (an id twice in a row is taken once)
}

// indexHead is one partition's part of indexHeads.
type indexHead struct {
	p    partition
	buf  []string // ids read and not yet taken, newest first
	max  string   // the bound of the next read: "+" or "(" and an id
	done bool     // nothing is left below max
}

func newIndexHeads(parts []partition, after string) *indexHeads {
	max := "+"
	if after != "" {
		max = "(" + after
	}
	h := &indexHeads{parts: make([]indexHead, len(parts))}
	for i, p := range parts {
		h.parts[i] = indexHead{p: p, max: max}
	}
	return h
}

// fill reads, in one pipelined round trip, up to n more ids of each
// partition that has none left to take and may have more.
func (h *indexHeads) fill(ctx context.Context, c redis.UniversalClient, n int) error {
	cmds := make([]*redis.StringSliceCmd, len(h.parts))
	reads := false
	_, err := c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i := range h.parts {
			hd := &h.parts[i]
			if len(hd.buf) == 0 && !hd.done {
				cmds[i] = pipe.ZRevRangeByLex(ctx, hd.p.events(), &redis.ZRangeBy{Max: hd.max, Min: "-", Count: int64(n)})
				reads = true
			}
		}
		return nil
	})
	if !reads {
		return nil
	}
	if err != nil {
		return unavailable(err)
	}
	for i, cmd := range cmds {
		if cmd == nil {
			continue
		}
		hd := &h.parts[i]
		hd.buf = cmd.Val()
		if len(hd.buf) < n {
			hd.done = true
		}
		if len(hd.buf) > 0 {
			hd.max = "(" + hd.buf[len(hd.buf)-1]
		}
	}
	return nil
}

// take takes the next n ids at most, newest first (fewer: none is left).
func (h *indexHeads) take(ctx context.Context, c redis.UniversalClient, n int) ([]browseID, error) {
	var out []browseID
	for len(out) < n {
		if err := h.fill(ctx, c, n-len(out)); err != nil {
			return nil, err
		}
		best := -1
		for i := range h.parts {
			if len(h.parts[i].buf) > 0 && (best < 0 || h.parts[i].buf[0] > h.parts[best].buf[0]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		hd := &h.parts[best]
		id := hd.buf[0]
		hd.buf = hd.buf[1:]
		if id == h.last {
			continue
		}
		h.last = id
		out = append(out, browseID{id: id, p: hd.p})
	}
	return out, nil
}

// more reports whether an id is left to take.
func (h *indexHeads) more(ctx context.Context, c redis.UniversalClient) (bool, error) {
	if err := h.fill(ctx, c, 1); err != nil {
		return false, err
	}
	for i := range h.parts {
		if len(h.parts[i].buf) > 0 {
			return true, nil
		}
	}
	return false, nil
}

// listQueues is ListEvents built from the indexes every partition keeps
// anyway, for a store whose events index is not complete yet: its lane
// queues (queued and leased jobs), its waiting hash (ordered jobs behind
// their chain's head), its done index (delivered and dead jobs, until
// retention) and its DLQ index (entries outliving their jobs), and its
// fan-out index (events not yet expanded: those a page reads are
// expanded first, as any read of an event by id does, fanout.go). Cost of
// a page: one pipelined read of the members of those indexes (IDs only:
// O(jobs and entries kept), a few tens of bytes each), sorted in the
// process, then at most f.ScanBudget() events read as Lookup reads them.
func (s *Store) listQueues(ctx context.Context, f storage.EventFilter, after string) (storage.EventPage, error) {
	page := storage.EventPage{Events: []storage.EventInfo{}}
	ids, err := s.eventIDs(ctx, after)
	if err != nil {
		return page, err
	}
	limit, budget := f.EffectiveLimit(), f.ScanBudget()
	now := s.now()
	for i := 0; i < len(ids); i += browseBatch {
		batch := ids[i:min(i+browseBatch, len(ids))]
		infos, _, err := s.browseInfos(ctx, batch, now)
		if err != nil {
			return storage.EventPage{Events: []storage.EventInfo{}}, err
		}
		for j, info := range infos {
			examined := i + j
			if len(page.Events) == limit || examined == budget {
				page.NextCursor = storage.EventCursor(ids[examined-1].id)
				return page, nil
			}
			if info != nil && f.Matches(info) {
				page.Events = append(page.Events, *info)
			}
		}
	}
	return page, nil
}

// browseBatch is how many events ListEvents reads per round of round
// trips.
const browseBatch = 100

// browseID is an event ListEvents found in a partition's indexes.
type browseID struct {
	id string
	p  partition
	// fan is true for an event found in its partition's fan-out index:
	// it is expanded (destinationsOf) before it is read.
	fan bool
}

// eventIDs lists the events the partitions' indexes name, below the
// cursor's event (after; "": all), newest first (by internal ID).
func (s *Store) eventIDs(ctx context.Context, after string) ([]browseID, error) {
	type reads struct {
		lanes, done, dlq *redis.StringSliceCmd
		waiting, fan     *redis.StringSliceCmd
		queues           []*redis.StringSliceCmd
	}
	rs := make([]reads, len(s.parts))
	_, err := s.c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, p := range s.parts {
			rs[i] = reads{
				lanes:   pipe.SMembers(ctx, p.key("lanes")),
				done:    pipe.ZRange(ctx, p.key("done"), 0, -1),
				dlq:     pipe.ZRange(ctx, p.key("dlqidx"), 0, -1),
				waiting: pipe.HKeys(ctx, p.key("waiting")),
				fan:     pipe.ZRange(ctx, p.key("fan"), 0, -1),
			}
		}
		return nil
	})
	if err != nil {
		return nil, unavailable(err)
	}
	_, err = s.c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, p := range s.parts {
			for _, lane := range rs[i].lanes.Val() {
				rs[i].queues = append(rs[i].queues, pipe.ZRange(ctx, p.lane(lane), 0, -1))
			}
		}
		return nil
	})
	if err != nil {
		return nil, unavailable(err)
	}
	seen := map[string]bool{}
	var out []browseID
	for i, p := range s.parts {
		for _, id := range rs[i].fan.Val() {
			if after == "" || id < after {
				seen[id] = true
				out = append(out, browseID{id: id, p: p, fan: true})
			}
		}
		lists := []*redis.StringSliceCmd{rs[i].done, rs[i].dlq, rs[i].waiting}
		for _, l := range append(lists, rs[i].queues...) {
			for _, did := range l.Val() {
				id := storage.EventIDOfDelivery(did)
				if seen[id] || after != "" && id >= after {
					continue
				}
				seen[id] = true
				out = append(out, browseID{id: id, p: p})
			}
		}
	}
	slices.SortFunc(out, func(a, b browseID) int { return strings.Compare(b.id, a.id) })
	return out, nil
}

// browseInfos is what Lookup reports of each event of ids (nil for one
// of which nothing readable is left), in two pipelined round trips: their
// deliveries indexes, then each delivery's hash and DLQ entry. An event's
// source is its first readable delivery's. gone[i] is true when no hash
// or DLQ entry of a delivery of ids[i] is left (a deliveries index left
// without them counts as gone: dropGoneScript deletes it).
func (s *Store) browseInfos(ctx context.Context, ids []browseID, now time.Time) (infos []*storage.EventInfo, gone []bool, err error) {
	for _, b := range ids {
		if b.fan { // still a fan-out record: expanded as any read by id does
			if _, err := s.destinationsOf(ctx, b.p, b.id); err != nil {
				return nil, nil, unavailable(err)
			}
		}
	}
	dests := make([]*redis.StringCmd, len(ids))
	err = s.readPipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, b := range ids {
			dests[i] = pipe.Get(ctx, b.p.deliveries(b.id))
		}
		return nil
	})
	if err != nil {
		return nil, nil, unavailable(err)
	}
	type reads struct {
		ev    *redis.SliceCmd
		entry *redis.StringCmd
	}
	destinations := make([][]string, len(ids))
	deliveries := make([]map[string]reads, len(ids))
	err = s.readPipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, b := range ids {
			destinations[i] = storage.DecodeDestinations(dests[i].Val())
			deliveries[i] = map[string]reads{}
			for _, d := range orDefault(destinations[i]) {
				did := storage.DeliveryID(b.id, d)
				deliveries[i][did] = reads{pipe.HMGet(ctx, b.p.ev(did), hashFields...), pipe.HGet(ctx, b.p.dlqEntry(did), "json")}
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, unavailable(err)
	}
	out := make([]*storage.EventInfo, len(ids))
	gone = make([]bool, len(ids))
	for i, b := range ids {
		gone[i] = true
		// what is readable of each delivery (an unreadable one counts as gone)
		hashes := map[string]*eventHash{}
		entries := map[string]*storage.DLQEntry{}
		source := ""
		for _, d := range orDefault(destinations[i]) {
			did := storage.DeliveryID(b.id, d)
			r := deliveries[i][did]
			m := hashMap(r.ev.Val())
			if len(m) > 0 || r.entry.Val() != "" {
				gone[i] = false
			}
			if h, err := parseEvent(did, m); err == nil && h != nil {
				hashes[did] = h
				source = cmp.Or(source, h.ev.Source)
			}
			if v := r.entry.Val(); v != "" {
				e := new(storage.DLQEntry)
				if json.Unmarshal([]byte(v), e) == nil {
					entries[did] = e
					source = cmp.Or(source, e.Source)
				}
			}
		}
		if source == "" {
			continue // gone meanwhile, or unreadable
		}
		info, err := storage.LookupEvent(b.id, destinations[i], func(id string) (*storage.EventInfo, error) {
			return deliveryInfoOf(hashes[id], entries[id], source, now), nil
		})
		if err == nil {
			out[i] = info
		}
	}
	return out, gone, nil
}

// orDefault is an event's destinations from its deliveries index: the
// default destination's alone when it has none.
func orDefault(destinations []string) []string {
	if destinations == nil {
		return []string{storage.DefaultDestination}
	}
	return destinations
}
