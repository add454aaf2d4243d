package redisstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/storage"
)

// ListEvents implements storage.Store. Nothing indexes events by ID, and
// the ingress path writes nothing for the browser, so a page is built
// from the indexes every partition keeps anyway: its lane queues (queued
// and leased jobs), its waiting hash (ordered jobs behind their chain's
// head), its done index (delivered and dead jobs, until retention) and
// its DLQ index (entries outliving their jobs), and its fan-out index
// (events not yet expanded: those a page reads are expanded first, as
// any read of an event by id does, fanout.go). Cost of a page: one
// pipelined read of the members of those indexes (IDs only: O(jobs and
// entries kept), a few tens of bytes each), sorted in the process, then
// at most f.ScanBudget() events read as Lookup reads them, 100 at a time
// in two pipelined round trips. Measured on one local redis-server with
// 20,000 events: a first page of 50 in about 30 ms, a page of a narrow
// filter (1,000 events examined) in about 90 ms.
// Meant for operators, not for hot paths.
func (s *Store) ListEvents(ctx context.Context, f storage.EventFilter) (storage.EventPage, error) {
	page := storage.EventPage{Events: []storage.EventInfo{}}
	after, err := storage.ParseEventCursor(f.Cursor)
	if err != nil {
		return page, err
	}
	ids, err := s.eventIDs(ctx, after)
	if err != nil {
		return page, err
	}
	limit, budget := f.EffectiveLimit(), f.ScanBudget()
	now := s.now()
	for i := 0; i < len(ids); i += browseBatch {
		batch := ids[i:min(i+browseBatch, len(ids))]
		infos, err := s.browseInfos(ctx, batch, now)
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
// source is its first readable delivery's.
func (s *Store) browseInfos(ctx context.Context, ids []browseID, now time.Time) ([]*storage.EventInfo, error) {
	for _, b := range ids {
		if b.fan { // still a fan-out record: expanded as any read by id does
			if _, err := s.destinationsOf(ctx, b.p, b.id); err != nil {
				return nil, unavailable(err)
			}
		}
	}
	dests := make([]*redis.StringCmd, len(ids))
	_, err := s.c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, b := range ids {
			dests[i] = pipe.Get(ctx, b.p.deliveries(b.id))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, unavailable(err)
	}
	type reads struct {
		ev    *redis.MapStringStringCmd
		entry *redis.StringCmd
	}
	destinations := make([][]string, len(ids))
	deliveries := make([]map[string]reads, len(ids))
	_, err = s.c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, b := range ids {
			destinations[i] = storage.DecodeDestinations(dests[i].Val())
			deliveries[i] = map[string]reads{}
			for _, d := range orDefault(destinations[i]) {
				did := storage.DeliveryID(b.id, d)
				deliveries[i][did] = reads{pipe.HGetAll(ctx, b.p.ev(did)), pipe.HGet(ctx, b.p.dlqEntry(did), "json")}
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, unavailable(err)
	}
	out := make([]*storage.EventInfo, len(ids))
	for i, b := range ids {
		// what is readable of each delivery (an unreadable one counts as gone)
		hashes := map[string]*eventHash{}
		entries := map[string]*storage.DLQEntry{}
		source := ""
		for _, d := range orDefault(destinations[i]) {
			did := storage.DeliveryID(b.id, d)
			r := deliveries[i][did]
			if h, err := parseEvent(did, r.ev.Val()); err == nil && h != nil {
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
	return out, nil
}

// orDefault is an event's destinations from its deliveries index: the
// default destination's alone when it has none.
func orDefault(destinations []string) []string {
	if destinations == nil {
		return []string{storage.DefaultDestination}
	}
	return destinations
}
