package storagetest_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded"
	"github.com/hookline/hookline/storage/storagetest"
)

func openFaulty(t *testing.T, path string) *storagetest.Faulty {
	t.Helper()
	s, err := embedded.Open(path, embedded.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	f := storagetest.NewFaulty(s)
	t.Cleanup(func() { s.Close() })
	return f
}

// TestFaultyConformance: with no fault set, Faulty is transparent.
func TestFaultyConformance(t *testing.T) {
	storagetest.Run(t, storagetest.Factory{
		ProcessLeases: true, // the embedded store's
		Open: func(t *testing.T) storage.Store {
			return openFaulty(t, filepath.Join(t.TempDir(), "f.db"))
		},
		Reopen: func(t *testing.T, s storage.Store) storage.Store {
			inner := s.(*storagetest.Faulty).Inner().(*embedded.Store)
			path := inner.Path()
			if err := inner.Close(); err != nil {
				t.Fatal(err)
			}
			return openFaulty(t, path)
		},
		Uncounted: func(t *testing.T, s storage.Store) storage.Store {
			inner := s.(*storagetest.Faulty).Inner().(*embedded.Store)
			path := inner.Path()
			if err := inner.Close(); err != nil {
				t.Fatal(err)
			}
			if err := embedded.ResetCounters(path); err != nil {
				t.Fatal(err)
			}
			return openFaulty(t, path)
		},
	})
}

func faultyEvent(eventID string) *storage.Event { return storagetest.NewEvent("stripe", eventID) }

func TestFaultyFaults(t *testing.T) {
	f := openFaulty(t, filepath.Join(t.TempDir(), "f.db"))
	ctx := t.Context()
	until := time.Now().Add(time.Hour)
	stored := func(eventID string) bool {
		t.Helper()
		_, err := f.Inner().Lookup(ctx, "stripe", eventID)
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}

	t.Run("error", func(t *testing.T) {
		f.Fail(storagetest.MethodEnqueue, nil)
		defer f.Clear(storagetest.MethodEnqueue)
		before := f.Calls(storagetest.MethodEnqueue)
		if _, err := f.Enqueue(ctx, faultyEvent("evt_err"), until); !errors.Is(err, storagetest.ErrInjected) || !errors.Is(err, storage.ErrUnavailable) {
			t.Fatalf("err = %v", err)
		}
		if stored("evt_err") {
			t.Error("a failed Enqueue reached the store")
		}
		if got := f.Calls(storagetest.MethodEnqueue) - before; got != 1 {
			t.Errorf("calls counted: %d", got)
		}
	})
	t.Run("error once", func(t *testing.T) {
		boom := errors.New("boom")
		f.Set(storagetest.MethodEnqueue, storagetest.Fault{Err: boom, Times: 1})
		if _, err := f.Enqueue(ctx, faultyEvent("evt_once"), until); !errors.Is(err, boom) {
			t.Fatalf("first call: %v", err)
		}
		if _, err := f.Enqueue(ctx, faultyEvent("evt_once"), until); err != nil {
			t.Fatalf("second call: %v", err)
		}
	})
	t.Run("error after two calls, once", func(t *testing.T) {
		f.Set(storagetest.MethodEnqueue, storagetest.Fault{Err: storagetest.ErrInjected, After: 2, Times: 1})
		for i, want := range []error{nil, nil, storagetest.ErrInjected, nil} {
			id := fmt.Sprint("evt_after_", i)
			if _, err := f.Enqueue(ctx, faultyEvent(id), until); !errors.Is(err, want) || (want == nil && err != nil) {
				t.Fatalf("call %d: %v, want %v", i+1, err, want)
			}
			if stored(id) != (want == nil) {
				t.Errorf("call %d: stored %v", i+1, stored(id))
			}
		}
	})
	t.Run("stall until the context ends", func(t *testing.T) {
		f.Stall(storagetest.MethodEnqueue)
		defer f.Clear(storagetest.MethodEnqueue)
		c, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := f.Enqueue(c, faultyEvent("evt_stall"), until)
		if !errors.Is(err, storage.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v", err)
		}
		if took := time.Since(start); took < 90*time.Millisecond || took > time.Second {
			t.Errorf("gave up after %v", took)
		}
		if stored("evt_stall") {
			t.Error("a stalled Enqueue that gave up reached the store")
		}
	})
	t.Run("stall until released", func(t *testing.T) {
		f.Stall(storagetest.MethodFinish)
		f.Stall(storagetest.MethodEnqueue)
		done := make(chan error, 1)
		go func() {
			_, err := f.Enqueue(ctx, faultyEvent("evt_released"), until)
			done <- err
		}()
		if !f.WaitStalled(storagetest.MethodEnqueue, 1, 5*time.Second) {
			t.Fatal("the call did not stall")
		}
		f.Clear(storagetest.MethodEnqueue)
		select {
		case err := <-done:
			t.Fatalf("a stalled call returned before Release: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
		f.Release()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if !stored("evt_released") || f.Stalled(storagetest.MethodEnqueue) != 0 {
			t.Error("the released call did not reach the store")
		}
		f.ClearAll()
	})
	t.Run("lost reply", func(t *testing.T) {
		f.LoseReply(storagetest.MethodEnqueue)
		ev := faultyEvent("evt_lost")
		if _, err := f.Enqueue(ctx, ev, until); !errors.Is(err, storagetest.ErrLostReply) || !errors.Is(err, storage.ErrUnavailable) {
			t.Fatalf("err = %v", err)
		}
		f.Clear(storagetest.MethodEnqueue)
		if !stored("evt_lost") {
			t.Fatal("the call whose reply was lost did not run")
		}
		// the provider's resend
		if res, err := f.Enqueue(ctx, faultyEvent("evt_lost"), until); err != nil || !res.Duplicate || res.ID != ev.ID {
			t.Fatalf("resend: %+v %v", res, err)
		}
	})
	t.Run("every method", func(t *testing.T) {
		calls := map[storagetest.Method]func() error{
			storagetest.MethodEnqueue: func() error { _, err := f.Enqueue(ctx, faultyEvent("evt_m"), until); return err },
			storagetest.MethodLease:   func() error { _, err := f.Lease(ctx, time.Now(), 1, time.Minute, nil); return err },
			storagetest.MethodNextDue: func() error { _, _, err := f.NextDue(ctx, nil); return err },
			storagetest.MethodFinish: func() error {
				return f.Finish(ctx, &storage.Job{Event: *faultyEvent("x"), Lease: "0:x"}, storage.Outcome{Result: storage.Delivered})
			},
			storagetest.MethodLookup:        func() error { _, err := f.Lookup(ctx, "stripe", "x"); return err },
			storagetest.MethodCounts:        func() error { _, err := f.Counts(ctx); return err },
			storagetest.MethodQueueBySource: func() error { _, err := f.QueueBySource(ctx); return err },
			storagetest.MethodQueueByLane:   func() error { _, err := f.QueueByLane(ctx); return err },
			storagetest.MethodDLQList:       func() error { _, err := f.DLQList(ctx, storage.DLQFilter{}); return err },
			storagetest.MethodDLQGet:        func() error { _, err := f.DLQGet(ctx, "x"); return err },
			storagetest.MethodDLQCounts:     func() error { _, err := f.DLQCounts(ctx); return err },
			storagetest.MethodDLQRetry:      func() error { return f.DLQRetry(ctx, "x", time.Now()) },
			storagetest.MethodDLQSetStatus: func() error {
				return f.DLQSetStatus(ctx, "x", storage.DLQResolved, "", time.Now())
			},
			storagetest.MethodSetPause:    func() error { return f.SetPause(ctx, storage.Pause{Source: "stripe"}) },
			storagetest.MethodResume:      func() error { _, _, err := f.Resume(ctx, "stripe"); return err },
			storagetest.MethodPauses:      func() error { _, err := f.Pauses(ctx); return err },
			storagetest.MethodExpirePause: func() error { _, err := f.ExpirePause(ctx, storage.Pause{Source: "stripe"}); return err },
			storagetest.MethodListDelivered: func() error {
				_, err := f.ListDelivered(ctx, storage.ReplayFilter{})
				return err
			},
			storagetest.MethodReplay: func() error {
				return f.Replay(ctx, &storage.EventInfo{ID: "x", EventID: "x", Source: "stripe"}, time.Now())
			},
			storagetest.MethodAddStats: func() error {
				return f.AddStats(ctx, storage.StatsBatch{At: time.Now(), Counters: map[string]map[string]int64{"stripe": {"n": 1}}})
			},
			storagetest.MethodStats: func() error { _, _, err := f.Stats(ctx, time.Now()); return err },
			storagetest.MethodStatsBuckets: func() error {
				_, err := f.StatsBuckets(ctx, storage.StatsByMinute, time.Now().Add(-time.Hour), time.Now())
				return err
			},
			storagetest.MethodSetGauges: func() error {
				return f.SetStatsGauges(ctx, time.Now(), map[string]map[string]int64{"stripe": {"g": 1}})
			},
			storagetest.MethodQueueHeads: func() error { _, err := f.QueueHeads(ctx); return err },
			storagetest.MethodCleanup:    func() error { _, err := f.Cleanup(ctx, time.Now(), time.Hour, 0); return err },
			storagetest.MethodErase: func() error {
				_, err := f.Erase(ctx, "stripe", "x", time.Now())
				return err
			},
			storagetest.MethodListEvents: func() error {
				_, err := f.ListEvents(ctx, storage.EventFilter{})
				return err
			},
			storagetest.MethodClose: func() error { return f.Close() },
			storagetest.MethodRekeyBatch: func() error {
				_, err := f.RekeyBatch(ctx, nil, "", 1)
				return err
			},
			storagetest.MethodRekeyState: func() error { _, err := f.RekeyState(ctx); return err },
			storagetest.MethodSaveRekey:  func() error { return f.SaveRekeyState(ctx, storage.RekeyProgress{}) },
			storagetest.MethodEraseBatch: func() error {
				_, err := f.EraseBatch(ctx, "stripe", []string{"x"}, time.Now())
				return err
			},
			storagetest.MethodTenantErasure: func() error { _, err := f.TenantErasure(ctx, "stripe", "t"); return err },
			storagetest.MethodSaveTenant: func() error {
				return f.SaveTenantErasure(ctx, storage.TenantErasure{Source: "stripe", Tenant: "t"})
			},
		}
		if len(calls) != len(storagetest.Methods) {
			t.Fatalf("%d methods tested, %d listed", len(calls), len(storagetest.Methods))
		}
		for _, m := range storagetest.Methods {
			f.Fail(m, nil)
			before := f.Calls(m)
			if err := calls[m](); !errors.Is(err, storagetest.ErrInjected) {
				t.Errorf("%s with a fault: err = %v", m, err)
			}
			if f.Calls(m) != before+1 {
				t.Errorf("%s: calls %d, want %d", m, f.Calls(m), before+1)
			}
			f.Clear(m)
		}
	})
}
