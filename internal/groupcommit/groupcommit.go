// Package groupcommit batches concurrent requests into rounds: the first
// waiting request goes at once (no timer), and every request that arrives
// while a round is in progress shares the next one, up to a maximum size.
// A lone request never waits, and under load one round (an fsync, a
// network round trip) serves many callers.
//
// With Options.Linger, a round of concurrent callers also waits briefly
// for the callers the previous round just answered: two writers in a loop
// then share each round instead of taking turns (see Options.Linger).
//
// The rules, decided once for every user:
//
//   - Each caller's context is honoured while it waits: Do returns ctx's
//     error as soon as ctx ends, unless its answer is already there.
//   - A request whose caller stopped waiting before its round started is
//     never run: it is dropped when the round is assembled. A request
//     whose round has already started cannot be taken back; the optional
//     Options.Abandon hook lets the run function know its caller is gone.
//   - A panic in the run function fails the round's unanswered requests
//     with an error (Options.Recover, by default a *PanicError); the
//     batcher lives on.
//   - Close answers queued requests with Options.Closed (by default
//     ErrClosed), Do returns it after Close, and no caller waits on a
//     closed batcher.
package groupcommit

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// ErrClosed is what requests get from a closed Batcher, unless
// Options.Closed says otherwise.
var ErrClosed = errors.New("groupcommit: closed")

// ErrUnanswered is what a request gets when the run function returned
// without answering it.
var ErrUnanswered = errors.New("groupcommit: request not answered")

// PanicError is a panic recovered from the run function, the default
// answer to the requests of a round that panicked.
type PanicError struct {
	// Value is what was passed to panic.
	Value any
	// Stack is the stack of the goroutine that panicked.
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("groupcommit: panic in a batch: %v", e.Value)
}

// Options tune a Batcher; the zero value is usable.
type Options[Req any] struct {
	// MaxBatch caps how many requests share a round; it is also how many
	// may wait for the next round before Do blocks (until its ctx ends).
	// Default 128.
	MaxBatch int
	// Closed is the error requests get once the Batcher is closed.
	// Default ErrClosed.
	Closed error
	// Recover turns a value recovered from a panic of the run function
	// into the error of the round's unanswered requests. It is called in
	// the deferred function that recovered, so debug.Stack shows the
	// panic. Default: a *PanicError.
	Recover func(v any) error
	// Abandon, when set, is called by Do when ctx ends after the request
	// was taken into a round (which may be running or over). When it
	// returns, Do returns the request's answer if there is one by then,
	// ctx's error otherwise. Use it to keep the run function from running
	// the request (again) from then on.
	Abandon func(req Req)
	// Linger is the longest a round waits, once its first request is in,
	// for callers that are about to come back. It applies only under
	// contention, when each of the previous two rounds had more than one
	// request or requests waiting when it ended (one such round is often
	// two unrelated callers meeting once). The round then waits for as
	// many requests as the previous round answered plus those that were
	// waiting (the callers seen lately), and starts as soon as they are
	// in, or when Linger, or a quarter of the previous round's run time
	// if shorter, is over. Without it, two callers in a loop take turns:
	// each round serves the one that waited through the previous round,
	// and the other arrives a moment after it began. A lone caller never
	// waits. Default 0: never.
	Linger time.Duration
}

// Call is one request in a round. The run function answers each Call of
// its round once, with Answer.
type Call[Req, Res any] struct {
	Req Req

	state    atomic.Int32 // pending, taken or abandoned
	answered atomic.Bool
	res      chan result[Res] // buffered: answering never blocks
}

type result[Res any] struct {
	v   Res
	err error
}

const (
	pending   int32 = iota
	taken           // in a round: will run, or has
	abandoned       // the caller stopped waiting first: never runs
)

// Answer answers the call: its caller's Do returns res, err. Only the
// first answer counts. Answer before the run function returns: the calls
// still unanswered then get ErrUnanswered.
func (c *Call[Req, Res]) Answer(res Res, err error) {
	if c.answered.CompareAndSwap(false, true) {
		c.res <- result[Res]{res, err}
	}
}

// Batcher runs requests in rounds; see the package documentation.
type Batcher[Req, Res any] struct {
	run     func(batch []*Call[Req, Res])
	opts    Options[Req]
	calls   chan *Call[Req, Res]
	quit    chan struct{}
	done    chan struct{}
	closing sync.Once
}

// New starts a Batcher. run runs one round: it answers each of its calls
// (see Call.Answer). Rounds never overlap: run is called from one
// goroutine, with a slice it may reorder or shorten but must not keep.
func New[Req, Res any](run func(batch []*Call[Req, Res]), opts Options[Req]) *Batcher[Req, Res] {
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 128
	}
	if opts.Closed == nil {
		opts.Closed = ErrClosed
	}
	if opts.Recover == nil {
		opts.Recover = func(v any) error { return &PanicError{Value: v, Stack: debug.Stack()} }
	}
	b := &Batcher[Req, Res]{run: run, opts: opts, calls: make(chan *Call[Req, Res], opts.MaxBatch),
		quit: make(chan struct{}), done: make(chan struct{})}
	go b.loop()
	return b
}

