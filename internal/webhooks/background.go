package webhooks

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hookline/hookline/storage"
)

// The operator's long tasks (a rekey, tenants' erasures) run in the
// background of the app that started them, one per key, a bounded number
// at once. They start only while the app runs and stop with it: Stop
// refuses new ones first, then cancels the running ones (each saves its
// progress, to be resumed by the next start) and waits a bounded time.

// errStopping refuses a task while the app stops (a config reload or a
// shutdown): the next config's app takes it (503).
var errStopping = fmt.Errorf("%w: the webhooks app is stopping (a config reload or shutdown): try again", storage.ErrUnavailable)

// stopTasksWait bounds how long Stop waits for its tasks to save their
// progress (Stop runs under Caddy's config lock). A task still running
// then ends by itself: its context is cancelled.
var stopTasksWait = 5 * time.Second

// tasks are the background tasks of one kind of an app, by key; P is
// their progress.
type tasks[P any] struct {
	// max is how many run at once; full is the error beyond it.
	max  int
	full error

	mu      sync.Mutex
	stopped bool
	running map[string]*task[P]
}

// task is one task running.
type task[P any] struct {
	progress P
	// ready is closed once begin returned: progress (or err) is set.
	ready  chan struct{}
	err    error
	cancel context.CancelFunc
	done   chan struct{}
}

func newTasks[P any](maxRunning int, full error) *tasks[P] {
	return &tasks[P]{max: maxRunning, full: full, running: map[string]*task[P]{}}
}

// start runs the task key in the background, unless it runs already: then
// its progress is returned, started false. begin (outside the lock: it may
// read the store) decides the task's first progress, or that it is not to
// run here (run false: its progress is returned as it is); work then runs
// it with a context Stop cancels, reporting its progress with set, and
// returns its last.
func (ts *tasks[P]) start(key string, begin func() (p P, run bool, err error),
	work func(ctx context.Context, first P, set func(P)) P) (P, bool, error) {
	var zero P
	ts.mu.Lock()
	if t, ok := ts.running[key]; ok {
		ts.mu.Unlock()
		<-t.ready
		ts.mu.Lock()
		defer ts.mu.Unlock()
		return t.progress, false, t.err
	}
	if ts.stopped {
		ts.mu.Unlock()
		return zero, false, errStopping
	}
	if len(ts.running) >= ts.max {
		ts.mu.Unlock()
		return zero, false, ts.full
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &task[P]{ready: make(chan struct{}), cancel: cancel, done: make(chan struct{})}
	ts.running[key] = t
	ts.mu.Unlock()

	p, run, err := begin()
	ts.mu.Lock()
	t.progress, t.err = p, err
	if err != nil || !run {
		delete(ts.running, key)
		close(t.ready)
		close(t.done)
		ts.mu.Unlock()
		cancel()
		return p, false, err
	}
	close(t.ready)
	ts.mu.Unlock()
	// stopped meanwhile, ctx is cancelled: work saves the task as
	// interrupted at once, and Stop waits for it (it was running)
	go func() {
		defer close(t.done)
		defer cancel()
		last := work(ctx, p, func(p P) {
			ts.mu.Lock()
			t.progress = p
			ts.mu.Unlock()
		})
		ts.mu.Lock()
		t.progress = last
		delete(ts.running, key)
		ts.mu.Unlock()
	}()
	return p, true, nil
}

// get is the progress of the task key running here (and whether it runs).
func (ts *tasks[P]) get(key string) (P, bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t, ok := ts.running[key]
	if !ok || !isClosed(t.ready) {
		var zero P
		return zero, false
	}
	return t.progress, true
}

// stop refuses new tasks, cancels the running ones and waits for them,
// stopTasksWait at most in all.
func (ts *tasks[P]) stop() {
	if ts == nil {
		return
	}
	ts.mu.Lock()
	ts.stopped = true
	running := make([]*task[P], 0, len(ts.running))
	for _, t := range ts.running {
		running = append(running, t)
	}
	ts.mu.Unlock()
	deadline := time.NewTimer(stopTasksWait)
	defer deadline.Stop()
	for _, t := range running {
		t.cancel()
	}
	for _, t := range running {
		select {
		case <-t.done:
		case <-deadline.C:
			return
		}
	}
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
