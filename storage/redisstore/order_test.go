package redisstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/storagetest"
)

// TestOrderedPlacementCluster: on a real Redis Cluster, an ordered event
// lives in the partition of its order key, with its chain, not in that of
// its claim key; it is found there by Lookup (by provider id and by
// internal id), a resend is its duplicate, and its DLQ entry is found,
// retried and settled by id.
func TestOrderedPlacementCluster(t *testing.T) {
	addrs := redistest.StartCluster(t, 3)
	c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: addrs, IsClusterMode: true})
	s := New(c, Options{Prefix: redistest.Prefix(), Partitions: 16})
	t.Cleanup(func() { s.Close() })
	ctx := t.Context()

	// an event whose order key places it away from its claim key
	var ev *storage.Event
	for i := 0; ev == nil; i++ {
		cand := storagetest.NewEvent("shop", fmt.Sprintf("evt_%d", i))
		cand.OrderKey = "cus_1"
		if s.partitionForEvent(cand) != s.partitionOf(storage.ClaimKey(cand.Source, cand.EventID)) {
			ev = cand
		}
	}
	plain := storagetest.NewEvent("shop", "")
	plain.EventID, plain.Dedupe, plain.OrderKey = plain.ID, false, "cus_1"
	for _, e := range []*storage.Event{ev, plain} {
		if res, err := s.Enqueue(ctx, e, time.Now().Add(time.Hour)); err != nil || res.Duplicate {
			t.Fatalf("Enqueue: %+v, %v", res, err)
		}
	}
	p := s.partitionOf(orderPlacement("shop", "cus_1"))
	if n, err := c.Exists(ctx, p.ev(ev.ID), p.ev(plain.ID)).Result(); err != nil || n != 2 {
		t.Fatalf("the events' hashes in the order key's partition: %d, %v", n, err)
	}
	if ids, err := c.LRange(ctx, p.chain(storage.ChainOf(ev)), 0, -1).Result(); err != nil || len(ids) != 2 || ids[0] != ev.ID || ids[1] != plain.ID {
		t.Fatalf("chain = %v, %v; want [%s %s]", ids, err, ev.ID, plain.ID)
	}
	for _, e := range []*storage.Event{ev, plain} {
		if info, err := s.Lookup(ctx, "shop", e.EventID); err != nil || info.ID != e.ID || info.Status != storage.StatusQueued {
			t.Errorf("Lookup(%s) = %+v, %v", e.EventID, info, err)
		}
	}
	dup := storagetest.NewEvent("shop", ev.EventID)
	dup.OrderKey = "cus_1"
	if res, err := s.Enqueue(ctx, dup, time.Now().Add(time.Hour)); err != nil || !res.Duplicate || res.ID != ev.ID {
		t.Errorf("resend: %+v, %v; want a duplicate of %s", res, err, ev.ID)
	}

	jobs, err := s.Lease(ctx, time.Now(), 10, time.Minute, nil)
	if err != nil || len(jobs) != 1 || jobs[0].ID != ev.ID {
		t.Fatalf("Lease = %d jobs, %v; want the head alone", len(jobs), err)
	}
	if err := s.Finish(ctx, jobs[0], storage.Outcome{Result: storage.Dead, Error: "bad"}); err != nil {
		t.Fatal(err)
	}
	if e, err := s.DLQGet(ctx, ev.ID); err != nil || e.Waiting != 1 {
		t.Fatalf("DLQGet = %+v, %v; want 1 waiting", e, err)
	}
	if err := s.DLQSetStatus(ctx, ev.ID, storage.DLQResolved, "fixed by hand", time.Now()); err != nil {
		t.Fatal(err)
	}
	jobs, err = s.Lease(ctx, time.Now(), 10, time.Minute, nil)
	if err != nil || len(jobs) != 1 || jobs[0].ID != plain.ID {
		t.Fatalf("Lease after the head's entry was resolved = %d jobs, %v; want %s", len(jobs), err, plain.ID)
	}
}