// Do runs req in the next round and returns its answer. If ctx ends first,
// Do returns ctx's error: a request not yet in a round then never runs;
// one already in a round may have run, or may still be running (see
// Options.Abandon). After Close, Do returns Options.Closed.
func (b *Batcher[Req, Res]) Do(ctx context.Context, req Req) (Res, error) {
	var zero Res
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	select {
	case <-b.quit:
		return zero, b.opts.Closed
	default:
	}
	c := &Call[Req, Res]{Req: req, res: make(chan result[Res], 1)}
	select {
	case b.calls <- c:
	case <-b.quit:
		return zero, b.opts.Closed
	case <-ctx.Done():
		return zero, ctx.Err() // never queued: never runs
	}
	select {
	case r := <-c.res:
		return r.v, r.err
	case <-ctx.Done():
		if c.state.CompareAndSwap(pending, abandoned) {
			return zero, ctx.Err() // the round that meets it drops it
		}
		if b.opts.Abandon != nil {
			b.opts.Abandon(c.Req)
		}
		// answered meanwhile: that answer stands
		select {
		case r := <-c.res:
			return r.v, r.err
		default:
			return zero, ctx.Err()
		}
	case <-b.done:
		// closed after the request was queued: the loop may have left it
		select {
		case r := <-c.res:
			return r.v, r.err
		default:
			return zero, b.opts.Closed
		}
	}
}

// Queued is how many requests wait for a round (abandoned ones included,
// until a round drops them).
func (b *Batcher[Req, Res]) Queued() int { return len(b.calls) }

// Close stops the Batcher: the round in progress, if any, finishes, no
// other round starts, and the requests still queued get Options.Closed.
// It returns once the Batcher's goroutine has ended (so after the round in
// progress); callers waiting in Do return then, or when their ctx ends.
// Close may be called more than once.
func (b *Batcher[Req, Res]) Close() {
	b.closing.Do(func() {
		close(b.quit)
		<-b.done
	})
}

func (b *Batcher[Req, Res]) loop() {
	defer close(b.done)
	batch := make([]*Call[Req, Res], 0, b.opts.MaxBatch)
	view := make([]*Call[Req, Res], 0, b.opts.MaxBatch) // what run gets
	var l linger
	for {
		select {
		case c := <-b.calls:
			batch = batch[:0]
			if c.state.CompareAndSwap(pending, taken) {
				batch = append(batch, c)
			}
		case <-b.quit:
			b.fail(nil)
			return
		}
		batch = b.drain(batch)
		if b.opts.Linger > 0 {
			batch = b.linger(&l, batch)
		}
		select {
		case <-b.quit: // no round starts once Close is called
			b.fail(batch)
			return
		default:
		}
		if len(batch) > 0 {
			view = append(view[:0], batch...)
			if b.opts.Linger > 0 {
				start := time.Now()
				b.round(batch, view)
				l.ran(len(batch), len(b.calls), time.Since(start))
			} else {
				b.round(batch, view)
			}
		}
		clear(batch) // let the answered calls go
		clear(view)
	}
}

// drain adds to batch the requests already queued, up to MaxBatch.
func (b *Batcher[Req, Res]) drain(batch []*Call[Req, Res]) []*Call[Req, Res] {
	for len(batch) < b.opts.MaxBatch {
		select {
		case c := <-b.calls:
			if c.state.CompareAndSwap(pending, taken) {
				batch = append(batch, c)
			}
		default:
			return batch
		}
	}
	return batch
}

// linger is what the loop knows of the previous round, for Options.Linger.
type linger struct {
	contended int           // how many rounds in a row were contended
	expect    int           // the callers seen lately: 0 when not contended
	wait      time.Duration // how long the next round may wait for them
	timer     *time.Timer
}

// ran records a round of n requests that ran for d, with queued requests
// waiting when it ended.
func (l *linger) ran(n, queued int, d time.Duration) {
	l.expect = 0
	if n == 1 && queued == 0 {
		l.contended = 0
		return
	}
	if l.contended++; l.contended >= 2 {
		l.expect = n + queued
		l.wait = d / 4
	}
}

// linger waits for the callers the previous round saw (see Options.Linger)
// and returns batch with those that came.
func (b *Batcher[Req, Res]) linger(l *linger, batch []*Call[Req, Res]) []*Call[Req, Res] {
	want := min(l.expect, b.opts.MaxBatch)
	if len(batch) >= want {
		return batch
	}
	wait := min(l.wait, b.opts.Linger)
	if wait <= 0 {
		return batch
	}
	if l.timer == nil {
		l.timer = time.NewTimer(wait)
	} else {
		l.timer.Reset(wait)
	}
	defer l.timer.Stop()
	for len(batch) < want {
		select {
		case c := <-b.calls:
			if c.state.CompareAndSwap(pending, taken) {
				batch = append(batch, c)
			}
		case <-l.timer.C:
			return batch
		case <-b.quit:
			return batch
		}
	}
	return batch
}

// fail answers batch and whatever is still queued with the closed error.
func (b *Batcher[Req, Res]) fail(batch []*Call[Req, Res]) {
	var zero Res
	for _, c := range batch {
		c.Answer(zero, b.opts.Closed)
	}
	for {
		select {
		case c := <-b.calls:
			c.Answer(zero, b.opts.Closed)
		default:
			return
		}
	}
}

// round runs one round and makes sure each of its calls is answered once.
func (b *Batcher[Req, Res]) round(batch, view []*Call[Req, Res]) {
	var zero Res
	defer func() {
		if r := recover(); r != nil {
			err := b.opts.Recover(r)
			for _, c := range batch {
				c.Answer(zero, err)
			}
		}
		for _, c := range batch {
			c.Answer(zero, ErrUnanswered)
		}
	}()
	b.run(view)
}
