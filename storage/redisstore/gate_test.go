package redisstore_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/redisstore"
)

// TestPaceSharedByNodes: a lane's rate_limit holds for all the nodes on one
// store together, not per node: three stores (three Caddy nodes) leasing
// the same paced lane concurrently get one slot per interval between them.
func TestPaceSharedByNodes(t *testing.T) {
	srv := redistest.Start(t)
	prefix := redistest.Prefix()
	var nodes []*redisstore.Store
	for range 3 {
		s := redisstore.New(redis.NewClient(&redis.Options{Addr: srv.Addr}), redisstore.Options{Prefix: prefix, Partitions: 4})
		t.Cleanup(func() { s.Close() })
		nodes = append(nodes, s)
	}
	until := time.Now().Add(time.Hour)
	for i := range 40 {
		ev := &storage.Event{ID: "id" + string(rune('A'+i)), EventID: "e" + string(rune('A'+i)), Dedupe: true,
			Source: "paced", Upstream: "http://127.0.0.1:1/", ReceivedAt: time.Now()}
		if _, err := nodes[i%3].Enqueue(t.Context(), ev, until); err != nil {
			t.Fatal(err)
		}
	}
	gate := &storage.Gate{Pace: map[string]storage.Rate{"paced": {Events: 10, Per: time.Second}}} // one per 100ms
	start := time.Now().Add(10 * time.Millisecond)
	// every node asks every 10ms over 1s of the callers' clock: 101 asks each
	var mu sync.Mutex
	leased := 0
	var wg sync.WaitGroup
	for _, s := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for step := range 101 {
				jobs, err := s.Lease(context.Background(), start.Add(time.Duration(step)*10*time.Millisecond), 10, time.Hour, gate)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				leased += len(jobs)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	// slots at 0, 100ms, ..., 1000ms: at most 11, whatever the interleaving
	// (each node's own clock moves forward; a node behind the others finds
	// the slot taken)
	if leased > 11 || leased < 5 {
		t.Fatalf("3 nodes leased %d jobs of a 10/s lane over 1s, want at most 11 (shared pace)", leased)
	}
}

// TestLegacyDueIndexMigrated: jobs queued by a version without lane
// queues (only the partition's due index) are leased after an upgrade.
func TestLegacyDueIndexMigrated(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { c.Close() })
	prefix := redistest.Prefix()
	s := redisstore.New(c, redisstore.Options{Prefix: prefix, Partitions: 1})
	ctx := t.Context()
	tag := "{" + prefix + ":0}"
	now := time.Now()
	// what the earlier enqueue script wrote: the event hash and the due index
	for i, src := range []string{"stripe", "github", ""} {
		id := "legacy" + string(rune('0'+i))
		ev := storage.Event{ID: id, EventID: "evt_" + id, Dedupe: true, Source: src, Upstream: "http://127.0.0.1:1/", ReceivedAt: now}
		data, _ := json.Marshal(ev)
		fields := []any{"ev", string(data), "st", "queued", "due", now.UnixMilli(), "rs", "0", "att", "[]"}
		if src != "" {
			fields = append(fields, "src", src) // the oldest records have no src field
		} else {
			ev.Source = "shopify"
			data, _ = json.Marshal(ev)
			fields[1] = string(data)
		}
		if err := c.HSet(ctx, tag+":ev:"+id, fields...).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.ZAdd(ctx, tag+":due", redis.Z{Score: float64(now.UnixMilli()), Member: id}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := s.Lease(ctx, now.Add(time.Millisecond), 10, time.Minute, &storage.Gate{Skip: map[string]bool{"github": true}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, j := range jobs {
		got[j.Source] = true
	}
	if len(jobs) != 2 || !got["stripe"] || !got["shopify"] {
		t.Fatalf("leased %v after the upgrade, want the stripe and shopify jobs (github skipped)", got)
	}
}