// TestUnorderedKeysUnchanged: events without an order key are stored as
// before ordering existed: no chain or waiting key is ever written, and
// each lives in its claim key's partition.
func TestUnorderedKeysUnchanged(t *testing.T) {
	srv := redistest.Start(t)
	prefix := redistest.Prefix()
	s := openTest(t, srv.Addr, Options{Prefix: prefix, Partitions: 4})
	ctx := t.Context()
	ev := storagetest.NewEvent("shop", "evt_"+uuid.NewString())
	if s.partitionForEvent(ev) != s.partitionOf(storage.ClaimKey("shop", ev.EventID)) {
		t.Fatal("an unordered event is not placed by its claim key")
	}
	if _, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	jobs, err := s.Lease(ctx, time.Now(), 10, time.Minute, nil)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Lease: %d, %v", len(jobs), err)
	}
	if err := s.Finish(ctx, jobs[0], storage.Outcome{Result: storage.Dead, Error: "bad"}); err != nil {
		t.Fatal(err)
	}
	if err := s.DLQSetStatus(ctx, ev.ID, storage.DLQDiscarded, "noise", time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, pattern := range []string{"{" + prefix + ":*}:chain:*", "{" + prefix + ":*}:waiting"} {
		if keys, err := s.c.Keys(ctx, pattern).Result(); err != nil || len(keys) != 0 {
			t.Errorf("keys %s: %v, %v; want none", pattern, keys, err)
		}
	}
	p := s.partitionForEvent(ev)
	for _, key := range []string{p.ev(ev.ID), p.dlqEntry(ev.ID)} {
		if n, err := s.c.HExists(ctx, key, "chain").Result(); err != nil || n {
			t.Errorf("%s of an unordered event records a chain: %v, %v", key, n, err)
		}
	}
}

// TestPoisonOrderedHead: an ordered head whose stored event cannot be
// decoded is finished as dead with what could be salvaged, its order key
// taken from its chain when the record lost it: with on_dead skip the next
// job of its key goes at once; with block (the default, and what a record
// too broken to say gets) the key waits until the entry is settled.
func TestPoisonOrderedHead(t *testing.T) {
	srv := redistest.Start(t)
	for _, tc := range []struct {
		name    string
		skip    bool
		garbage bool
	}{{"skip", true, false}, {"block", false, false}, {"garbage", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTest(t, srv.Addr, Options{Prefix: redistest.Prefix(), Partitions: 4})
			defer storagetest.WantRecounted(t, s, "after the poison record")
			ctx := t.Context()
			var evs []*storage.Event
			for _, id := range []string{"evt_poison", "evt_next"} {
				ev := storagetest.NewEvent("stripe", id)
				ev.Destination, ev.OrderKey, ev.OrderSkip = "crm", "cus_1", tc.skip
				if _, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
					t.Fatal(err)
				}
				evs = append(evs, ev)
			}
			raw := `{"id":"` + evs[0].ID + `","event_id":"evt_poison","source":"stripe","destination":"crm","upstream":"http://127.0.0.1:1/","dedupe":"yes",` +
				`"order_key":"cus_1","order_skip":` + fmt.Sprint(tc.skip) + `}`
			if tc.garbage {
				raw = "\x00garbage"
			}
			id := storage.DeliveryID(evs[0].ID, "crm")
			if err := s.c.HSet(ctx, s.partitionForEvent(evs[0]).ev(id), "ev", raw).Err(); err != nil {
				t.Fatal(err)
			}
			blocks := !tc.skip || tc.garbage
			now := time.Now().Add(time.Second)
			if jobs, err := s.Lease(ctx, now, 10, time.Minute, nil); err != nil || len(jobs) != 0 {
				t.Fatalf("Lease meeting the poison head: %d jobs, %v", len(jobs), err)
			}
			e, err := s.DLQGet(ctx, id)
			if err != nil {
				t.Fatalf("no DLQ entry for the poison head: %v", err)
			}
			wantWaiting := map[bool]int{true: 1, false: 0}[blocks]
			if e.OrderKey != "cus_1" || e.Destination != "crm" || e.Waiting != wantWaiting {
				t.Errorf("entry: order key %q, destination %q, waiting %d; want cus_1, crm, %d", e.OrderKey, e.Destination, e.Waiting, wantWaiting)
			}
			jobs, err := s.Lease(ctx, now, 10, time.Minute, nil)
			if err != nil || len(jobs) != map[bool]int{true: 0, false: 1}[blocks] {
				t.Fatalf("Lease after the poison head: %d jobs, %v", len(jobs), err)
			}
			if blocks {
				if err := s.DLQSetStatus(ctx, id, storage.DLQDiscarded, "", now); err != nil {
					t.Fatal(err)
				}
				if jobs, err = s.Lease(ctx, now, 10, time.Minute, nil); err != nil || len(jobs) != 1 {
					t.Fatalf("Lease after the entry was discarded: %d jobs, %v", len(jobs), err)
				}
			}
			if want := storage.DeliveryID(evs[1].ID, "crm"); jobs[0].ID != want {
				t.Errorf("leased %s, want the next job %s", jobs[0].ID, want)
			}
		})
	}
}
