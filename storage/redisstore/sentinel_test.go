package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/redisstore"
	"github.com/hookline/hookline/storage/storagetest"
)

// sentinelClient is a client that finds the master through the Sentinel,
// as `storage redis { sentinel <master> <addr>... }` makes it.
func sentinelClient(s *redistest.Sentinel) redis.UniversalClient {
	return redis.NewUniversalClient(&redis.UniversalOptions{MasterName: s.MasterName, Addrs: s.Addrs})
}

// TestConformanceSentinel runs the suite through a real Redis Sentinel.
func TestConformanceSentinel(t *testing.T) {
	s := redistest.StartSentinel(t)
	storagetest.Run(t, factory(func() redis.UniversalClient { return sentinelClient(s) }, redisstore.Options{Partitions: 4}))
}

// TestSentinelFailover: with min_replicas 1, every event acknowledged
// before the master is killed is on the replica the Sentinel promotes,
// claim included (a resend is still a duplicate); a store on the same
// Sentinel finds the new master and stores and leases through it.
func TestSentinelFailover(t *testing.T) {
	s := redistest.StartSentinel(t)
	ctx := context.Background()
	prefix := redistest.Prefix()
	st := redisstore.New(sentinelClient(s), redisstore.Options{Prefix: prefix, Partitions: 4, MinReplicas: 1, WaitTimeout: 5 * time.Second})
	until := time.Now().Add(time.Hour) // the claims' dedupe window
	defer st.Close()
	// a provider's resend is a new request: a new internal id (the same
	// one would be the store's retry of a lost reply, answered as before)
	event := func(internal, id string) *storage.Event {
		return &storage.Event{ID: internal, EventID: id, Dedupe: true, Source: "s", Upstream: "http://127.0.0.1:1/",
			Body: []byte(`{"id":"` + id + `"}`), ReceivedAt: time.Now()}
	}
	const n = 20
	// the replica may still be syncing: the first writes wait for it
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; i < n; {
		if _, err := st.Enqueue(ctx, event(fmt.Sprintf("int-%d", i), fmt.Sprintf("before-%d", i)), until); err != nil {
			if time.Now().After(deadline) {
				t.Fatalf("enqueue before the failover: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
			continue
		}
		i++
	}

	s.Master.Stop() // SIGKILL
	// the promoted replica is alone, so writes of a store with
	// min_replicas 1 now fail (503 at the ingress): a second node without
	// it goes on, once the Sentinel has noticed (a second) and promoted the
	// replica; until then its writes fail too
	st2 := redisstore.New(sentinelClient(s), redisstore.Options{Prefix: prefix, Partitions: 4})
	defer st2.Close()
	deadline = time.Now().Add(30 * time.Second)
	for {
		_, err := st2.Enqueue(ctx, event("int-after", "after"), until)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no write through the promoted replica within 30s: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if addr, err := redis.NewSentinelClient(&redis.Options{Addr: s.Addrs[0]}).GetMasterAddrByName(ctx, s.MasterName).Result(); err != nil || addr[1] != fmt.Sprint(s.Replica.Port) {
		t.Fatalf("the Sentinel's master is %v (%v), want the replica on port %d", addr, err, s.Replica.Port)
	}
	for i := range n {
		res, err := st2.Enqueue(ctx, event(fmt.Sprintf("resend-%d", i), fmt.Sprintf("before-%d", i)), until)
		if err != nil || !res.Duplicate {
			t.Errorf("resend of before-%d after the failover: %+v, %v (want a duplicate: its claim was acknowledged)", i, res, err)
		}
	}
	jobs, err := st2.Lease(ctx, time.Now().Add(time.Second), 2*n, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, j := range jobs {
		seen[j.EventID] = true
	}
	for i := range n {
		if id := fmt.Sprintf("before-%d", i); !seen[id] {
			t.Errorf("%s acknowledged before the failover is gone after it (leased %d jobs)", id, len(jobs))
		}
	}
	if !seen["after"] {
		t.Errorf("the event stored through the new master was not leased")
	}
}
