package redisstore

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/storagetest"
)

// TestBaseLaneJobFinished: a job of an event with a tenant that an
// earlier version queued in its base lane (before tenants' shares) is
// leased from there, and its Finish takes it out of that lane too: a
// retry waits in its share for its backoff alone, is counted once, and
// is not leased again from the base lane when its lease would have ended.
func TestBaseLaneJobFinished(t *testing.T) {
	srv := redistest.Start(t)
	s := openTest(t, srv.Addr, Options{Prefix: redistest.Prefix(), Partitions: 1})
	ctx := t.Context()
	ev := storagetest.NewEvent("shop", "evt_before_shares")
	ev.Tenant = "a.myshopify.com"
	if _, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	p := s.parts[0]
	share, base := storage.LaneOf(ev), "shop"
	if share == base {
		t.Fatal("an event with a tenant waits in its base lane: nothing to test")
	}
	// as an earlier version queued it
	score, err := s.c.ZScore(ctx, p.lane(share), ev.ID).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.c.ZRem(ctx, p.lane(share), ev.ID).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.c.ZAdd(ctx, p.lane(base), redis.Z{Score: score, Member: ev.ID}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.c.SAdd(ctx, p.key("lanes"), base).Err(); err != nil {
		t.Fatal(err)
	}

	lease := time.Minute
	jobs, err := s.Lease(ctx, time.Now(), 10, lease, nil)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Lease = %d jobs, %v", len(jobs), err)
	}
	backoff := time.Now().Add(time.Hour)
	if err := s.Finish(ctx, jobs[0], storage.Outcome{Result: storage.Retry, Attempt: &storage.Attempt{At: time.Now(), Status: 503}, Due: backoff}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.c.ZCard(ctx, p.lane(base)).Result(); err != nil || n != 0 {
		t.Errorf("the base lane after Finish holds %d jobs, %v; want none", n, err)
	}
	if c, err := s.Counts(ctx); err != nil || c.Queued != 1 || c.InFlight != 0 {
		t.Errorf("Counts = %+v, %v; want 1 queued", c, err)
	}
	if jobs, err := s.Lease(ctx, time.Now().Add(2*lease), 10, lease, nil); err != nil || len(jobs) != 0 {
		t.Errorf("Lease when the first lease would have ended = %d jobs, %v; want none before the backoff", len(jobs), err)
	}
}
