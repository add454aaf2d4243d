package groupcommit_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/groupcommit"
)

type call = groupcommit.Call[int, int]

// recorder is a run function that records its rounds and holds each one
// until it is let through (a token on proceed, or proceed closed). It
// answers req*10.
type recorder struct {
	proceed chan struct{}
	started chan []int // each round's requests, as it starts

	mu     sync.Mutex
	rounds [][]int
}

func newRecorder() *recorder {
	return &recorder{proceed: make(chan struct{}), started: make(chan []int, 1000)}
}

func (r *recorder) run(batch []*call) {
	reqs := make([]int, len(batch))
	for i, c := range batch {
		reqs[i] = c.Req
	}
	r.mu.Lock()
	r.rounds = append(r.rounds, reqs)
	r.mu.Unlock()
	r.started <- reqs
	<-r.proceed
	for _, c := range batch {
		c.Answer(c.Req*10, nil)
	}
}

// ran is every request run so far.
func (r *recorder) ran() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Concat(r.rounds...)
}

func (r *recorder) sizes() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n []int
	for _, round := range r.rounds {
		n = append(n, len(round))
	}
	return n
}

// outcome is the result of a Do running in its own goroutine.
type outcome struct {
	req  int
	res  int
	err  error
	done chan struct{}
}

func goDo(b *groupcommit.Batcher[int, int], ctx context.Context, req int) *outcome {
	o := &outcome{req: req, done: make(chan struct{})}
	go func() {
		defer close(o.done)
		o.res, o.err = b.Do(ctx, req)
	}()
	return o
}

func (o *outcome) wait(t *testing.T) *outcome {
	t.Helper()
	select {
	case <-o.done:
		return o
	case <-time.After(5 * time.Second):
		t.Fatal("Do did not return within 5s")
		return nil
	}
}

func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("nothing received within 5s")
		var zero T
		return zero
	}
}

