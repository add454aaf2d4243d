package spool_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/redisstore"
	"github.com/hookline/hookline/storage/spool"
	"github.com/hookline/hookline/storage/storagetest"
)

// newRedis is a Redis store on srv that fails fast while it is down.
func newRedis(t *testing.T, srv *redistest.Server, prefix string) storage.Store {
	t.Helper()
	c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{srv.Addr},
		DialTimeout: 200 * time.Millisecond, MaxRetries: 1, ReadTimeout: time.Second, WriteTimeout: time.Second})
	return redisstore.New(c, redisstore.Options{Prefix: prefix})
}

// leaseAll leases every due job of st, by event id.
func leaseAll(t *testing.T, st storage.Store) map[string]int {
	t.Helper()
	got := map[string]int{}
	for {
		jobs, err := st.Lease(t.Context(), time.Now(), 100, time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) == 0 {
			return got
		}
		for _, j := range jobs {
			got[j.EventID]++
		}
	}
}

// TestRedisOutage: with Redis stopped, events are spooled and answered
// (StatusSpooled), a resend of a spooled one is a duplicate, and once
// Redis is back the mover moves them, by itself, each delivered once:
// the one Redis had before the outage and whose resend was spooled
// included, and the one not deduplicated by its provider's id.
func TestRedisOutage(t *testing.T) {
	ctx := t.Context()
	srv := redistest.Start(t)
	prefix := redistest.Prefix()
	sp, err := spool.Open(filepath.Join(t.TempDir(), "spool"), spool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var changes []spool.Change
	var mu sync.Mutex
	st := spool.NewStore(newRedis(t, srv, prefix), sp, spool.StoreOptions{Retry: 100 * time.Millisecond})
	st.OnChange(func(c spool.Change) { mu.Lock(); changes = append(changes, c); mu.Unlock() })
	defer st.Close()
	until := time.Now().Add(time.Hour)

	before := storagetest.NewEvent("stripe", "evt_before")
	if res, err := st.Enqueue(ctx, before, until); err != nil || res.Status != storage.StatusQueued {
		t.Fatalf("with Redis up: %+v, %v", res, err)
	}
	srv.Stop()
	down := time.Now()
	var ids []string
	for i := range 5 {
		ev := storagetest.NewEvent("stripe", fmt.Sprint("evt_", i))
		if i == 4 {
			ev.Dedupe, ev.EventID = false, "gen_"+ev.ID
		}
		res, err := st.Enqueue(ctx, ev, until)
		if err != nil || res.Duplicate || res.Status != storage.StatusSpooled || res.ID != ev.ID {
			t.Fatalf("event %d with Redis down: %+v, %v", i, res, err)
		}
		ids = append(ids, ev.EventID)
	}
	res, err := st.Enqueue(ctx, storagetest.NewEvent("stripe", "evt_2"), until)
	if err != nil || !res.Duplicate || res.Status != storage.StatusSpooled {
		t.Fatalf("resend of a spooled event: %+v, %v", res, err)
	}
	if info, err := st.Lookup(ctx, "stripe", "evt_1"); err != nil || info.Status != storage.StatusSpooled {
		t.Fatalf("Lookup of a spooled event: %+v, %v", info, err)
	}
	if _, err := st.Erase(ctx, "stripe", "evt_1", time.Now()); !errors.Is(err, storage.ErrSpooled) {
		t.Fatalf("Erase of a spooled event: %v, want ErrSpooled", err)
	}
	// Redis had this one: its resend is spooled, and a duplicate once moved
	if res, err := st.Enqueue(ctx, storagetest.NewEvent("stripe", "evt_before"), until); err != nil || res.Status != storage.StatusSpooled {
		t.Fatalf("resend of an event Redis has, Redis down: %+v, %v", res, err)
	}
	if n := sp.Stats().Events; n != 6 {
		t.Fatalf("%d events spooled, want 6", n)
	}
	time.Sleep(300 * time.Millisecond) // the mover fails meanwhile, and keeps them
	if n := sp.Stats().Events; n != 6 {
		t.Fatalf("%d events spooled while Redis is down, want 6", n)
	}

	srv.Restart()
	deadline := time.Now().Add(10 * time.Second)
	for !sp.Empty() {
		if time.Now().After(deadline) {
			t.Fatalf("%d events still spooled 10 s after Redis came back", sp.Stats().Events)
		}
		time.Sleep(20 * time.Millisecond)
	}
	got := leaseAll(t, st)
	want := map[string]int{"evt_before": 1}
	for _, id := range ids {
		want[id] = 1
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("leased from Redis %v, want each once: %v", got, want)
	}
	if info, err := st.Lookup(ctx, "stripe", "evt_1"); err != nil || info.Status == storage.StatusSpooled {
		t.Fatalf("Lookup once moved: %+v, %v", info, err)
	}
	mu.Lock()
	defer mu.Unlock()
	// a start with the first event spooled, an end with the six moved,
	// both dated from the start
	if len(changes) != 2 || !changes[0].Spooling || changes[0].Events != 1 || changes[0].Earlier ||
		changes[1].Spooling || changes[1].Events != 6 || !changes[1].Since.Equal(changes[0].Since) ||
		changes[0].Since.Before(down) || time.Since(changes[0].Since) > time.Minute {
		t.Fatalf("OnChange calls %+v, want a start (1 event) and an end (6 moved) since the first spooled", changes)
	}
}

// flaky is a store whose Enqueue is unavailable while down is set.
type flaky struct {
	storage.Store
	down  atomic.Bool
	calls atomic.Int64
}

func (f *flaky) Enqueue(ctx context.Context, ev *storage.Event, until time.Time) (storage.EnqueueResult, error) {
	f.calls.Add(1)
	if f.down.Load() {
		return storage.EnqueueResult{}, fmt.Errorf("%w: down", storage.ErrUnavailable)
	}
	return f.Store.Enqueue(ctx, ev, until)
}

// TestOrderedWaitsBehindSpool: while events are spooled, an event with an
// ordered delivery is spooled too even when the store answers, so that it
// reaches the store after those of its key spooled before it; the others
// go straight to the store.
func TestOrderedWaitsBehindSpool(t *testing.T) {
	ctx := t.Context()
	srv := redistest.Start(t)
	prefix := redistest.Prefix()
	dir := filepath.Join(t.TempDir(), "spool")
	sp, err := spool.Open(dir, spool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	inner := &flaky{Store: newRedis(t, srv, prefix)}
	// the mover tries once, fails, and waits an hour: the test decides
	// when the spool is moved (by opening it again)
	st := spool.NewStore(inner, sp, spool.StoreOptions{Retry: time.Hour})
	until := time.Now().Add(time.Hour)
	ordered := func(id string) *storage.Event {
		ev := storagetest.NewEvent("stripe", id)
		ev.Deliveries = []storage.Delivery{{Destination: "ledger", Upstream: "http://127.0.0.1:1/", OrderKey: "cus_1"}}
		return ev
	}
	inner.down.Store(true)
	if res, err := st.Enqueue(ctx, ordered("evt_a"), until); err != nil || res.Status != storage.StatusSpooled {
		t.Fatalf("ordered event, store down: %+v, %v", res, err)
	}
	// the mover's attempt (the second call) fails before the store is back
	for deadline := time.Now().Add(5 * time.Second); inner.calls.Load() < 2; {
		if time.Now().After(deadline) {
			t.Fatal("the mover did not try to move the spooled event")
		}
		time.Sleep(5 * time.Millisecond)
	}
	inner.down.Store(false)
	if res, err := st.Enqueue(ctx, storagetest.NewEvent("stripe", "evt_plain"), until); err != nil || res.Status != storage.StatusQueued {
		t.Fatalf("an event of no ordered destination, store back: %+v, %v", res, err)
	}
	calls := inner.calls.Load()
	if res, err := st.Enqueue(ctx, ordered("evt_c"), until); err != nil || res.Status != storage.StatusSpooled {
		t.Fatalf("ordered event behind the spool, store back: %+v, %v", res, err)
	}
	if inner.calls.Load() != calls {
		t.Fatal("the ordered event went to the store before the spool was moved")
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	// a new run moves the spool in order: evt_a heads its key, evt_c waits
	sp, err = spool.Open(dir, spool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st = spool.NewStore(newRedis(t, srv, prefix), sp, spool.StoreOptions{Retry: 50 * time.Millisecond})
	defer st.Close()
	deadline := time.Now().Add(10 * time.Second)
	for !sp.Empty() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	got := leaseAll(t, st)
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if fmt.Sprint(keys) != "[evt_a evt_plain]" {
		t.Fatalf("due after the move: %v, want evt_a (its key's head) and evt_plain, evt_c waiting behind evt_a", keys)
	}
}

// TestSpoolFullAnswersUnavailable: an event neither the store nor a full
// spool takes gets the store's answer class (storage.ErrUnavailable: 503).
func TestSpoolFullAnswersUnavailable(t *testing.T) {
	srv := redistest.Start(t)
	sp, err := spool.Open(filepath.Join(t.TempDir(), "spool"), spool.Options{MaxSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	inner := &flaky{Store: newRedis(t, srv, redistest.Prefix())}
	inner.down.Store(true)
	st := spool.NewStore(inner, sp, spool.StoreOptions{Retry: time.Hour})
	defer st.Close()
	_, err = st.Enqueue(t.Context(), storagetest.NewEvent("stripe", "evt_1"), time.Now().Add(time.Hour))
	if !errors.Is(err, storage.ErrUnavailable) || !errors.Is(err, spool.ErrFull) {
		t.Fatalf("store down, spool full: %v", err)
	}
	if !sp.Empty() {
		t.Fatal("a full spool took the event")
	}
}

// writesThenFails is a store whose first Enqueue of each event named in
// once stores it and answers unavailable: a reply lost, a WAIT for
// replicas that timed out.
type writesThenFails struct {
	storage.Store
	once sync.Map // event ID -> true until its first Enqueue
}

func (w *writesThenFails) Enqueue(ctx context.Context, ev *storage.Event, until time.Time) (storage.EnqueueResult, error) {
	res, err := w.Store.Enqueue(ctx, ev, until)
	if _, first := w.once.LoadAndDelete(ev.ID); err == nil && first {
		return storage.EnqueueResult{}, fmt.Errorf("%w: the reply was lost", storage.ErrUnavailable)
	}
	return res, err
}

// TestStoredThenSpooledDeliveredOnce: an event the store took but did not
// confirm is spooled; moved, it is found in the store (a deduplicated one
// by its claim, one without a provider id by its record) and delivered
// once.
func TestStoredThenSpooledDeliveredOnce(t *testing.T) {
	ctx := t.Context()
	srv := redistest.Start(t)
	sp, err := spool.Open(filepath.Join(t.TempDir(), "spool"), spool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	inner := &writesThenFails{Store: newRedis(t, srv, redistest.Prefix())}
	st := spool.NewStore(inner, sp, spool.StoreOptions{Retry: 50 * time.Millisecond})
	defer st.Close()
	dedup := storagetest.NewEvent("stripe", "evt_1")
	gen := storagetest.NewEvent("stripe", "")
	gen.Dedupe, gen.EventID = false, gen.ID
	for _, ev := range []*storage.Event{dedup, gen} {
		inner.once.Store(ev.ID, true)
		res, err := st.Enqueue(ctx, ev, time.Now().Add(time.Hour))
		if err != nil || res.Status != storage.StatusSpooled {
			t.Fatalf("%s stored but not confirmed: %+v, %v; want it spooled", ev.EventID, res, err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); !sp.Empty(); {
		if time.Now().After(deadline) {
			t.Fatal("the spool was not moved")
		}
		time.Sleep(20 * time.Millisecond)
	}
	got := leaseAll(t, st)
	if len(got) != 2 || got["evt_1"] != 1 || got[gen.EventID] != 1 {
		t.Fatalf("leased %v, want each event once", got)
	}
}

// recorder notes the event of every Enqueue call, in call order.
type recorder struct {
	storage.Store
	mu    sync.Mutex
	calls []string
}

func (r *recorder) Enqueue(ctx context.Context, ev *storage.Event, until time.Time) (storage.EnqueueResult, error) {
	r.mu.Lock()
	r.calls = append(r.calls, ev.EventID)
	r.mu.Unlock()
	return r.Store.Enqueue(ctx, ev, until)
}

// TestMoveFaults: the store fails a move at each of its steps — refused
// (no claim made), the claim and enqueue made and the reply lost, stalled
// past the mover's timeout — twice in a row, at the first, a middle (the
// event not deduplicated) and the last event of the spool. The mover
// keeps the event, tries again, never passes it, and in the end every
// spooled event is in the store once: moved in acceptance order.
func TestMoveFaults(t *testing.T) {
	srv := redistest.Start(t)
	const n = 5
	for _, mode := range []struct {
		name  string
		fault storagetest.Fault
	}{
		{"refused", storagetest.Fault{Err: storagetest.ErrInjected}},
		{"reply lost", storagetest.Fault{LoseReply: true}},
		{"stalled", storagetest.Fault{Stall: true}},
	} {
		for _, at := range []int{0, 2, n - 1} {
			t.Run(fmt.Sprintf("%s at move %d", mode.name, at+1), func(t *testing.T) {
				sp, err := spool.Open(filepath.Join(t.TempDir(), "spool"), spool.Options{})
				if err != nil {
					t.Fatal(err)
				}
				// Redis unreachable: the events are spooled
				down := &flaky{Store: newRedis(t, srv, redistest.Prefix())}
				down.down.Store(true)
				st := spool.NewStore(down, sp, spool.StoreOptions{Retry: time.Hour, CloseSpool: func() error { return nil }})
				order := map[string]int{}
				for i := range n {
					ev := storagetest.NewEvent("stripe", fmt.Sprint("evt_", i))
					if i == 2 {
						ev.Dedupe, ev.EventID = false, "gen_"+ev.ID
					}
					order[ev.EventID] = i
					if res, err := st.Enqueue(t.Context(), ev, time.Now().Add(time.Hour)); err != nil || res.Status != storage.StatusSpooled {
						t.Fatalf("event %d, Redis unreachable: %+v, %v", i, res, err)
					}
				}
				if err := st.Close(); err != nil {
					t.Fatal(err)
				}
				// Redis answers again, but fails the move at step at+1,
				// twice; only the mover of the next store calls it
				f := storagetest.NewFaulty(newRedis(t, srv, redistest.Prefix()))
				fault := mode.fault
				fault.After, fault.Times = at, 2
				f.Set(storagetest.MethodEnqueue, fault)
				rec := &recorder{Store: f}
				st = spool.NewStore(rec, sp, spool.StoreOptions{Retry: 20 * time.Millisecond, MoveTimeout: 200 * time.Millisecond})
				defer st.Close()
				deadline := time.Now().Add(10 * time.Second)
				for !sp.Empty() {
					if time.Now().After(deadline) {
						t.Fatalf("%d events still spooled after 10 s", sp.Stats().Events)
					}
					time.Sleep(10 * time.Millisecond)
				}
				got := leaseAll(t, f.Inner())
				if len(got) != n {
					t.Fatalf("leased %v, want the %d events", got, n)
				}
				for id, c := range got {
					if c != 1 {
						t.Errorf("%s leased %d times", id, c)
					}
				}
				rec.mu.Lock()
				defer rec.mu.Unlock()
				last, tries := -1, map[int]int{}
				for _, id := range rec.calls {
					i := order[id]
					if i < last {
						t.Fatalf("moves in the order %v: an event moved before one accepted earlier was in the store", rec.calls)
					}
					last = i
					tries[i]++
				}
				for i := range n {
					if want := map[bool]int{true: 3, false: 1}[i == at]; tries[i] != want {
						t.Errorf("event %d tried %d times, want %d (calls %v)", i, tries[i], want, rec.calls)
					}
				}
			})
		}
	}
}

// TestEarlierSpoolReported: a spool an earlier run left is reported as a
// start (Earlier, with its events and its oldest event's time) to the
// first OnChange hook, not to a later one (a reload's), and its end once
// the store takes the events.
func TestEarlierSpoolReported(t *testing.T) {
	srv := redistest.Start(t)
	dir := filepath.Join(t.TempDir(), "spool")
	inner := &flaky{Store: newRedis(t, srv, redistest.Prefix())}
	inner.down.Store(true)
	sp, err := spool.Open(dir, spool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := spool.NewStore(inner, sp, spool.StoreOptions{Retry: time.Hour})
	first := time.Now()
	for i := range 3 {
		if _, err := st.Enqueue(t.Context(), storagetest.NewEvent("stripe", fmt.Sprint("evt_", i)), time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	sp, err = spool.Open(dir, spool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	inner = &flaky{Store: newRedis(t, srv, redistest.Prefix())} // the next run's
	inner.down.Store(true)
	st = spool.NewStore(inner, sp, spool.StoreOptions{Retry: 20 * time.Millisecond})
	defer st.Close()
	changes := make(chan spool.Change, 4)
	st.OnChange(func(c spool.Change) { changes <- c })
	select {
	case c := <-changes:
		if !c.Spooling || !c.Earlier || c.Events != 3 || c.Since.Before(first.Add(-time.Second)) || c.Since.After(time.Now()) {
			t.Fatalf("first hook got %+v, want the earlier run's start with 3 events", c)
		}
	default:
		t.Fatal("the first hook was not told of the earlier run's spool")
	}
	st.OnChange(func(c spool.Change) { changes <- c }) // a reload's hook
	inner.down.Store(false)
	select {
	case c := <-changes:
		if c.Spooling || c.Events != 3 {
			t.Fatalf("then %+v, want the end with 3 moved", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no end reported 10 s after the store answered")
	}
}
