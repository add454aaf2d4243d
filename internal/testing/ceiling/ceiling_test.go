package ceiling_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/ceiling"
	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded"
)

// open wraps a fresh embedded store.
func open(t *testing.T, opts ceiling.Options) *ceiling.Store {
	t.Helper()
	st, err := embedded.Open(filepath.Join(t.TempDir(), "events.db"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := ceiling.Wrap(st, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return c
}

func event(id, eventID string) *storage.Event {
	return &storage.Event{ID: id, EventID: eventID, Dedupe: eventID != "", Source: "src",
		Upstream: "http://127.0.0.1:1/in", Body: []byte(`{}`), ReceivedAt: time.Now()}
}

// openRedis puts a queue in a throwaway redis-server in front of a fresh
// embedded store.
func openRedis(t *testing.T) *ceiling.RedisQueue {
	t.Helper()
	r, _ := openRedisClient(t)
	return r
}

// openRedisClient is openRedis, with the queue's client.
func openRedisClient(t *testing.T) (*ceiling.RedisQueue, *redis.Client) {
	t.Helper()
	srv := redistest.Start(t)
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { _ = rc.Close() })
	st, err := embedded.Open(filepath.Join(t.TempDir(), "events.db"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := ceiling.WrapRedis(st, rc, redistest.Prefix())
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	})
	return r, rc
}

// TestRedisScriptLost: concurrent enqueues sent after the server lost its
// scripts (a restart, SCRIPT FLUSH) each run once: the refused ones are
// sent again after the script is loaded, and every caller gets its own
// answer.
func TestRedisScriptLost(t *testing.T) {
	ctx := t.Context()
	r, rc := openRedisClient(t)
	until := time.Now().Add(time.Hour)
	for round := range 3 {
		if err := rc.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		const n = 32
		var wg sync.WaitGroup
		errs := make([]error, n)
		dups := make([]bool, n)
		for i := range n {
			wg.Go(func() {
				// every other event a copy of its neighbour: one of each pair is a duplicate
				id := fmt.Sprintf("r%d-%d", round, i)
				res, err := r.Enqueue(ctx, event(id, fmt.Sprintf("evt-%d-%d", round, i/2)), until)
				errs[i], dups[i] = err, res.Duplicate
			})
		}
		wg.Wait()
		nd := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("round %d, enqueue %d: %v", round, i, errs[i])
			}
			if dups[i] {
				nd++
			}
		}
		if nd != n/2 {
			t.Errorf("round %d: %d duplicates, want %d (each pair's second copy)", round, nd, n/2)
		}
	}
	wantQueueCounts(t, r, 3*16, 0, false)
}

// TestQueue follows jobs through the in-memory queue and the Redis one:
// enqueue, lease, retry, lease lost, delivered, with the sizes at each
// step.
func TestQueue(t *testing.T) {
	t.Run("memory", func(t *testing.T) { testQueue(t, open(t, ceiling.Options{}), true) })
	t.Run("redis", func(t *testing.T) { testQueue(t, openRedis(t), false) })
}