func waitQueued(t *testing.T, b *groupcommit.Batcher[int, int], n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for b.Queued() != n {
		if time.Now().After(deadline) {
			t.Fatalf("queued = %d, want %d", b.Queued(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestBatching: the first request goes at once, the ones arriving while a
// round runs share the next round (up to MaxBatch), and each caller gets
// its own answer.
func TestBatching(t *testing.T) {
	for _, tc := range []struct {
		name     string
		callers  int
		maxBatch int
	}{
		{"one caller", 1, 8},
		{"all in one round", 16, 128},
		{"exactly max", 8, 8},
		{"more than max", 20, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorder()
			b := groupcommit.New(r.run, groupcommit.Options[int]{MaxBatch: tc.maxBatch})
			defer b.Close()
			ctx := t.Context()

			// a lone request does not wait for anyone
			first := goDo(b, ctx, -1)
			if got := recv(t, r.started); !slices.Equal(got, []int{-1}) {
				t.Fatalf("first round %v, want [-1]", got)
			}
			outs := make([]*outcome, tc.callers)
			for i := range outs {
				outs[i] = goDo(b, ctx, i)
			}
			waitQueued(t, b, min(tc.callers, tc.maxBatch))
			close(r.proceed)
			if o := first.wait(t); o.err != nil || o.res != -10 {
				t.Fatalf("first: %d, %v", o.res, o.err)
			}
			for i, o := range outs {
				if o.wait(t); o.err != nil || o.res != i*10 {
					t.Errorf("caller %d: %d, %v, want %d", i, o.res, o.err, i*10)
				}
			}
			sizes := r.sizes()
			if len(sizes) < 2 || sizes[0] != 1 {
				t.Fatalf("rounds %v", sizes)
			}
			total := 0
			for _, n := range sizes[1:] {
				total += n
				if n > tc.maxBatch {
					t.Errorf("round of %d, more than MaxBatch %d (rounds %v)", n, tc.maxBatch, sizes)
				}
			}
			if total != tc.callers {
				t.Errorf("rounds %v ran %d requests, want %d", sizes, total, tc.callers)
			}
			if tc.callers <= tc.maxBatch && len(sizes) != 2 {
				t.Errorf("rounds %v, want [1 %d]", sizes, tc.callers)
			}
			if tc.callers > 1 && len(sizes)-1 >= tc.callers {
				t.Errorf("%d callers took %d rounds: no batching", tc.callers, len(sizes)-1)
			}
		})
	}
}

// TestConcurrentCallers: many callers at once, with no holding back, each
// get their own answer, and every request runs exactly once.
func TestConcurrentCallers(t *testing.T) {
	r := newRecorder()
	close(r.proceed)
	b := groupcommit.New(r.run, groupcommit.Options[int]{MaxBatch: 16})
	defer b.Close()
	const n = 500
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if res, err := b.Do(t.Context(), i); err != nil || res != i*10 {
				t.Errorf("caller %d: %d, %v", i, res, err)
			}
		})
	}
	wg.Wait()
	ran := r.ran()
	slices.Sort(ran)
	for i, req := range ran {
		if req != i {
			t.Fatalf("ran %d requests, want each of 0..%d once", len(ran), n-1)
		}
	}
	t.Logf("%d callers, %d rounds", n, len(r.sizes()))
}

// TestContext: a caller whose context ends gets ctx's error at once; a
// request abandoned before its round started never runs; one abandoned
// while its round runs is reported to Options.Abandon.
func TestContext(t *testing.T) {
	for _, tc := range []struct {
		name string
		// where the request is when its context ends
		where    string // "before Do", "queued", "queue full", "running"
		deadline bool   // the context times out instead of being cancelled
	}{
		{"cancelled before Do", "before Do", false},
		{"cancelled while queued", "queued", false},
		{"deadline while queued", "queued", true},
		{"cancelled while waiting for room in the queue", "queue full", false},
		{"cancelled while its round runs", "running", false},
		{"deadline while its round runs", "running", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorder()
			var abandonedMu sync.Mutex
			var abandoned []int
			b := groupcommit.New(r.run, groupcommit.Options[int]{MaxBatch: 1, Abandon: func(req int) {
				abandonedMu.Lock()
				abandoned = append(abandoned, req)
				abandonedMu.Unlock()
			}})
			defer b.Close()

			const deadline = 100 * time.Millisecond
			ctx, cancel := context.WithCancel(t.Context())
			want := context.Canceled
			if tc.deadline {
				ctx, cancel = context.WithTimeout(t.Context(), deadline)
				want = context.DeadlineExceeded
			}
			defer cancel()

			var first, filler *outcome
			if tc.where != "running" {
				// a first round holds the batcher
				first = goDo(b, t.Context(), 1)
				recv(t, r.started)
			}
			if tc.where == "queue full" {
				filler = goDo(b, t.Context(), 2)
				waitQueued(t, b, 1)
			}
			if tc.where == "before Do" {
				cancel()
			}
			o := goDo(b, ctx, 42)
			switch tc.where {
			case "queued":
				waitQueued(t, b, 1)
			case "queue full":
				time.Sleep(20 * time.Millisecond) // let it block on the full queue
			case "running":
				recv(t, r.started)
			}
			if !tc.deadline {
				cancel()
			}
			start := time.Now()
			if o.wait(t); !errors.Is(o.err, want) {
				t.Fatalf("err = %v, want %v", o.err, want)
			}
			if waited := time.Since(start); waited > time.Second {
				t.Errorf("Do returned %v after its context ended", waited)
			}

			// let everything run
			close(r.proceed)
			if first != nil {
				first.wait(t)
			}
			if filler != nil {
				filler.wait(t)
			}
			// a later request runs after the abandoned one would have
			if o := goDo(b, t.Context(), 7).wait(t); o.err != nil || o.res != 70 {
				t.Fatalf("later request: %d, %v", o.res, o.err)
			}

			ran := slices.Contains(r.ran(), 42)
			abandonedMu.Lock()
			hooked := slices.Equal(abandoned, []int{42})
			abandonedMu.Unlock()
			if tc.where == "running" {
				if !ran || !hooked {
					t.Errorf("abandoned while running: ran %v, Abandon called %v; want both", ran, hooked)
				}
				return
			}
			if ran {
				t.Errorf("a request abandoned before its round ran (rounds %v)", r.ran())
			}
			if len(abandoned) != 0 {
				t.Errorf("Abandon called for %v, a request that never ran", abandoned)
			}
		})
	}
}

// TestAnswerStands: a caller whose context ends after its answer arrived
// gets the answer (Abandon sees it first).
func TestAnswerStands(t *testing.T) {
	answered := make(chan struct{})
	ctx, cancel := context.WithCancel(t.Context())
	b := groupcommit.New(func(batch []*call) {
		for _, c := range batch {
			c.Answer(c.Req*10, nil)
		}
		close(answered)
		<-ctx.Done() // the round ends only after the caller's context
	}, groupcommit.Options[int]{Abandon: func(int) {}})
	defer b.Close()
	o := goDo(b, ctx, 3)
	<-answered
	cancel()
	if o.wait(t); o.res != 30 || o.err != nil {
		t.Fatalf("%d, %v", o.res, o.err)
	}
}

