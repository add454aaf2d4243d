package redisstore

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/storagetest"
)

func openTest(t *testing.T, addr string, opts Options) *Store {
	t.Helper()
	s := New(redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{addr}}), opts)
	t.Cleanup(func() { s.Close() })
	return s
}

// replyDropper is a TCP proxy in front of Redis that counts the commands
// containing watch it forwards, and, when armed, forwards the next such
// command but drops its reply and cuts the connection: the command ran,
// the client saw only a network error.
type replyDropper struct {
	l      net.Listener
	target string
	watch  atomic.Pointer[[]byte]
	hits   atomic.Int64
	armed  atomic.Bool
	wg     sync.WaitGroup
}

func newReplyDropper(t *testing.T, target string) *replyDropper {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &replyDropper{l: l, target: target}
	p.wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			p.wg.Go(func() { p.serve(c) })
		}
	})
	t.Cleanup(func() {
		l.Close()
		p.wg.Wait()
	})
	return p
}

func (p *replyDropper) addr() string { return p.l.Addr().String() }

// watchFor starts counting (and, if armed, cutting) commands containing w.
func (p *replyDropper) watchFor(w string, arm bool) {
	b := []byte(w)
	p.watch.Store(&b)
	p.hits.Store(0)
	p.armed.Store(arm)
}

func (p *replyDropper) serve(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer server.Close()
	var cut atomic.Bool
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := server.Read(buf)
			if n > 0 && !cut.Load() {
				if _, werr := client.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				client.Close()
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	var tail []byte
	for {
		n, err := client.Read(buf)
		if n > 0 {
			hit := false
			if w := p.watch.Load(); w != nil && len(*w) > 0 {
				// a match may straddle two reads; tail is too short to hold one
				data := append(tail, buf[:n]...)
				if k := bytes.Count(data, *w); k > 0 {
					p.hits.Add(int64(k))
					hit = true
				}
				tail = append([]byte(nil), data[max(0, len(data)-len(*w)+1):]...)
			}
			if hit && p.armed.CompareAndSwap(true, false) {
				cut.Store(true) // before the command reaches Redis: its reply is never forwarded
				_, _ = server.Write(buf[:n])
				time.Sleep(200 * time.Millisecond) // Redis runs it
				return
			}
			if _, werr := server.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return
			}
			return
		}
	}
}

