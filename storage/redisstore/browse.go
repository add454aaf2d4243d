package redisstore

import (
	"cmp"
	"context"
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
// its DLQ index (entries outliving their jobs). Cost of a page: one
// pipelined read of the members of those indexes (IDs only: O(jobs and
// entries kept), a few tens of bytes each), sorted in the process, then
// at most f.ScanBudget() events read, in batches, as Lookup reads them.
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
}

// eventIDs lists the events the partitions' indexes name, below the
// cursor's event (after; "": all), newest first (by internal ID).
func (s *Store) eventIDs(ctx context.Context, after string) ([]browseID, error) {
	type reads struct {
		lanes, done, dlq *redis.StringSliceCmd
		waiting          *redis.StringSliceCmd
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
		lists := []*redis.StringSliceCmd{rs[i].done, rs[i].dlq, rs[i].waiting}
		for _, l := range append(lists, rs[i].queues...) {
			for _, did := range l.Val() {
				id := storage.EventIDOfDelivery(did)
				if seen[id] || after != "" && id >= after {
					continue
				}
				seen[id] = true
				out = append(out, browseID{id, p})
			}
		}
	}
	slices.SortFunc(out, func(a, b browseID) int { return strings.Compare(b.id, a.id) })
	return out, nil
}

// browseInfos is what Lookup reports of each event of ids (nil for one
// of which nothing readable is left): the sources of their deliveries
// are read in one pipeline, then each event as Lookup reads it.
func (s *Store) browseInfos(ctx context.Context, ids []browseID, now time.Time) ([]*storage.EventInfo, error) {
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
	// the source of each delivery: from its job's hash, else its entry's
	type srcs struct{ ev, dlq []*redis.StringCmd }
	reads := make([]srcs, len(ids))
	destinations := make([][]string, len(ids))
	_, err = s.c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, b := range ids {
			destinations[i] = storage.DecodeDestinations(dests[i].Val())
			for _, d := range orDefault(destinations[i]) {
				did := storage.DeliveryID(b.id, d)
				reads[i].ev = append(reads[i].ev, pipe.HGet(ctx, b.p.ev(did), "src"))
				reads[i].dlq = append(reads[i].dlq, pipe.HGet(ctx, b.p.dlqEntry(did), "src"))
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, unavailable(err)
	}
	out := make([]*storage.EventInfo, len(ids))
	for i, b := range ids {
		source := ""
		for k := range reads[i].ev {
			if source = cmp.Or(reads[i].ev[k].Val(), reads[i].dlq[k].Val()); source != "" {
				break
			}
		}
		if source == "" {
			source = s.legacySource(ctx, b, destinations[i])
		}
		if source == "" {
			continue // gone meanwhile, or unreadable
		}
		info, err := storage.LookupEvent(b.id, destinations[i], func(id string) (*storage.EventInfo, error) {
			return s.deliveryInfo(ctx, b.p, id, source, now)
		})
		switch {
		case errors.Is(err, storage.ErrUnavailable):
			return nil, err
		case err == nil:
			out[i] = info
		}
	}
	return out, nil
}

// legacySource is the source of event b from its records' JSON, for
// records written before their hashes had a src field ("": none is
// readable).
func (s *Store) legacySource(ctx context.Context, b browseID, destinations []string) string {
	for _, d := range orDefault(destinations) {
		id := storage.DeliveryID(b.id, d)
		if h, err := s.getEvent(ctx, b.p, id); err == nil && h != nil {
			return h.ev.Source
		}
		if e, err := s.getEntry(ctx, b.p, id); err == nil {
			return e.Source
		}
	}
	return ""
}

// orDefault is an event's destinations from its deliveries index: the
// default destination's alone when it has none.
func orDefault(destinations []string) []string {
	if destinations == nil {
		return []string{storage.DefaultDestination}
	}
	return destinations
}