type customPanic struct{ v any }

func (e customPanic) Error() string { return fmt.Sprint("custom: ", e.v) }

// TestFailures: a run function that panics, or forgets requests, fails
// the round's unanswered requests (answered ones keep their answer), and
// the batcher lives on.
func TestFailures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		recover func(any) error
		fail    func()
		want    func(error) bool
	}{
		{"panic, default recover", nil, func() { panic("boom") }, func(err error) bool {
			var pe *groupcommit.PanicError
			return errors.As(err, &pe) && pe.Value == "boom" && len(pe.Stack) > 0
		}},
		{"panic, custom recover", func(v any) error { return customPanic{v} }, func() { panic("boom") }, func(err error) bool {
			var ce customPanic
			return errors.As(err, &ce) && ce.v == "boom"
		}},
		{"panic with an error", nil, func() { panic(errors.New("wrapped")) }, func(err error) bool {
			var pe *groupcommit.PanicError
			return errors.As(err, &pe) && pe.Error() == "groupcommit: panic in a batch: wrapped"
		}},
		{"not answered", nil, func() {}, func(err error) bool { return errors.Is(err, groupcommit.ErrUnanswered) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proceed := make(chan struct{})
			started := make(chan struct{}, 10)
			var failing atomic.Bool
			failing.Store(true)
			b := groupcommit.New(func(batch []*call) {
				started <- struct{}{}
				<-proceed
				// the first request of a batch is answered before the failure
				batch[0].Answer(batch[0].Req*10, nil)
				if failing.Load() {
					tc.fail()
					return
				}
				for _, c := range batch[1:] {
					c.Answer(c.Req*10, nil)
				}
			}, groupcommit.Options[int]{Recover: tc.recover})
			defer b.Close()
			ctx := t.Context()

			holder := goDo(b, ctx, 0)
			<-started
			outs := []*outcome{goDo(b, ctx, 1), goDo(b, ctx, 2), goDo(b, ctx, 3)}
			waitQueued(t, b, 3)
			close(proceed)
			if o := holder.wait(t); o.err != nil || o.res != 0 {
				t.Errorf("answered before the failure: %d, %v", o.res, o.err)
			}
			var ok, failed int
			for _, o := range outs {
				switch o.wait(t); {
				case o.err == nil && o.res == o.req*10:
					ok++
				case tc.want(o.err):
					failed++
				default:
					t.Errorf("unexpected outcome %d, %v", o.res, o.err)
				}
			}
			if ok != 1 || failed != 2 {
				t.Errorf("%d answered, %d failed; want 1 answered (the first of the batch), 2 failed", ok, failed)
			}
			// the batcher lives on
			failing.Store(false)
			if o := goDo(b, ctx, 9).wait(t); o.err != nil || o.res != 90 {
				t.Fatalf("after the failure: %d, %v", o.res, o.err)
			}
		})
	}
}

// TestClose: Close lets the running round finish, answers queued requests
// with the closed error (they never run), and no caller hangs; Do after
// Close fails at once.
func TestClose(t *testing.T) {
	errGone := errors.New("gone")
	for _, tc := range []struct {
		name   string
		closed error
		want   error
	}{
		{"default error", nil, groupcommit.ErrClosed},
		{"custom error", errGone, errGone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorder()
			b := groupcommit.New(r.run, groupcommit.Options[int]{MaxBatch: 4, Closed: tc.closed})
			ctx := t.Context()

			running := goDo(b, ctx, 1)
			recv(t, r.started)
			var queued []*outcome
			for i := range 6 { // 4 queued, 2 waiting for room
				queued = append(queued, goDo(b, ctx, 10+i))
			}
			waitQueued(t, b, 4)
			closed := make(chan struct{})
			go func() {
				b.Close()
				close(closed)
			}()
			time.Sleep(20 * time.Millisecond)
			select {
			case <-closed:
				t.Fatal("Close returned while a round was running")
			default:
			}
			close(r.proceed)
			recv(t, closed)
			if o := running.wait(t); o.err != nil || o.res != 10 {
				t.Errorf("the running round: %d, %v", o.res, o.err)
			}
			for i, o := range queued {
				if o.wait(t); !errors.Is(o.err, tc.want) {
					t.Errorf("queued request %d: %d, %v, want %v", i, o.res, o.err, tc.want)
				}
			}
			if ran := r.ran(); !slices.Equal(ran, []int{1}) {
				t.Errorf("ran %v after Close, want only [1]", ran)
			}
			if _, err := b.Do(ctx, 99); !errors.Is(err, tc.want) {
				t.Errorf("Do after Close: %v, want %v", err, tc.want)
			}
			b.Close() // again: no-op
		})
	}
}