// TestLostReplyNotRerun: go-redis resends a command whose connection broke
// after it was written (MaxRetries, 3 by default). The writes that must
// not run twice are sent once: a lost reply is an error to the caller,
// never a second run whose answer ("lease lost", "conflict", a double
// count) would be wrong. Enqueue may be resent: its second run answers
// "stored", as the first did.
func TestLostReplyNotRerun(t *testing.T) {
	srv := redistest.Start(t)
	prefix := redistest.Prefix()
	direct := openTest(t, srv.Addr, Options{Prefix: prefix, Partitions: 4})
	proxy := newReplyDropper(t, srv.Addr)
	// go-redis's defaults: MaxRetries 3
	s := openTest(t, proxy.addr(), Options{Prefix: prefix, Partitions: 4})
	ctx := t.Context()
	until := time.Now().Add(time.Hour)
	// the scripts are on the server, so that every call is one EVALSHA
	for _, sc := range []*redis.Script{enqueueScript, fanEnqueueScript, leaseScript, finishScript, finishManyScript, dlqRetryScript, dlqStatusScript, layoutScript} {
		if err := sc.Load(ctx, direct.c).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CheckLayout(ctx); err != nil {
		t.Fatal(err)
	}
	queued := func(t *testing.T) *storage.Job {
		t.Helper()
		ev := storagetest.NewEvent("stripe", "evt_"+uuid.NewString())
		if _, err := direct.Enqueue(ctx, ev, until); err != nil {
			t.Fatal(err)
		}
		return &storage.Job{Event: *ev}
	}
	leased := func(t *testing.T) *storage.Job {
		t.Helper()
		job := queued(t)
		jobs, err := direct.Lease(ctx, time.Now().Add(time.Second), 100, time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			if j.ID == job.ID {
				return j
			}
		}
		t.Fatalf("lease: %d jobs, not the one queued", len(jobs))
		return nil
	}
	dead := func(t *testing.T) *storage.Job {
		t.Helper()
		job := leased(t)
		if err := direct.Finish(ctx, job, storage.Outcome{Result: storage.Dead, Error: "gone"}); err != nil {
			t.Fatal(err)
		}
		return job
	}
	lost := func(t *testing.T, err error) {
		t.Helper()
		if !errors.Is(err, storage.ErrUnavailable) {
			t.Fatalf("err = %v, want ErrUnavailable for a lost reply", err)
		}
	}
	once := func(t *testing.T) {
		t.Helper()
		if h := proxy.hits.Load(); h != 1 {
			t.Fatalf("the command was sent %d times, want once", h)
		}
	}

	t.Run("finish", func(t *testing.T) {
		job := leased(t)
		proxy.watchFor(finishManyScript.Hash(), true)
		lost(t, s.Finish(ctx, job, storage.Outcome{Result: storage.Delivered}))
		once(t)
		if info, err := direct.Lookup(ctx, "stripe", job.EventID); err != nil || info.Status != storage.StatusDelivered {
			t.Fatalf("after the lost reply: %+v %v; want delivered (the first run applied)", info, err)
		}
	})
	t.Run("lease", func(t *testing.T) {
		// drain what earlier subtests left due
		for {
			jobs, err := direct.Lease(ctx, time.Now().Add(time.Second), 100, time.Hour, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(jobs) == 0 {
				break
			}
		}
		job := queued(t)
		proxy.watchFor(leaseScript.Hash(), true)
		jobs, err := s.Lease(ctx, time.Now().Add(time.Second), 10, time.Minute, nil)
		lost(t, err)
		if len(jobs) != 0 {
			t.Fatalf("leased %d jobs", len(jobs))
		}
		once(t)
		if info, err := direct.Lookup(ctx, "stripe", job.EventID); err != nil || info.Status != storage.StatusInFlight {
			t.Fatalf("after the lost reply: %+v %v; want in flight until the lease expires", info, err)
		}
	})
	t.Run("dlq retry", func(t *testing.T) {
		job := dead(t)
		proxy.watchFor(dlqRetryScript.Hash(), true)
		lost(t, s.DLQRetry(ctx, job.ID, time.Now()))
		once(t)
		if e, err := direct.DLQGet(ctx, job.ID); err != nil || e.Status != storage.DLQRetried || e.Retries != 1 {
			t.Fatalf("entry after the lost reply: %+v %v", e, err)
		}
	})
	t.Run("dlq status", func(t *testing.T) {
		job := dead(t)
		proxy.watchFor(dlqStatusScript.Hash(), true)
		lost(t, s.DLQSetStatus(ctx, job.ID, storage.DLQResolved, "fixed", time.Now()))
		once(t)
		if e, err := direct.DLQGet(ctx, job.ID); err != nil || e.Status != storage.DLQResolved {
			t.Fatalf("entry after the lost reply: %+v %v", e, err)
		}
	})
	t.Run("stats", func(t *testing.T) {
		// sent at most once; the writer sends the batch again under its ID
		// (as the app does after an error), and it counts once
		batch := storage.StatsBatch{ID: "batch-lost-reply", At: time.Now(), Counters: map[string]map[string]int64{"stripe": {"accepted": 1}}}
		proxy.watchFor(statsScript.Hash(), true)
		lost(t, s.AddStats(ctx, batch))
		once(t)
		proxy.watchFor(statsScript.Hash(), false)
		if err := s.AddStats(ctx, batch); err != nil {
			t.Fatal(err)
		}
		if _, all, err := direct.Stats(ctx, time.Now().Add(-time.Minute)); err != nil || all["stripe"]["accepted"] != 1 {
			t.Fatalf("all-time stats %v %v, want counted once", all, err)
		}
	})
	t.Run("enqueue is resent and answers stored", func(t *testing.T) {
		before, err := direct.Counts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ev := storagetest.NewEvent("stripe", "evt_resent")
		proxy.watchFor(enqueueScript.Hash(), true)
		res, err := s.Enqueue(ctx, ev, until)
		if err != nil || res.Duplicate || res.ID != ev.ID {
			t.Fatalf("Enqueue after a lost reply: %+v %v; want stored", res, err)
		}
		if h := proxy.hits.Load(); h != 2 {
			t.Fatalf("enqueue sent %d times, want 2 (go-redis resends it)", h)
		}
		if c, err := direct.Counts(ctx); err != nil || c.Queued != before.Queued+1 {
			t.Fatalf("counts %+v %v, want one more queued", c, err)
		}
	})
	t.Run("fan-out enqueue is resent and answers stored", func(t *testing.T) {
		before, err := direct.Counts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ev := payloadEvent("evt_fan_resent")
		proxy.watchFor(fanEnqueueScript.Hash(), true)
		res, err := s.Enqueue(ctx, ev, until)
		if err != nil || res.Duplicate || res.ID != ev.ID {
			t.Fatalf("Enqueue after a lost reply: %+v %v; want stored", res, err)
		}
		if h := proxy.hits.Load(); h != 2 {
			t.Fatalf("enqueue sent %d times, want 2 (go-redis resends it)", h)
		}
		if c, err := direct.Counts(ctx); err != nil || c.Queued != before.Queued+3 {
			t.Fatalf("counts %+v %v, want three more queued", c, err)
		}
	})
}

// panicHook panics in pipelines while armed (a bug in go-redis or in a
// hook of the user's: hooks run in the batcher's goroutine).
type panicHook struct{ armed atomic.Bool }

func (h *panicHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *panicHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *panicHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.armed.Load() {
			panic("hook boom")
		}
		return next(ctx, cmds)
	}
}

// TestBatchPanicRecovered: a panic while a batch of enqueues (or finishes)
// is sent fails the calls of that batch with an error; the process and the
// batcher live on.
func TestBatchPanicRecovered(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{srv.Addr}})
	hook := new(panicHook)
	c.AddHook(hook)
	s := New(c, Options{Prefix: redistest.Prefix(), Partitions: 4})
	defer s.Close()
	ctx := t.Context()
	until := time.Now().Add(time.Hour)
	if err := s.CheckLayout(ctx); err != nil {
		t.Fatal(err)
	}

	hook.armed.Store(true)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { _, errs[i] = s.Enqueue(ctx, storagetest.NewEvent("stripe", uuid.NewString()), until) })
	}
	wg.Wait()
	for i, err := range errs {
		var pe *storage.PanicError
		if !errors.As(err, &pe) || !errors.Is(err, storage.ErrUnavailable) || !strings.Contains(err.Error(), "hook boom") {
			t.Errorf("enqueue %d during the panics: err = %v, want a PanicError", i, err)
		}
	}
	// leases (direct pipelines) too
	if _, err := s.Lease(ctx, time.Now(), 1, time.Minute, nil); !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("Lease during the panics: %v", err)
	}
	hook.armed.Store(false)
	ev := storagetest.NewEvent("stripe", "evt_after_panic")
	if res, err := s.Enqueue(ctx, ev, until); err != nil || res.Duplicate {
		t.Fatalf("Enqueue after the panics: %+v %v", res, err)
	}
	jobs, err := s.Lease(ctx, time.Now().Add(time.Second), 10, time.Minute, nil)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Lease after the panics: %d %v", len(jobs), err)
	}
	hook.armed.Store(true)
	if err := s.Finish(ctx, jobs[0], storage.Outcome{Result: storage.Delivered}); !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("Finish during the panics: %v", err)
	}
	hook.armed.Store(false)
	if err := s.Finish(ctx, jobs[0], storage.Outcome{Result: storage.Delivered}); err != nil {
		t.Errorf("Finish after the panics: %v", err)
	}
}

