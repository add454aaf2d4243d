package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/redisstore"
	"github.com/hookline/hookline/storage/storagetest"
)

// dumpValues reads every key of the Redis node c (SCAN) and every value
// of every type (strings, hashes with their fields, lists, sets, sorted
// sets with their members, streams), as bytes.
func dumpValues(t *testing.T, ctx context.Context, c *redis.Client) [][]byte {
	t.Helper()
	var out [][]byte
	add := func(s ...string) {
		for _, v := range s {
			out = append(out, []byte(v))
		}
	}
	iter := c.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		key := iter.Val()
		add(key)
		typ, err := c.Type(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		switch typ {
		case "string":
			add(c.Get(ctx, key).Val())
		case "hash":
			for f, v := range c.HGetAll(ctx, key).Val() {
				add(f, v)
			}
		case "list":
			add(c.LRange(ctx, key, 0, -1).Val()...)
		case "set":
			add(c.SMembers(ctx, key).Val()...)
		case "zset":
			for _, z := range c.ZRangeWithScores(ctx, key, 0, -1).Val() {
				add(fmt.Sprint(z.Member))
			}
		case "stream":
			for _, m := range c.XRange(ctx, key, "-", "+").Val() {
				for f, v := range m.Values {
					add(f, fmt.Sprint(v))
				}
			}
		case "none": // expired or deleted meanwhile
		default:
			t.Fatalf("key %s of unexpected type %s", key, typ)
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// holds reports whether any of values holds marker (storagetest.MarkerForms).
func holds(values [][]byte, marker string) bool {
	for _, v := range values {
		if storagetest.HasMarker(v, marker) {
			return true
		}
	}
	return false
}

// markerEvent is an event whose body and header X-Marker carry marker.
func markerEvent(source, eventID, marker string) *storage.Event {
	return &storage.Event{ID: uuid.NewString(), EventID: eventID, Dedupe: true, Source: source,
		Upstream: "http://127.0.0.1:1/", Headers: http.Header{"X-Marker": {marker + "-header"}},
		Body: []byte(`{"secret":"` + marker + `-body","pad":"` + strings.Repeat("p", 200) + `"}`), ReceivedAt: time.Now()}
}

// eraseBytesGone stores marked events (a queued one, a fanned-out one with
// a dead delivery and a delivered one, an ordered one waiting behind its
// chain's head, one in flight), checks every marker is in some value of
// nodes, erases them, and checks none is in any value any more.
func eraseBytesGone(t *testing.T, s storage.Store, nodes func(fn func(c *redis.Client))) {
	ctx := context.Background()
	until := time.Now().Add(time.Hour)
	queued := markerEvent("stripe", "evt_queued", "MARK-queued-11aa")
	fan := markerEvent("stripe", "evt_fan", "MARK-fan-22bb")
	for _, d := range []string{"default", "billing", "crm"} {
		fan.Deliveries = append(fan.Deliveries, storage.Delivery{Destination: d, Upstream: "http://127.0.0.1:1/" + d})
	}
	head := markerEvent("shop", "evt_head", "kept-event")
	head.OrderKey = "K"
	chained := markerEvent("shop", "evt_chained", "MARK-chain-33cc")
	chained.OrderKey = "K"
	inflight := markerEvent("github", "evt_inflight", "MARK-inflight-44dd")
	for _, ev := range []*storage.Event{queued, fan, head, chained, inflight} {
		if _, err := s.Enqueue(ctx, ev, until); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := s.Lease(ctx, time.Now(), 100, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	var leased *storage.Job
	for _, j := range jobs {
		out := storage.Outcome{Result: storage.Release}
		switch j.ID {
		case storage.DeliveryID(fan.ID, "billing"):
			out = storage.Outcome{Result: storage.Dead, Attempt: &storage.Attempt{N: 1, At: time.Now(), Status: 400}, Error: "bad"}
		case storage.DeliveryID(fan.ID, "crm"):
			out = storage.Outcome{Result: storage.Delivered, Attempt: &storage.Attempt{N: 1, At: time.Now(), Status: 200}}
		case inflight.ID:
			leased = j
			continue
		}
		if err := s.Finish(ctx, j, out); err != nil {
			t.Fatal(err)
		}
	}
	if leased == nil {
		t.Fatal("the event to erase in flight was not leased")
	}
	markers := []string{"MARK-queued-11aa", "MARK-fan-22bb", "MARK-chain-33cc", "MARK-inflight-44dd"}
	var before [][]byte
	nodes(func(c *redis.Client) { before = append(before, dumpValues(t, ctx, c)...) })
	for _, m := range markers {
		if !holds(before, m+"-body") || !holds(before, m+"-header") {
			t.Fatalf("before the erasure no value holds %s (body %v, header %v): the test proves nothing",
				m, holds(before, m+"-body"), holds(before, m+"-header"))
		}
	}
	for _, ev := range []*storage.Event{queued, fan, chained, inflight} {
		if _, err := s.Erase(ctx, ev.Source, ev.EventID, time.Now()); err != nil {
			t.Fatalf("Erase(%s): %v", ev.EventID, err)
		}
	}
	if err := s.Finish(ctx, leased, storage.Outcome{Result: storage.Dead, Attempt: &storage.Attempt{N: 1, At: time.Now(), Status: 400}, Error: "bad"}); !errors.Is(err, storage.ErrLeaseLost) {
		t.Fatalf("Finish of the erased job in flight: %v, want ErrLeaseLost", err)
	}
	var after [][]byte
	nodes(func(c *redis.Client) { after = append(after, dumpValues(t, ctx, c)...) })
	for _, m := range markers {
		if holds(after, m+"-body") || holds(after, m+"-header") {
			t.Errorf("after the erasure some value still holds %s (body %v, header %v)", m, holds(after, m+"-body"), holds(after, m+"-header"))
		}
	}
	if !holds(after, "kept-event-body") {
		t.Error("the event not erased is gone too")
	}
}

// TestEraseBytesGone: on a single Redis, no key or value holds the
// erased events' markers any more.
func TestEraseBytesGone(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	s := redisstore.New(redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{srv.Addr}}), redisstore.Options{Prefix: redistest.Prefix(), Partitions: 16})
	defer s.Close()
	eraseBytesGone(t, s, func(fn func(*redis.Client)) { fn(c) })
}

// TestEraseBytesGoneCluster: on a 3-master Redis Cluster, no key or value
// of any master holds them.
func TestEraseBytesGoneCluster(t *testing.T) {
	addrs := redistest.StartCluster(t, 3)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	defer cc.Close()
	s := redisstore.New(redis.NewUniversalClient(&redis.UniversalOptions{Addrs: addrs, IsClusterMode: true}), redisstore.Options{Prefix: redistest.Prefix(), Partitions: 16})
	defer s.Close()
	eraseBytesGone(t, s, func(fn func(*redis.Client)) {
		var mu sync.Mutex
		if err := cc.ForEachMaster(context.Background(), func(_ context.Context, c *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			fn(c)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	})
}
