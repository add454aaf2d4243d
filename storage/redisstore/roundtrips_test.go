package redisstore

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/storagetest"
)

// roundTrips is a go-redis hook counting the client's round trips: one
// per command sent alone, one per pipeline (a single server: a Cluster
// client would send a pipeline per node). While slow is set, each takes
// 50 ms more (a distant server), so that callers arriving meanwhile queue
// for the next one, however fast the machine's loopback.
type roundTrips struct {
	n    atomic.Int64
	slow atomic.Bool
	// scripts counts the commands sent (a pipeline's each), EVALSHA
	// among them
	scripts atomic.Int64
}

func (r *roundTrips) count() {
	r.n.Add(1)
	if r.slow.Load() {
		time.Sleep(50 * time.Millisecond)
	}
}

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.count()
		r.scripts.Add(1)
		return next(ctx, cmd)
	}
}

func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.count()
		r.scripts.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// TestRoundTripsPerBatch guards the round trips of the delivery side
// (issue 12: a regression guard that is not timing). Leasing a batch costs
// the same round trips whatever its size and however many partitions
// hold it: a peek, a pace for paced lanes, a lease; finishing a batch of
// jobs at once shares round trips (the finish batcher), not one per job.
// A change that makes either cost grow with the batch fails here.
func TestRoundTripsPerBatch(t *testing.T) {
	srv := redistest.Start(t)
	rt := &roundTrips{}
	c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{srv.Addr}, PoolSize: 128})
	c.AddHook(rt)
	s := New(c, Options{Prefix: redistest.Prefix(), Partitions: 4})
	t.Cleanup(func() { s.Close() })
	ctx := t.Context()
	for i := range 300 {
		src := []string{"stripe", "github", "shopify"}[i%3]
		if _, err := s.Enqueue(ctx, storagetest.NewEvent(src, fmt.Sprintf("evt_rt_%d", i)), time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	paced := &storage.Gate{Pace: map[string]storage.Rate{"github": {Events: 1000, Per: time.Second}}}
	// warm up: scripts loaded (the pace's too: a job of each lane), layout
	// checked, migration done
	warm, err := s.Lease(ctx, time.Now(), 3, time.Minute, paced)
	if err != nil || len(warm) != 3 {
		t.Fatalf("warm-up Lease = %v, %v", warm, err)
	}
	for _, j := range warm {
		if err := s.Finish(ctx, j, storage.Outcome{Result: storage.Delivered}); err != nil {
			t.Fatal(err)
		}
	}

	for _, tc := range []struct {
		name string
		n    int
		gate *storage.Gate
		max  int64
	}{
		{"one job", 1, nil, 2},
		{"64 jobs over 4 partitions and 3 lanes", 64, nil, 2},
		{"64 jobs with a paced lane", 64, paced, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt.n.Store(0)
			jobs, err := s.Lease(ctx, time.Now(), tc.n, time.Minute, tc.gate)
			got := rt.n.Load()
			if err != nil || len(jobs) != tc.n {
				t.Fatalf("Lease(%d) = %d jobs, %v", tc.n, len(jobs), err)
			}
			if got > tc.max {
				t.Errorf("Lease(%d) took %d round trips, want at most %d", tc.n, got, tc.max)
			}
			// the batch finished at once, as the workers finish what
			// they were handed: shared round trips
			rt.n.Store(0)
			rt.scripts.Store(0)
			rt.slow.Store(true)
			defer rt.slow.Store(false)
			storagetest.FinishAtOnce(t, s, jobs)
			// the first finish goes alone, the others share the next
			// round trip (one more for a goroutine scheduled late)
			got = rt.n.Load()
			if bound := int64(min(tc.n, 3)); got > bound {
				t.Errorf("finishing %d jobs at once took %d round trips, want at most %d", tc.n, got, bound)
			}
			// and a round trip runs one script per partition
			// (finishManyScript), not one per job
			if scripts := rt.scripts.Load(); scripts > 4*got {
				t.Errorf("finishing %d jobs at once ran %d scripts in %d round trips, want at most one per partition (4) each", tc.n, scripts, got)
			}
		})
	}
}