// TestPoisonRecordDeadLettered: a job whose stored event cannot be decoded
// goes to the DLQ at the lease that meets it, instead of coming back at
// every lease expiry forever.
func TestPoisonRecordDeadLettered(t *testing.T) {
	srv := redistest.Start(t)
	s := openTest(t, srv.Addr, Options{Prefix: redistest.Prefix(), Partitions: 4})
	defer storagetest.WantRecounted(t, s, "after the poison record")
	ctx := t.Context()
	until := time.Now().Add(time.Hour)
	bad, good := storagetest.NewEvent("stripe", "evt_poison"), storagetest.NewEvent("github", "evt_good")
	for _, ev := range []*storage.Event{bad, good} {
		if _, err := s.Enqueue(ctx, ev, until); err != nil {
			t.Fatal(err)
		}
	}
	const garbage = "\x00not json"
	if err := s.c.HSet(ctx, s.partitionForEvent(bad).ev(bad.ID), "ev", garbage).Err(); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(time.Second)
	jobs, err := s.Lease(ctx, now, 10, time.Minute, nil)
	if err != nil || len(jobs) != 1 || jobs[0].ID != good.ID {
		t.Fatalf("Lease with a poison record: %d jobs, %v; want the good one", len(jobs), err)
	}
	e, err := s.DLQGet(ctx, bad.ID)
	if err != nil {
		t.Fatalf("no DLQ entry for the poison record: %v", err)
	}
	if !strings.HasPrefix(e.Error, storage.PoisonReason) || e.Status != storage.DLQPending ||
		e.Source != "stripe" || e.EventID != "evt_poison" || string(e.Payload) != garbage {
		t.Errorf("DLQ entry %+v", e)
	}
	if c, err := s.Counts(ctx); err != nil || c.Queued != 0 || c.InFlight != 1 || c.Dead != 1 {
		t.Errorf("counts %+v %v, want the good one in flight and one dead", c, err)
	}
	// after the leases expire only the good job comes back
	if jobs, err := s.Lease(ctx, now.Add(time.Hour), 10, time.Minute, nil); err != nil || len(jobs) != 1 || jobs[0].ID != good.ID {
		t.Errorf("later lease: %d jobs, %v", len(jobs), err)
	}
	if info, err := s.Lookup(ctx, "stripe", "evt_poison"); err != nil || info.Status != storage.StatusDead {
		t.Errorf("Lookup of the poison event: %+v %v", info, err)
	}
}

