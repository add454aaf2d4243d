package redisstore

import (
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/storagetest"
)

// TestDeliveriesRestored: an earlier version deleted an event's
// deliveries index with its last hash even while a DLQ entry of a named
// destination was kept (and a node of that version may still), so that
// the event list, Lookup and erasure saw its default delivery alone; and
// its (source, event id) index, by which it was found by its provider's id.
// IndexEvents (which Open runs) gives both back from the entries it meets
// (the second once), on one server and on a Cluster (whose masters it
// scans each): the events are listed, found by either id with their dead
// deliveries, and erased with every entry.
func TestDeliveriesRestored(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client func(t *testing.T) redis.UniversalClient
	}{
		{"single", func(t *testing.T) redis.UniversalClient {
			return redis.NewClient(&redis.Options{Addr: redistest.Start(t).Addr})
		}},
		{"cluster", func(t *testing.T) redis.UniversalClient {
			return redis.NewUniversalClient(&redis.UniversalOptions{Addrs: redistest.StartCluster(t, 3), IsClusterMode: true})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(tc.client(t), Options{Prefix: redistest.Prefix(), Partitions: 4})
			defer s.Close()
			ctx := t.Context()
			now := time.Now()
			events := storagetest.EntriesKept(t, s, now)
			for _, ev := range events[:2] {
				p := s.partitionForEvent(ev)
				if n, err := s.c.Del(ctx, p.deliveries(ev.ID)).Result(); err != nil || n != 1 {
					t.Fatalf("deleting %s's deliveries index: %d, %v (none past its jobs' retention?)", ev.EventID, n, err)
				}
			}
			// and what named them by their provider's id: in layout 1, their
			// claims expired and an earlier version deleted their ids keys
			// (layout 2 writes the claim alone, kept with its event)
			for _, ev := range events {
				ck := storage.ClaimKey(ev.Source, ev.EventID)
				p := s.partitionForEvent(ev)
				if n, err := s.c.Del(ctx, p.claim(ck)).Result(); err != nil || n != 1 {
					t.Fatalf("deleting %s's claim: %d, %v (none kept with its entries?)", ev.EventID, n, err)
				}
				if err := s.c.Del(ctx, p.ids(ck)).Err(); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.c.Del(ctx, s.idsRestoredMarker()).Err(); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Lookup(ctx, events[0].Source, events[0].ID); err == nil {
				t.Fatal("the test does not make the gap: the event is found without its index")
			}
			if err := s.IndexEvents(ctx); err != nil {
				t.Fatal(err)
			}
			storagetest.EntriesFound(t, s, events, now)
			// erased, or past their entries' retention: no key is left of them
			for _, ev := range events {
				p := s.partitionForEvent(ev)
				keys := []string{p.ids(storage.ClaimKey(ev.Source, ev.EventID)), p.deliveries(ev.ID)}
				for _, k := range keys {
					if n, err := s.c.Exists(ctx, k).Result(); err != nil || n != 0 {
						t.Errorf("%s of %s: exists %d, %v; want gone", k, ev.EventID, n, err)
					}
				}
			}
		})
	}
}

// TestDropGoneLeftIndex: a node of an earlier version removing an event's
// last DLQ entry of a named destination leaves its deliveries index (and
// its id in the events index) behind; the first listing that meets the
// id drops both.
func TestDropGoneLeftIndex(t *testing.T) {
	srv := redistest.Start(t)
	s := openTest(t, srv.Addr, Options{Prefix: redistest.Prefix(), Partitions: 4})
	ctx := t.Context()
	events := storagetest.EntriesKept(t, s, time.Now())
	named := events[1] // its one entry left: billing's
	p := s.partitionForEvent(named)
	if n, err := s.c.Del(ctx, p.dlqEntry(storage.DeliveryID(named.ID, "billing"))).Result(); err != nil || n != 1 {
		t.Fatalf("deleting the entry: %d, %v", n, err)
	}
	if !slices.Contains(indexMembers(t, s), named.ID) {
		t.Fatal("the test does not make the leak: the event left the index")
	}
	ids := listAll(t, s, 50)
	if slices.Contains(ids, named.ID) {
		t.Errorf("listed %s, of which nothing is left", named.EventID)
	}
	if slices.Contains(indexMembers(t, s), named.ID) {
		t.Error("the listing kept the id of an event of which nothing is left")
	}
	if n, _ := s.c.Exists(ctx, p.deliveries(named.ID)).Result(); n != 0 {
		t.Error("the deliveries index left behind is still there")
	}
	for _, ev := range []*storage.Event{events[0], events[2]} {
		if !slices.Contains(ids, ev.ID) {
			t.Errorf("event %s with its entries kept is not listed", ev.EventID)
		}
	}
}

// TestRestoredIDLaterEvent: two events with one provider's id, the later
// accepted once the earlier's claim ended, both with a DLQ entry kept past
// their jobs' retention and no (source, event id) index left (as an
// earlier version left them): the restore gives the id to the later one,
// as Enqueue did, whichever entry the scan meets first.
func TestRestoredIDLaterEvent(t *testing.T) {
	srv := redistest.Start(t)
	s := openTest(t, srv.Addr, Options{Prefix: redistest.Prefix(), Partitions: 4})
	ctx := t.Context()
	evs := storagetest.SharedIDEntries(t, s, time.Now())
	ck := storage.ClaimKey("stripe", "evt_same")
	p := s.partitionForEvent(evs[0])
	if err := s.c.Del(ctx, p.ids(ck), p.claim(ck), s.idsRestoredMarker()).Err(); err != nil {
		t.Fatal(err)
	}
	// met in either order, the entries leave the id to the later event
	for _, order := range [][]int{{0, 1}, {1, 0}} {
		if err := s.c.Del(ctx, p.ids(ck)).Err(); err != nil {
			t.Fatal(err)
		}
		var calls []scriptCall
		for _, i := range order {
			calls = append(calls, scriptCall{[]string{p.ids(ck), p.dlqEntry(evs[i].ID)}, []any{evs[i].ID}})
		}
		if _, err := s.evalPipelined(ctx, restoreIDScript, calls); err != nil {
			t.Fatal(err)
		}
		if got, err := s.c.Get(ctx, p.ids(ck)).Result(); err != nil || got != evs[1].ID {
			t.Errorf("entries met in the order %v: ids names %q, %v; want the later event %s", order, got, err, evs[1].ID)
		}
	}
	// and in the scan's own order
	if err := s.c.Del(ctx, p.ids(ck)).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.IndexEvents(ctx); err != nil {
		t.Fatal(err)
	}
	if info, err := s.Lookup(ctx, "stripe", "evt_same"); err != nil || info.ID != evs[1].ID {
		t.Errorf("Lookup by the shared provider id: %+v, %v; want the later event %s", info, err, evs[1].ID)
	}
}