// TestScriptsPerBatch guards the server's work of leasing from a backlog
// (window.go): once a Lease has found one, the next peeks only the
// window's partitions and leases from them alone, so its commands do not
// grow with the number of partitions (16 here): peekWindow peek scripts
// and at most peekWindow lease scripts. Without a backlog a Lease peeks
// every partition (one round trip, wherever the next event hashed to); an
// event just accepted is leased by name, with one script in its partition.
func TestScriptsPerBatch(t *testing.T) {
	srv := redistest.Start(t)
	rt := &roundTrips{}
	c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{srv.Addr}})
	c.AddHook(rt)
	s := New(c, Options{Prefix: redistest.Prefix(), Partitions: 16})
	t.Cleanup(func() { s.Close() })
	ctx := t.Context()
	lease := func(n int) (jobs []*storage.Job, scripts int64) {
		t.Helper()
		rt.scripts.Store(0)
		jobs, err := s.Lease(ctx, time.Now(), n, time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		return jobs, rt.scripts.Load()
	}
	if _, err := s.Enqueue(ctx, storagetest.NewEvent("stripe", "evt_alone"), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if jobs, _ := lease(16); len(jobs) != 1 {
		t.Fatalf("Lease of the lone event = %d jobs", len(jobs))
	}
	res, err := s.Enqueue(ctx, storagetest.NewEvent("stripe", "evt_named"), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	// the event just accepted, leased by name: one script in its own
	// partition, no peek of the 16
	rt.n.Store(0)
	rt.scripts.Store(0)
	if jobs, err := s.LeaseNamed(ctx, time.Now(), res.Due, time.Minute); err != nil || len(jobs) != 1 {
		t.Fatalf("LeaseNamed of the event = %d jobs, %v", len(jobs), err)
	}
	if n, scripts := rt.n.Load(), rt.scripts.Load(); n != 1 || scripts != 1 {
		t.Errorf("LeaseNamed of one job took %d round trips and %d commands, want 1 and 1", n, scripts)
	}
	if jobs, scripts := lease(16); len(jobs) != 0 || scripts != 16 {
		t.Errorf("Lease with nothing due = %d jobs, %d commands; want 0 and a peek of each of 16 partitions", len(jobs), scripts)
	}
	for i := range 2000 {
		if _, err := s.Enqueue(ctx, storagetest.NewEvent("stripe", fmt.Sprintf("evt_w_%d", i)), time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	lease(16) // finds the backlog
	for range 5 {
		jobs, scripts := lease(16)
		if len(jobs) != 16 {
			t.Fatalf("Lease(16) from the backlog = %d jobs", len(jobs))
		}
		if scripts > 2*peekWindow {
			t.Errorf("Lease(16) from a backlog ran %d commands, want at most %d (peek and lease in the window's %d partitions)", scripts, 2*peekWindow, peekWindow)
		}
	}
}

// TestWindowComesRound: while a backlog keeps every Lease in the window,
// a job due in a partition outside it is leased within
// Partitions/peekWindow Leases (the window comes round), and a lane with
// a single job gets it as soon as its partition is peeked.
func TestWindowComesRound(t *testing.T) {
	srv := redistest.Start(t)
	s := openTest(t, srv.Addr, Options{Prefix: redistest.Prefix(), Partitions: 16})
	ctx := t.Context()
	for i := range 1000 {
		if _, err := s.Enqueue(ctx, storagetest.NewEvent("stripe", fmt.Sprintf("evt_r_%d", i)), time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	// a first Lease peeks every partition and finds the backlog
	if jobs, err := s.Lease(ctx, time.Now(), 4, time.Minute, nil); err != nil || len(jobs) != 4 || !s.window.backlog.Load() {
		t.Fatalf("first Lease = %d jobs, %v; backlog found: %v", len(jobs), err, s.window.backlog.Load())
	}
	lone := storagetest.NewEvent("github", "evt_lone")
	if _, err := s.Enqueue(ctx, lone, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	bound := 16 / peekWindow
	for k := 1; k <= bound; k++ {
		jobs, err := s.Lease(ctx, time.Now(), 4, time.Minute, nil)
		if err != nil || len(jobs) != 4 {
			t.Fatalf("Lease %d = %d jobs, %v", k, len(jobs), err)
		}
		for _, j := range jobs {
			if j.ID == lone.ID {
				return
			}
		}
	}
	t.Errorf("the lone github job was not leased within %d Leases of a stripe backlog", bound)
}

// TestPacedLeasesOldestFirst: a gate that paces a lane keeps every peek
// wide, however deep the backlog, so that a paced lane's jobs leave
// oldest first across the store (on resume a held backlog goes in order
// of due time); the same backlog unpaced opens the window.
func TestPacedLeasesOldestFirst(t *testing.T) {
	srv := redistest.Start(t)
	var tick atomic.Int64
	base := time.Now()
	// each enqueue reads the clock once or more: every event is due a
	// millisecond or more after the one before
	clock := func() time.Time { return base.Add(time.Duration(tick.Add(1)) * time.Millisecond) }
	s := openTest(t, srv.Addr, Options{Prefix: redistest.Prefix(), Partitions: 16, Now: clock})
	ctx := t.Context()
	var ids []string
	for i := range 400 {
		ev := storagetest.NewEvent("stripe", fmt.Sprintf("evt_o_%03d", i))
		if _, err := s.Enqueue(ctx, ev, base.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ev.ID)
	}
	now := base.Add(time.Hour)
	paced := &storage.Gate{Pace: map[string]storage.Rate{"stripe": {Events: 1000000, Per: time.Second}}}
	var got []string
	for i := range 20 {
		jobs, err := s.Lease(ctx, now, 4, time.Minute, paced)
		if err != nil || len(jobs) == 0 {
			t.Fatalf("paced Lease %d = %d jobs, %v", i, len(jobs), err)
		}
		for _, j := range jobs {
			got = append(got, j.ID)
		}
	}
	if !slices.Equal(got, ids[:len(got)]) {
		t.Errorf("paced Leases did not lease oldest first")
	}
	if !s.window.backlog.Load() {
		t.Fatal("400 events in 16 partitions, 4 wanted: no backlog found")
	}
	// the same backlog unpaced: the window opens
	if _, err := s.Lease(ctx, now, 4, time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	if first, rest := s.window.order(len(s.parts), true); len(first) != peekWindow || len(rest) != 16-peekWindow {
		t.Errorf("unpaced, over a backlog: a peek of %d then %d partitions, want the window", len(first), len(rest))
	}
}
