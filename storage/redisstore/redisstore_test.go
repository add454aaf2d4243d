package redisstore_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/redisstore"
	"github.com/hookline/hookline/storage/storagetest"
)

// factory opens stores with a fresh key prefix each, on clients made by newClient.
func factory(newClient func() redis.UniversalClient, opts redisstore.Options) storagetest.Factory {
	var mu sync.Mutex
	prefixes := map[storage.Store]string{}
	clients := map[storage.Store]redis.UniversalClient{}
	open := func(t *testing.T, prefix string) storage.Store {
		o := opts
		o.Prefix = prefix
		c := newClient()
		s := redisstore.New(c, o)
		// as Open does, but before the test goes on: every listing of the
		// suite reads the events index
		if err := s.IndexEvents(t.Context()); err != nil {
			t.Fatalf("IndexEvents: %v", err)
		}
		mu.Lock()
		prefixes[s], clients[s] = prefix, c
		mu.Unlock()
		t.Cleanup(func() { s.Close() })
		return s
	}
	return storagetest.Factory{
		LonePayload: true,
		Open:        func(t *testing.T) storage.Store { return open(t, redistest.Prefix()) },
		Reopen: func(t *testing.T, old storage.Store) storage.Store {
			mu.Lock()
			prefix := prefixes[old]
			mu.Unlock()
			old.Close()
			return open(t, prefix)
		},
		Dump: func(t *testing.T, s storage.Store) [][]byte {
			mu.Lock()
			prefix, c := prefixes[s], clients[s]
			mu.Unlock()
			return dumpKeys(t, c, "{"+prefix+":*")
		},
		Second: func(t *testing.T, first storage.Store) storage.Store {
			o := opts
			o.Prefix = prefixes[first]
			s := redisstore.New(newClient(), o)
			t.Cleanup(func() { s.Close() })
			return s
		},
		Uncounted: func(t *testing.T, old storage.Store) storage.Store {
			mu.Lock()
			prefix, c := prefixes[old], clients[old]
			mu.Unlock()
			uncount(t, c, prefix)
			old.Close()
			return open(t, prefix)
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

// uncount rewrites the store at prefix as an earlier version left it: no
// counter hashes or their markers, leased jobs without their lane (field
// "ln"), on every master of a cluster (storagetest.Factory.Uncounted).
func uncount(t *testing.T, c redis.UniversalClient, prefix string) {
	t.Helper()
	strip := func(ctx context.Context, node redis.Cmdable) error {
		keys, err := node.Keys(ctx, "{"+prefix+":*").Result()
		if err != nil {
			return err
		}
		for _, k := range keys {
			switch {
			case strings.HasSuffix(k, ":counted:v1"), strings.HasSuffix(k, ":waiting:lanes"), strings.HasSuffix(k, ":dlqopen:counts"):
				if err := node.Del(ctx, k).Err(); err != nil {
					return err
				}
			case strings.HasSuffix(k, "}:inflight"):
				tag := strings.TrimSuffix(k, ":inflight")
				for _, id := range node.SMembers(ctx, k).Val() {
					if err := node.HDel(ctx, tag+":ev:"+id, "ln").Err(); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	var err error
	if cc, ok := c.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(t.Context(), func(ctx context.Context, node *redis.Client) error { return strip(ctx, node) })
	} else {
		err = strip(t.Context(), c)
	}
	if err != nil {
		t.Fatalf("uncount: %v", err)
	}
}

// dumpKeys returns the name and every value of each key matching pattern,
// on every master of a cluster (storagetest.Factory.Dump).
func dumpKeys(t *testing.T, c redis.UniversalClient, pattern string) [][]byte {
	t.Helper()
	var mu sync.Mutex
	var out [][]byte
	dump := func(ctx context.Context, node redis.Cmdable) error {
		keys, err := node.Keys(ctx, pattern).Result()
		if err != nil {
			return err
		}
		for _, k := range keys {
			var vals []string
			switch typ := node.Type(ctx, k).Val(); typ {
			case "string":
				vals = []string{node.Get(ctx, k).Val()}
			case "hash":
				for f, v := range node.HGetAll(ctx, k).Val() {
					vals = append(vals, f, v)
				}
			case "list":
				vals = node.LRange(ctx, k, 0, -1).Val()
			case "set":
				vals = node.SMembers(ctx, k).Val()
			case "zset":
				vals = node.ZRange(ctx, k, 0, -1).Val()
			}
			mu.Lock()
			out = append(out, []byte(k))
			for _, v := range vals {
				out = append(out, []byte(v))
			}
			mu.Unlock()
		}
		return nil
	}
	var err error
	if cc, ok := c.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(t.Context(), func(ctx context.Context, node *redis.Client) error { return dump(ctx, node) })
	} else {
		err = dump(t.Context(), c)
	}
	if err != nil {
		t.Fatalf("dump: %v", err)
	}
	return out
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
