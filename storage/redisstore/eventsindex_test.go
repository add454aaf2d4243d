package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/storagetest"
)

// idsRead is a go-redis hook adding up the members of every list reply
// (ZRANGE, ZREVRANGEBYLEX, HKEYS, SMEMBERS...): how many ids a listing
// had Redis send.
type idsRead struct{ n atomic.Int64 }

func (r *idsRead) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *idsRead) add(cmd redis.Cmder) {
	if c, ok := cmd.(*redis.StringSliceCmd); ok {
		r.n.Add(int64(len(c.Val())))
	}
}

func (r *idsRead) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		r.add(cmd)
		return err
	}
}

func (r *idsRead) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			r.add(c)
		}
		return err
	}
}

// indexFixture is a store holding events in every place a listing finds
// them: queued, in flight, delivered, dead (DLQ), fanned out to three
// destinations (still a fan-out record), ordered and waiting behind their
// chain's head.
func indexFixture(t *testing.T, s *Store) (ids []string) {
	t.Helper()
	ctx := t.Context()
	enqueue := func(ev *storage.Event) {
		t.Helper()
		id, _ := uuid.NewV7()
		ev.ID, ev.EventID, ev.Dedupe = id.String(), "evt_"+id.String(), true
		ev.Source, ev.Type, ev.Body, ev.ReceivedAt = "src", "t", []byte(`{"a":1}`), time.Now()
		if ev.Upstream == "" && len(ev.Deliveries) == 0 {
			ev.Upstream = "http://127.0.0.1:1/"
		}
		res, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour))
		if err != nil || res.Duplicate {
			t.Fatalf("Enqueue: %+v, %v", res, err)
		}
		ids = append(ids, ev.ID)
	}
	settle := func(result storage.Result) {
		t.Helper()
		jobs, err := s.Lease(ctx, time.Now(), 1, time.Minute, nil)
		if err != nil || len(jobs) != 1 {
			t.Fatalf("Lease: %d jobs, %v", len(jobs), err)
		}
		if result != 0 {
			if err := s.Finish(ctx, jobs[0], storage.Outcome{Result: result, Error: "test"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	enqueue(&storage.Event{})
	settle(storage.Delivered)
	enqueue(&storage.Event{})
	settle(storage.Dead)
	enqueue(&storage.Event{})
	settle(0) // in flight
	for range 3 {
		enqueue(&storage.Event{}) // queued
	}
	enqueue(&storage.Event{Deliveries: []storage.Delivery{
		{Destination: "a", Upstream: "http://127.0.0.1:1/"}, {Destination: "b", Upstream: "http://127.0.0.1:1/"}, {Destination: "c", Upstream: "http://127.0.0.1:1/"}}})
	for range 2 {
		enqueue(&storage.Event{OrderKey: "k"}) // the second waits
	}
	return ids
}

// listAll pages through ListEvents (limit per page) and returns the ids.
func listAll(t *testing.T, s *Store, limit int) []string {
	t.Helper()
	var out []string
	for _, page := range storagetest.ListAllEvents(t, s, storage.EventFilter{Limit: limit}) {
		for _, e := range page.Events {
			out = append(out, e.ID)
		}
	}
	return out
}

// newest is ids sorted newest first, as a listing gives them.
func newest(ids []string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	slices.Reverse(out)
	return out
}

// indexMembers is every member of the store's events indexes.
func indexMembers(t *testing.T, s *Store) []string {
	t.Helper()
	var out []string
	for _, p := range s.parts {
		m, err := s.c.ZRange(t.Context(), p.events(), 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m...)
	}
	slices.Sort(out)
	return out
}

// dropIndex makes s a store written before the events index existed.
func dropIndex(t *testing.T, s *Store) {
	t.Helper()
	keys := []string{s.eventsIndexMarker()}
	for _, p := range s.parts {
		keys = append(keys, p.events())
	}
	for _, k := range keys { // one at a time: the keys are in several slots
		if err := s.c.Del(t.Context(), k).Err(); err != nil {
			t.Fatal(err)
		}
	}
	s.evIndex.ready.Store(false)
}

// TestEventsIndexLegacyStore: a store written before the events index is
// listed from its queues until Open has indexed it in the background, then
// from the index, with the same events in the same order; every event is
// indexed, wherever its deliveries are.
func TestEventsIndexLegacyStore(t *testing.T) {
	srv := redistest.Start(t)
	opts := Options{Prefix: redistest.Prefix(), Partitions: 4}
	s := openTest(t, srv.Addr, opts)
	ids := indexFixture(t, s)
	want := newest(ids)
	if got := indexMembers(t, s); !slices.Equal(got, sorted(ids...)) {
		t.Fatalf("the enqueues indexed %v, want %v", got, sorted(ids...))
	}
	dropIndex(t, s)
	if s.eventsIndexed(t.Context()) {
		t.Fatal("a store without its index read as indexed")
	}
	if got := listAll(t, s, 3); !slices.Equal(got, want) {
		t.Fatalf("listed from the queues %v, want %v", got, want)
	}

	o, err := Open(t.Context(), redis.NewClient(&redis.Options{Addr: srv.Addr}), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	deadline := time.Now().Add(10 * time.Second)
	for !o.evIndex.ready.Load() {
		if time.Now().After(deadline) {
			t.Fatal("Open did not index the store within 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := indexMembers(t, s); !slices.Equal(got, sorted(ids...)) {
		t.Fatalf("Open indexed %v, want %v", got, sorted(ids...))
	}
	if !s.eventsIndexed(t.Context()) {
		t.Fatal("the marker does not make another Store read the index")
	}
	for _, limit := range []int{1, 3, 50} {
		if got := listAll(t, s, limit); !slices.Equal(got, want) {
			t.Fatalf("limit %d: listed from the index %v, want %v", limit, got, want)
		}
	}
}

// TestEventsIndexBounded: a page reads a few ids of each partition's
// index, not every id the store holds (listing from the queues reads
// them all), and gives what listing from the queues gives.
func TestEventsIndexBounded(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	hook := &idsRead{}
	c.AddHook(hook)
	s := New(c, Options{Prefix: redistest.Prefix(), Partitions: 4})
	defer s.Close()
	if err := s.IndexEvents(t.Context()); err != nil {
		t.Fatal(err)
	}
	const n = 2000
	ctx := t.Context()
	for i := range n {
		id, _ := uuid.NewV7()
		ev := &storage.Event{ID: id.String(), EventID: fmt.Sprintf("evt_%d", i), Dedupe: true, Source: "src",
			Type: fmt.Sprintf("t%d", i%10), Upstream: "http://127.0.0.1:1/", Body: []byte(`{}`), ReceivedAt: time.Now()}
		if _, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		f    storage.EventFilter
		max  int64 // ids Redis may send for the page
	}{
		{"first page of 10", storage.EventFilter{Limit: 10}, 4*10 + 4},
		{"a type: 10 of 100 examined", storage.EventFilter{Limit: 10, Type: "t3"}, 4*100 + 4},
		{"nothing matches: the budget, 200", storage.EventFilter{Limit: 10, Type: "none"}, 4*200 + 4},
	} {
		hook.n.Store(0)
		page, err := s.ListEvents(ctx, tc.f)
		if err != nil {
			t.Fatal(err)
		}
		if got := hook.n.Load(); got > tc.max {
			t.Errorf("%s: Redis sent %d ids for a page, want at most %d of the %d stored", tc.name, got, tc.max, n)
		}
		hook.n.Store(0)
		old, err := s.listQueues(ctx, tc.f, "")
		if err != nil {
			t.Fatal(err)
		}
		if hook.n.Load() < n {
			t.Errorf("%s: the instrument is blind: listing from the queues read %d ids of %d", tc.name, hook.n.Load(), n)
		}
		if fmt.Sprint(infoIDs(page.Events), page.NextCursor) != fmt.Sprint(infoIDs(old.Events), old.NextCursor) {
			t.Errorf("%s: the index gave %v (next %q), the queues %v (next %q)", tc.name,
				infoIDs(page.Events), page.NextCursor, infoIDs(old.Events), old.NextCursor)
		}
	}
}

func infoIDs(evs []storage.EventInfo) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

// TestEventsIndexLeaves: an event leaves the index when its last record
// goes (retention of its jobs, then of its DLQ entry; erasure), and an
// id of which nothing is left (removed by a node of an earlier version)
// is dropped by the listing that meets it.
func TestEventsIndexLeaves(t *testing.T) {
	srv := redistest.Start(t)
	s := openTest(t, srv.Addr, Options{Prefix: redistest.Prefix(), Partitions: 4})
	ctx := t.Context()
	if err := s.IndexEvents(ctx); err != nil {
		t.Fatal(err)
	}
	ids := indexFixture(t, s) // [0] delivered, [1] dead
	if _, err := s.Erase(ctx, "src", "evt_"+ids[2], time.Now()); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(indexMembers(t, s), ids[2]) {
		t.Error("an erased event is still in the index")
	}
	later := time.Now().Add(time.Hour)
	if _, err := s.Cleanup(ctx, later, time.Minute, 2*time.Hour); err != nil {
		t.Fatal(err)
	}
	m := indexMembers(t, s)
	if slices.Contains(m, ids[0]) {
		t.Error("a delivered event past retention is still in the index")
	}
	if !slices.Contains(m, ids[1]) {
		t.Error("a dead event left the index while its DLQ entry is kept")
	}
	if _, err := s.Cleanup(ctx, later.Add(3*time.Hour), time.Minute, 2*time.Hour); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(indexMembers(t, s), ids[1]) {
		t.Error("a dead event is still in the index past its DLQ entry's retention")
	}

	gone, _ := uuid.NewV7()
	if err := s.c.ZAdd(ctx, s.parts[0].events(), redis.Z{Member: gone.String()}).Err(); err != nil {
		t.Fatal(err)
	}
	before := len(indexMembers(t, s))
	listAll(t, s, 50)
	if m := indexMembers(t, s); slices.Contains(m, gone.String()) || len(m) != before-1 {
		t.Errorf("after a listing the index holds %d ids (%d before), the gone one among them: %v", len(m), before, slices.Contains(m, gone.String()))
	}
}

// TestIndexEventsOtherPrefix: IndexEvents enters only its own prefix's
// events, not those of a prefix its pattern also matches.
func TestIndexEventsOtherPrefix(t *testing.T) {
	srv := redistest.Start(t)
	prefix := redistest.Prefix()
	other := openTest(t, srv.Addr, Options{Prefix: prefix + ":x", Partitions: 4})
	indexFixture(t, other)
	s := openTest(t, srv.Addr, Options{Prefix: prefix, Partitions: 4})
	if err := s.IndexEvents(t.Context()); err != nil {
		t.Fatal(err)
	}
	if m := indexMembers(t, s); len(m) != 0 {
		t.Errorf("indexed %d events of another prefix", len(m))
	}
	if !strings.HasPrefix(s.eventsIndexMarker(), "{"+prefix+":meta}") {
		t.Errorf("marker %q not in the store's meta slot", s.eventsIndexMarker())
	}
}

// TestDropGoneLiveEvent: a listing's reads that found nothing of an event
// (stale, or failed) do not take a live one out of the index: the drop
// checks the event's keys when it runs.
func TestDropGoneLiveEvent(t *testing.T) {
	srv := redistest.Start(t)
	s := openTest(t, srv.Addr, Options{Prefix: redistest.Prefix(), Partitions: 4})
	ids := indexFixture(t, s)
	var all []browseID
	for _, id := range ids {
		for _, p := range s.parts {
			if _, err := s.c.ZScore(t.Context(), p.events(), id).Result(); err == nil {
				all = append(all, browseID{id: id, p: p})
			}
		}
	}
	gone, _ := uuid.NewV7()
	all = append(all, browseID{id: gone.String(), p: s.parts[1]})
	if err := s.c.ZAdd(t.Context(), s.parts[1].events(), redis.Z{Member: gone.String()}).Err(); err != nil {
		t.Fatal(err)
	}
	everything := make([]bool, len(all))
	for i := range everything {
		everything[i] = true
	}
	if err := s.dropGone(t.Context(), all, everything); err != nil {
		t.Fatal(err)
	}
	if got, want := indexMembers(t, s), sorted(ids...); !slices.Equal(got, want) {
		t.Errorf("after dropping every id read as gone, the index holds %v, want the live events %v", got, want)
	}
}

// TestEventsIndexMarker: a store created by this version is indexed from
// its first event (its listings read the index at once); IndexEvents by a
// Store of another partition count refuses, and sets no marker.
func TestEventsIndexMarker(t *testing.T) {
	srv := redistest.Start(t)
	prefix := redistest.Prefix()
	s := openTest(t, srv.Addr, Options{Prefix: prefix, Partitions: 4})
	indexFixture(t, s)
	fresh := openTest(t, srv.Addr, Options{Prefix: prefix, Partitions: 4})
	if !fresh.eventsIndexed(t.Context()) {
		t.Error("a store created by this version is not read as indexed")
	}
	if err := s.c.Del(t.Context(), s.eventsIndexMarker()).Err(); err != nil {
		t.Fatal(err)
	}
	other := openTest(t, srv.Addr, Options{Prefix: prefix, Partitions: 8})
	var le *LayoutError
	if err := other.IndexEvents(t.Context()); !errors.As(err, &le) {
		t.Errorf("IndexEvents with another partition count: %v, want a *LayoutError", err)
	}
	if n, _ := s.c.Exists(t.Context(), s.eventsIndexMarker()).Result(); n != 0 {
		t.Error("a refused IndexEvents set the marker")
	}
}

// TestTenantErasureIndexesFirst: a tenant's erasure erases the tenant's
// events that are missing from the events index (stored by a node of an
// earlier version, in a rolling upgrade), not only those its listing
// would have found.
func TestTenantErasureIndexesFirst(t *testing.T) {
	srv := redistest.Start(t)
	s := openTest(t, srv.Addr, Options{Prefix: redistest.Prefix(), Partitions: 4})
	ctx := t.Context()
	for i := range 5 {
		id, _ := uuid.NewV7()
		ev := &storage.Event{ID: id.String(), EventID: fmt.Sprintf("evt_%d", i), Dedupe: true, Source: "shop", Tenant: "gone.example",
			Upstream: "http://127.0.0.1:1/", Body: []byte(`{}`), ReceivedAt: time.Now()}
		if _, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range s.parts { // as an earlier version's node stores them
		if err := s.c.Del(ctx, p.events()).Err(); err != nil {
			t.Fatal(err)
		}
	}
	p, started, err := storage.StartTenantErasure(ctx, s, "shop", "gone.example", time.Now().Add(time.Second))
	if err != nil || !started {
		t.Fatalf("StartTenantErasure: %v, %v", started, err)
	}
	p, err = storage.RunTenantErasure(ctx, s, p, storage.TenantEraseOptions{}, nil, nil)
	if err != nil || p.Erased != 5 {
		t.Errorf("the erasure erased %d events (%v), want the 5 the index did not hold", p.Erased, err)
	}
}
