package redisstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage/redisstore"
	"github.com/hookline/hookline/storage/storagetest"
)

// TestEventCost measures what a queued event with one delivery and a body
// of 1 KiB costs Redis (docs/benchmarks.md, "The lone delivery's payload
// in its hash"): its keys (the claim and the job's hash, its payload in
// the hash since layout 3; three before it, with a payload record) and
// used_memory (2,709 bytes an event in layout 3, 2,885 in layout 2). It
// fails with a key more, or past 2,850 bytes, so that a layout change that
// bloats them is seen.
func TestEventCost(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	s := redisstore.New(c, redisstore.Options{Prefix: redistest.Prefix(), Partitions: 16})
	defer s.Close()
	ctx := t.Context()
	if err := s.CheckLayout(ctx); err != nil {
		t.Fatal(err)
	}
	used := func() int64 {
		n, err := redistest.UsedMemory(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	mem0, keys0 := used(), c.DBSize(ctx).Val()
	const n = 20000
	for i := range n {
		ev := storagetest.NewEvent("stripe", fmt.Sprintf("evt_%024d", i))
		ev.Body = make([]byte, 1024)
		for j := range ev.Body {
			ev.Body[j] = byte('a' + (i+j)%26)
		}
		if _, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	perEvent := float64(used()-mem0) / n
	// besides 2 keys an event, the partitions' own (their indexes, lanes
	// and queues): a few dozen
	keys := c.DBSize(ctx).Val() - keys0
	t.Logf("%.0f bytes an event, %d keys for %d events", perEvent, keys, n)
	if extra := keys - 2*n; extra < 0 || extra > 100 {
		t.Errorf("%d keys for %d events, want 2 an event (its claim and its job's hash) and at most 100 more", keys, n)
	}
	if perEvent > 2850 || perEvent <= 1024 {
		t.Errorf("%.0f bytes an event of 1 KiB, want more than its body and at most 2,850", perEvent)
	}
}
