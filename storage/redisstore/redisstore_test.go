package redisstore_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/redisstore"
	"github.com/hookline/hookline/storage/storagetest"
)

// factory opens stores with a fresh key prefix each, on clients made by newClient.
func factory(newClient func() redis.UniversalClient, opts redisstore.Options) storagetest.Factory {
	prefixes := map[storage.Store]string{}
	return storagetest.Factory{
		Open: func(t *testing.T) storage.Store {
			o := opts
			o.Prefix = redistest.Prefix()
			s := redisstore.New(newClient(), o)
			prefixes[s] = o.Prefix
			t.Cleanup(func() { s.Close() })
			return s
		},
		Reopen: func(t *testing.T, old storage.Store) storage.Store {
			o := opts
			o.Prefix = prefixes[old]
			old.Close()
			s := redisstore.New(newClient(), o)
			prefixes[s] = o.Prefix
			t.Cleanup(func() { s.Close() })
			return s
		},
		Second: func(t *testing.T, first storage.Store) storage.Store {
			o := opts
			o.Prefix = prefixes[first]
			s := redisstore.New(newClient(), o)
			t.Cleanup(func() { s.Close() })
			return s
		},
		Legacy: func(t *testing.T, s storage.Store, source string) {
			// earlier versions kept the paused sources in one set
			c := newClient()
			defer c.Close()
			if err := c.SAdd(t.Context(), "{"+prefixes[s]+":meta}:paused", source).Err(); err != nil {
				t.Fatal(err)
			}
		},
	}
}

func TestConformance(t *testing.T) {
	srv := redistest.Start(t)
	storagetest.Run(t, factory(func() redis.UniversalClient {
		return redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{srv.Addr}})
	}, redisstore.Options{Partitions: 4}))
}

// TestConformanceCluster runs the suite against a real 3-master Redis
// Cluster: every script must stay within one slot.
func TestConformanceCluster(t *testing.T) {
	addrs := redistest.StartCluster(t, 3)
	newClient := func() redis.UniversalClient {
		return redis.NewUniversalClient(&redis.UniversalOptions{Addrs: addrs, IsClusterMode: true})
	}
	storagetest.Run(t, factory(newClient, redisstore.Options{Partitions: 16}))

	// the partitions really spread over the masters
	c := newClient().(*redis.ClusterClient)
	defer c.Close()
	s := redisstore.New(c, redisstore.Options{Prefix: redistest.Prefix(), Partitions: 16})
	masters := map[string]bool{}
	for _, key := range s.PartitionKeys() {
		slot, err := c.ClusterKeySlot(context.Background(), key).Result()
		if err != nil {
			t.Fatal(err)
		}
		node, err := c.MasterForKey(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		_ = slot
		masters[node.Options().Addr] = true
	}
	if len(masters) < 2 {
		t.Fatalf("16 partitions landed on %d master(s); want them spread", len(masters))
	}
}

func TestWaitForReplicas(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{srv.Addr}})
	s := redisstore.New(c, redisstore.Options{Prefix: redistest.Prefix(), MinReplicas: 1, WaitTimeout: 50_000_000})
	defer s.Close()
	ev := &storage.Event{ID: "w1", EventID: "w1", Dedupe: true, Source: "s", Upstream: "http://x"}
	// no replica: the write cannot be confirmed, so it must not be acknowledged
	if _, err := s.Enqueue(context.Background(), ev, ev.ReceivedAt); err == nil {
		t.Fatal("Enqueue with min_replicas 1 and no replica succeeded")
	}
}

// TestTwoClientsOneJob: two stores on separate connections (two Caddy
// nodes) enqueue the same event id at the same moment: one job.
func TestTwoClientsOneJob(t *testing.T) {
	srv := redistest.Start(t)
	prefix := redistest.Prefix()
	var stores []*redisstore.Store
	for range 2 {
		c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{srv.Addr}})
		s := redisstore.New(c, redisstore.Options{Prefix: prefix})
		defer s.Close()
		stores = append(stores, s)
	}
	for round := range 50 {
		eventID := "evt-" + strconv.Itoa(round)
		var wg sync.WaitGroup
		results := make([]storage.EnqueueResult, 20)
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ev := &storage.Event{ID: fmt.Sprintf("%s-%d", eventID, i), EventID: eventID, Dedupe: true, Source: "s", Upstream: "http://x"}
				res, err := stores[i%2].Enqueue(context.Background(), ev, time.Now().Add(time.Hour))
				if err != nil {
					t.Error(err)
				}
				results[i] = res
			}()
		}
		wg.Wait()
		stored := 0
		for _, r := range results {
			if !r.Duplicate {
				stored++
			}
		}
		if stored != 1 {
			t.Fatalf("round %d: %d of 20 concurrent enqueues on two nodes stored a job", round, stored)
		}
	}
	c, err := stores[0].Counts(context.Background())
	if err != nil || c.Queued != 50 {
		t.Fatalf("counts %+v, %v; want 50 queued", c, err)
	}
}

// TestOrderedNodes: three nodes (clients) sharing a Redis Cluster lease
// and deliver ordered backlogs together: one job of a key in flight at a
// time across all of them, in acceptance order.
func TestOrderedNodes(t *testing.T) {
	addrs := redistest.StartCluster(t, 3)
	prefix := redistest.Prefix()
	var nodes []storage.Store
	for range 3 {
		c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: addrs, IsClusterMode: true})
		s := redisstore.New(c, redisstore.Options{Prefix: prefix, Partitions: 16})
		t.Cleanup(func() { s.Close() })
		nodes = append(nodes, s)
	}
	storagetest.RunOrderedNodes(t, nodes, 4, 30)
}