// testQueue is TestQueue on c; byLane: c counts its jobs by source and
// lane too.
func testQueue(t *testing.T, c storage.Store, byLane bool) {
	ctx := t.Context()
	wantCounts := func(t *testing.T, c storage.Store, queued, inFlight int) {
		t.Helper()
		wantQueueCounts(t, c, queued, inFlight, byLane)
	}
	until := time.Now().Add(time.Hour)

	res, err := c.Enqueue(ctx, event("a", "evt-a"), until)
	if err != nil || res.Duplicate || len(res.Due) != 1 || res.Due[0].ID != "a" {
		t.Fatalf("enqueue a = %+v, %v", res, err)
	}
	if _, err := c.Enqueue(ctx, event("b", ""), until); err != nil {
		t.Fatal(err)
	}
	dup, err := c.Enqueue(ctx, event("a2", "evt-a"), until)
	if err != nil || !dup.Duplicate || dup.ID != "a" {
		t.Fatalf("second copy of evt-a = %+v, %v; want a duplicate", dup, err)
	}
	if d := dup.DedupeUntil.Sub(until); d < -time.Second || d > time.Second {
		t.Errorf("the duplicate's window ends %v, want the first copy's, %v", dup.DedupeUntil, until)
	}
	wantCounts(t, c, 2, 0)

	now := time.Now().Add(time.Millisecond).Truncate(time.Millisecond) // as Redis keeps times
	named, err := c.LeaseNamed(ctx, now, res.Due, time.Minute)
	if err != nil || len(named) != 1 || named[0].ID != "a" {
		t.Fatalf("LeaseNamed = %v, %v", named, err)
	}
	again, err := c.LeaseNamed(ctx, now, res.Due, time.Minute)
	if err != nil || len(again) != 0 {
		t.Fatalf("LeaseNamed of a leased job = %v, %v; want none", again, err)
	}
	wantCounts(t, c, 1, 1)

	// a retry comes back at its due time, with its attempt
	later := now.Add(time.Hour)
	if err := c.Finish(ctx, named[0], storage.Outcome{Result: storage.Retry, Due: later,
		Attempt: &storage.Attempt{Error: "503"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Finish(ctx, named[0], storage.Outcome{Result: storage.Delivered}); !errors.Is(err, storage.ErrLeaseLost) {
		t.Fatalf("a second outcome for one lease = %v, want ErrLeaseLost", err)
	}
	if err := c.Finish(ctx, named[0], storage.Outcome{}); err == nil {
		t.Fatal("an outcome without a result was taken")
	}
	wantCounts(t, c, 2, 0)
	// leased past the retry's due time: a store may count a lease's end
	// as when its job is due next
	jobs, err := c.Lease(ctx, now, 10, 2*time.Hour, nil)
	if err != nil || len(jobs) != 1 || jobs[0].ID != "b" {
		t.Fatalf("Lease now = %v, %v; want b only", jobs, err)
	}
	if due, ok, err := c.NextDue(ctx, nil); err != nil || !ok || !due.Equal(later) {
		t.Fatalf("NextDue = %v, %v, %v; want %v", due, ok, err, later)
	}
	retried, err := c.Lease(ctx, later, 10, time.Minute, nil)
	if err != nil || len(retried) != 1 || retried[0].ID != "a" || len(retried[0].Attempts) != 1 {
		t.Fatalf("Lease at the retry's due time = %v, %v", retried, err)
	}
	if err := c.Finish(ctx, named[0], storage.Outcome{Result: storage.Delivered}); !errors.Is(err, storage.ErrLeaseLost) {
		t.Fatalf("the outcome of an earlier lease = %v, want ErrLeaseLost", err)
	}
	for _, j := range append(jobs, retried...) {
		if err := c.Finish(ctx, j, storage.Outcome{Result: storage.Delivered}); err != nil {
			t.Fatal(err)
		}
	}
	wantCounts(t, c, 0, 0)
	if _, ok, _ := c.NextDue(ctx, nil); ok {
		t.Error("NextDue of an empty queue: ok")
	}

	// the claim holds until it expires
	if res, _ := c.Enqueue(ctx, event("a3", "evt-a"), until); !res.Duplicate {
		t.Error("a delivered event's id enqueued again within its window")
	}
	if _, err := c.Enqueue(ctx, event("x", "evt-x"), time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if res, _ := c.Enqueue(ctx, event("x2", "evt-x"), until); res.Duplicate {
		t.Error("an expired claim made a duplicate")
	}
}

// wantQueueCounts checks the queue's sizes, in all and (byLane) by source
// and lane.
func wantQueueCounts(t *testing.T, c storage.Store, queued, inFlight int, byLane bool) {
	t.Helper()
	ctx := t.Context()
	n, err := c.Counts(ctx)
	if err != nil || n.Queued != queued || n.InFlight != inFlight {
		t.Fatalf("Counts = %+v, %v; want %d queued, %d in flight", n, err, queued, inFlight)
	}
	if !byLane {
		// one lane for all: the totals, which the stats read by lane
		lanes, err := c.QueueByLane(ctx)
		if got := storage.SumCounts(lanes, nil); err != nil || got.Queued != queued || got.InFlight != inFlight {
			t.Fatalf("QueueByLane = %v, %v; want %d queued, %d in flight in all", lanes, err, queued, inFlight)
		}
		return
	}
	for name, f := range map[string]func() (map[string]storage.Counts, error){
		"QueueBySource": func() (map[string]storage.Counts, error) { return c.QueueBySource(ctx) },
		"QueueByLane":   func() (map[string]storage.Counts, error) { return c.QueueByLane(ctx) },
	} {
		m, err := f()
		if got := m["src"]; err != nil || got.Queued != queued || got.InFlight != inFlight {
			t.Fatalf("%s = %v, %v", name, m, err)
		}
	}
}

// TestJournal checks that every event and outcome is appended, whether
// outcomes wait for an fdatasync or not.
func TestJournal(t *testing.T) {
	for _, unsynced := range []bool{false, true} {
		t.Run(map[bool]string{false: "synced", true: "unsynced outcomes"}[unsynced], func(t *testing.T) {
			ctx := t.Context()
			path := filepath.Join(t.TempDir(), "journal")
			c := open(t, ceiling.Options{Journal: path, UnsyncedOutcomes: unsynced})
			const n = 50
			for i := range n {
				id := string(rune('a'+i%26)) + string(rune('a'+i/26))
				if _, err := c.Enqueue(ctx, event(id, id), time.Now().Add(time.Hour)); err != nil {
					t.Fatal(err)
				}
			}
			jobs, err := c.Lease(ctx, time.Now(), n, time.Minute, nil)
			if err != nil || len(jobs) != n {
				t.Fatalf("Lease = %d jobs, %v", len(jobs), err)
			}
			for _, j := range jobs {
				if err := c.Finish(ctx, j, storage.Outcome{Result: storage.Delivered}); err != nil {
					t.Fatal(err)
				}
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			lines := 0
			for sc := bufio.NewScanner(f); sc.Scan(); {
				lines++
			}
			if lines != 2*n {
				t.Errorf("journal has %d lines, want %d (an event and an outcome each)", lines, 2*n)
			}
		})
	}
}

// TestHold: both queues lease nothing, and report nothing due, while the
// gate skips every lane they were given jobs of (HELD=1 of the load run);
// a gate that skips only some of them holds nothing.
func TestHold(t *testing.T) {
	t.Run("memory", func(t *testing.T) { testHold(t, open(t, ceiling.Options{})) })
	t.Run("redis", func(t *testing.T) { testHold(t, openRedis(t)) })
}

func testHold(t *testing.T, c storage.Store) {
	ctx := t.Context()
	until := time.Now().Add(time.Hour)
	gate := &storage.Gate{Skip: map[string]bool{"src": true}}
	if jobs, err := c.Lease(ctx, time.Now(), 10, time.Minute, gate); err != nil || len(jobs) != 0 {
		t.Fatalf("Lease of an empty queue: %d jobs, %v", len(jobs), err)
	}
	if _, err := c.Enqueue(ctx, event("e1", "evt_1"), until); err != nil {
		t.Fatal(err)
	}
	if jobs, err := c.Lease(ctx, time.Now(), 10, time.Minute, gate); err != nil || len(jobs) != 0 {
		t.Errorf("Lease with the only lane skipped: %d jobs, %v; want none", len(jobs), err)
	}
	if _, ok, err := c.NextDue(ctx, gate); err != nil || ok {
		t.Errorf("NextDue with the only lane skipped: due %v, %v; want nothing", ok, err)
	}
	if _, ok, err := c.NextDue(ctx, nil); err != nil || !ok {
		t.Errorf("NextDue with no gate: due %v, %v; want the job", ok, err)
	}
	other := event("e2", "evt_2")
	other.Source = "other"
	if _, err := c.Enqueue(ctx, other, until); err != nil {
		t.Fatal(err)
	}
	jobs, err := c.Lease(ctx, time.Now(), 10, time.Minute, gate)
	if err != nil || len(jobs) != 2 {
		t.Errorf("Lease with one lane of two skipped: %d jobs, %v; want both (only a hold of every lane holds)", len(jobs), err)
	}
}