// TestCloseIdle: closing a batcher nobody uses returns at once.
func TestCloseIdle(t *testing.T) {
	b := groupcommit.New(func([]*call) {}, groupcommit.Options[int]{})
	done := make(chan struct{})
	go func() {
		b.Close()
		close(done)
	}()
	recv(t, done)
	if o := goDo(b, t.Context(), 1).wait(t); !errors.Is(o.err, groupcommit.ErrClosed) {
		t.Fatalf("Do after Close: %v", o.err)
	}
}

// loopCallers runs callers goroutines that each call Do n times in a row,
// and returns once they are done.
func loopCallers(t *testing.T, b *groupcommit.Batcher[int, int], callers, n int) {
	t.Helper()
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for i := range n {
				if res, err := b.Do(t.Context(), c*1000+i); err != nil || res != (c*1000+i)*10 {
					t.Errorf("caller %d: %d, %v", c, res, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// sleeper is a run function that takes d per round (an fsync), recording
// the rounds' sizes and, for a lone caller's rounds, when they started.
type sleeper struct {
	d      time.Duration
	mu     sync.Mutex
	sizes  []int
	starts []time.Time
}

func (s *sleeper) run(batch []*call) {
	s.mu.Lock()
	s.sizes = append(s.sizes, len(batch))
	s.starts = append(s.starts, time.Now())
	s.mu.Unlock()
	time.Sleep(s.d)
	for _, c := range batch {
		c.Answer(c.Req*10, nil)
	}
}

// TestLinger: with Options.Linger, two callers in a loop share their
// rounds instead of taking turns (each round serving the one that waited
// through the previous one), and a lone caller never waits.
func TestLinger(t *testing.T) {
	t.Run("two callers share rounds", func(t *testing.T) {
		s := &sleeper{d: 4 * time.Millisecond} // a round may wait up to 1ms
		b := groupcommit.New(s.run, groupcommit.Options[int]{Linger: time.Second})
		defer b.Close()
		loopCallers(t, b, 2, 30)
		// taking turns is about 60 rounds of 1; sharing, about 30 of 2
		if n := len(s.sizes); n > 42 {
			t.Errorf("60 requests of 2 looping callers took %d rounds, want at most 42: %v", n, s.sizes)
		}
	})
	t.Run("a lone caller does not wait", func(t *testing.T) {
		s := &sleeper{d: 40 * time.Millisecond} // a round could wait 10ms
		b := groupcommit.New(s.run, groupcommit.Options[int]{Linger: time.Second})
		defer b.Close()
		var late int
		for i := range 6 {
			asked := time.Now()
			if _, err := b.Do(t.Context(), i); err != nil {
				t.Fatal(err)
			}
			s.mu.Lock()
			if s.starts[i].Sub(asked) > 5*time.Millisecond {
				late++
			}
			s.mu.Unlock()
		}
		// one late start may be the scheduler's; waiting would make all late
		if late > 1 {
			t.Errorf("%d of 6 rounds of a lone caller started more than 5ms after its request", late)
		}
	})
	t.Run("close while a round waits", func(t *testing.T) {
		r := newRecorder()
		b := groupcommit.New(r.run, groupcommit.Options[int]{Linger: time.Hour})
		ctx := t.Context()
		// a round of two makes the next round wait for two callers
		first := goDo(b, ctx, 1)
		recv(t, r.started)
		second, third := goDo(b, ctx, 2), goDo(b, ctx, 3)
		waitQueued(t, b, 2)
		r.proceed <- struct{}{}
		first.wait(t)
		recv(t, r.started)                 // [2 3]
		time.Sleep(400 * time.Millisecond) // the next round may wait 100ms
		close(r.proceed)
		second.wait(t)
		third.wait(t)
		// a lone request now waits for a second caller; Close ends it at once
		fourth := goDo(b, ctx, 4)
		waitQueued(t, b, 0)
		start := time.Now()
		b.Close()
		if d := time.Since(start); d > 50*time.Millisecond {
			t.Errorf("Close took %v while a round waited", d)
		}
		if o := fourth.wait(t); !errors.Is(o.err, groupcommit.ErrClosed) {
			t.Errorf("a request of a round waiting at Close: %d, %v, want ErrClosed", o.res, o.err)
		}
	})
}
