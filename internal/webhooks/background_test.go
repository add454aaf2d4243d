package webhooks

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestTasks: a task runs once per key (a second start answers its
// progress), at most max at once (then the full error); stop cancels the
// running ones and waits for them, a bounded time for one that does not
// stop, and refuses new ones; a task whose begin fails or declines does
// not run and takes no slot.
func TestTasks(t *testing.T) {
	errFull := errors.New("full")
	ts := newTasks[int](2, errFull)
	stuck := make(chan struct{})
	defer close(stuck)
	var cancelled []string
	done := make(chan string, 4)
	run := func(key string, p int, ignoreCancel bool) (int, bool, error) {
		return ts.start(key, func() (int, bool, error) { return p, true, nil },
			func(ctx context.Context, first int, set func(int)) int {
				set(first + 1)
				if ignoreCancel {
					<-stuck
				} else {
					<-ctx.Done()
				}
				done <- key
				return first + 2
			})
	}
	if p, started, err := run("a", 10, false); err != nil || !started || p != 10 {
		t.Fatalf("start a = %d, %v, %v", p, started, err)
	}
	waitUntil(t, func() bool { p, ok := ts.get("a"); return ok && p == 11 })
	if p, started, err := run("a", 20, false); err != nil || started || p != 11 {
		t.Errorf("start a again = %d, %v, %v; want its progress 11, not started", p, started, err)
	}
	if _, started, err := ts.start("declined", func() (int, bool, error) { return 7, false, nil }, nil); err != nil || started {
		t.Errorf("a declined start: %v, %v", started, err)
	}
	if _, _, err := ts.start("broken", func() (int, bool, error) { return 0, false, errors.New("store down") }, nil); err == nil {
		t.Error("a failed begin: no error")
	}
	if p, started, err := run("b", 30, true); err != nil || !started || p != 30 {
		t.Fatalf("start b = %d, %v, %v", p, started, err)
	}
	if _, _, err := run("c", 40, false); !errors.Is(err, errFull) {
		t.Errorf("a third task of two at most: %v, want the full error", err)
	}

	stopTasksWait = 100 * time.Millisecond
	defer func() { stopTasksWait = 5 * time.Second }()
	began := time.Now()
	ts.stop()
	if d := time.Since(began); d < stopTasksWait || d > 2*time.Second {
		t.Errorf("stop with a task that does not stop took %v, want about %v", d, stopTasksWait)
	}
	for len(done) > 0 {
		cancelled = append(cancelled, <-done)
	}
	if len(cancelled) != 1 || cancelled[0] != "a" {
		t.Errorf("tasks ended by stop: %v, want a", cancelled)
	}
	if _, _, err := run("d", 50, false); !errors.Is(err, errStopping) {
		t.Errorf("a start after stop: %v, want errStopping", err)
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met within 5s")
}