// TestPartitionCountChange: the partition count is recorded on first use;
// a Store configured with another count refuses to write or lease (the
// queued events would be orphaned), with an error that says what to do,
// and Open fails at once.
func TestPartitionCountChange(t *testing.T) {
	srv := redistest.Start(t)
	prefix := redistest.Prefix()
	ctx := t.Context()
	first := openTest(t, srv.Addr, Options{Prefix: prefix, Partitions: 4})
	ev := storagetest.NewEvent("stripe", "evt_1")
	if _, err := first.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}

	changed := openTest(t, srv.Addr, Options{Prefix: prefix, Partitions: 8})
	want := "redis store at " + prefix + " was created with 4 partitions; this config says 8: "
	check := func(what string, err error) {
		t.Helper()
		var le *LayoutError
		if !errors.As(err, &le) || !errors.Is(err, storage.ErrUnavailable) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s with another partition count: err = %v, want %q", what, err, want)
		}
	}
	_, err := changed.Enqueue(ctx, storagetest.NewEvent("stripe", "evt_2"), time.Now().Add(time.Hour))
	check("Enqueue", err)
	_, err = changed.Lease(ctx, time.Now().Add(time.Second), 10, time.Minute, nil)
	check("Lease", err)
	_, _, err = changed.NextDue(ctx, nil)
	check("NextDue", err)
	check("CheckLayout", changed.CheckLayout(ctx))

	_, err = Open(ctx, redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{srv.Addr}}), Options{Prefix: prefix, Partitions: 8})
	check("Open", err)
	// with the right count all is well, and the event is there
	again, err := Open(ctx, redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{srv.Addr}}), Options{Prefix: prefix, Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if jobs, err := again.Lease(ctx, time.Now().Add(time.Second), 10, time.Minute, nil); err != nil || len(jobs) != 1 {
		t.Fatalf("Lease with the recorded count: %d %v", len(jobs), err)
	}
	// Redis unreachable at Open: the Store is returned, the check waits
	down, err := Open(ctx, redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:1"}, MaxRetries: -1}), Options{Prefix: prefix, Partitions: 8})
	if err != nil || down == nil {
		t.Fatalf("Open with Redis unreachable: %v", err)
	}
	down.Close()
}
