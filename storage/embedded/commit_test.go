package embedded_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded"
	"github.com/hookline/hookline/storage/embedded/kv"
	"github.com/hookline/hookline/storage/storagetest"
)

func openWithOptions(t *testing.T, opts embedded.Options) *embedded.Store {
	t.Helper()
	opts.Timeout = time.Second
	s, err := embedded.Open(filepath.Join(t.TempDir(), "hookline.db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// stallSwitch stalls every commit while on, as a hung fsync would, and
// counts commits and their sizes.
type stallSwitch struct {
	mu      sync.Mutex
	on      bool
	release chan struct{}
	commits []int
	stalled chan struct{} // one value per commit that began stalling
}

func newStallSwitch() *stallSwitch {
	return &stallSwitch{release: make(chan struct{}), stalled: make(chan struct{}, 100)}
}

func (s *stallSwitch) hook(n int) error {
	s.mu.Lock()
	s.commits = append(s.commits, n)
	on, release := s.on, s.release
	s.mu.Unlock()
	if on {
		s.stalled <- struct{}{}
		<-release
	}
	return nil
}

func (s *stallSwitch) set(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.on && !on {
		close(s.release)
		s.release = make(chan struct{})
	}
	s.on = on
}

func (s *stallSwitch) sizes() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.commits...)
}

// TestStalledFsyncHonoursContext: while commits hang (a stalled disk), a
// write gives up when its context ends, with ErrUnavailable, instead of
// holding the ingress request forever; the store works again once the
// disk does.
func TestStalledFsyncHonoursContext(t *testing.T) {
	sw := newStallSwitch()
	s := openWithOptions(t, embedded.Options{BeforeCommit: sw.hook})
	defer sw.set(false)
	sw.set(true)

	const deadline = 200 * time.Millisecond
	enqueue := func(ev *storage.Event) (time.Duration, error) {
		ctx, cancel := context.WithTimeout(t.Context(), deadline)
		defer cancel()
		start := time.Now()
		_, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour))
		return time.Since(start), err
	}
	// the first write is in the stalled commit; the second waits behind it
	for i, ev := range []*storage.Event{storagetest.NewEvent("stripe", "evt_stalled_1"), storagetest.NewEvent("stripe", "evt_stalled_2")} {
		took, err := enqueue(ev)
		if !errors.Is(err, storage.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("write %d during a stalled fsync: err = %v, want ErrUnavailable wrapping DeadlineExceeded", i+1, err)
		}
		if took < deadline-20*time.Millisecond || took > deadline+500*time.Millisecond {
			t.Errorf("write %d gave up after %v, want about %v", i+1, took, deadline)
		}
	}
	// other writes too: a worker's Finish, an operator's pause
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	if err := s.SetPause(ctx, storage.Pause{Source: "stripe"}); !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("SetPause during a stalled fsync: %v", err)
	}
	cancel()
	// a context that has already ended never queues its write
	done, cancelDone := context.WithCancel(t.Context())
	cancelDone()
	if _, err := s.Enqueue(done, storagetest.NewEvent("stripe", "evt_cancelled"), time.Now().Add(time.Hour)); err == nil {
		t.Error("Enqueue with a cancelled context succeeded")
	}

	// the disk recovers: the store works
	sw.set(false)
	ev := storagetest.NewEvent("stripe", "evt_after")
	ctx, cancel = context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if res, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil || res.Duplicate {
		t.Fatalf("Enqueue after the stall: %+v %v", res, err)
	}
	if info, err := s.Lookup(ctx, "stripe", "evt_after"); err != nil || info.Status != storage.StatusQueued {
		t.Fatalf("Lookup after the stall: %+v %v", info, err)
	}
}

// TestFailingWriteFailsAlone: among writes sharing a group commit, the one
// that errors or panics gets its error alone, the transaction is rolled
// back, and all the others are committed together in one more commit (not
// one commit each); a panic does not crash the process.
func TestFailingWriteFailsAlone(t *testing.T) {
	errBoom := errors.New("boom")
	for _, tc := range []struct {
		name string
		fail func() error
		want func(error) bool
	}{
		{"error", func() error { return errBoom }, func(err error) bool {
			return errors.Is(err, storage.ErrUnavailable) && strings.HasSuffix(err.Error(), errBoom.Error())
		}},
		{"panic", func() error { panic("boom in a write") }, func(err error) bool {
			var pe *storage.PanicError
			return errors.As(err, &pe) && errors.Is(err, storage.ErrUnavailable) && strings.Contains(err.Error(), "boom in a write")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sw := newStallSwitch()
			s := openWithOptions(t, embedded.Options{BeforeCommit: sw.hook})
			defer sw.set(false)
			ctx := t.Context()
			until := time.Now().Add(time.Hour)

			// a first write holds the committer, so that the next ones
			// share one batch
			sw.set(true)
			first := make(chan error, 1)
			go func() {
				_, err := s.Enqueue(ctx, storagetest.NewEvent("stripe", "evt_first"), until)
				first <- err
			}()
			<-sw.stalled

			const n = 8
			var wg sync.WaitGroup
			errs := make([]error, n)
			for i := range n {
				wg.Go(func() {
					if i == n/2 {
						errs[i] = s.UpdateForTest(ctx, func(tx *kv.Tx) error {
							// its writes must be rolled back
							if err := tx.Bucket([]byte("paused")).Put([]byte("ghost"), nil); err != nil {
								return err
							}
							return tc.fail()
						})
						return
					}
					_, errs[i] = s.Enqueue(ctx, storagetest.NewEvent("stripe", fmt.Sprintf("evt_%d", i)), until)
				})
			}
			waitUntil(t, func() bool { return s.QueuedWrites() == n })
			sw.set(false)
			wg.Wait()
			if err := <-first; err != nil {
				t.Fatal(err)
			}

			for i, err := range errs {
				if i == n/2 {
					if !tc.want(err) {
						t.Errorf("failing write: err = %v", err)
					}
					continue
				}
				if err != nil {
					t.Errorf("write %d of the batch failed with its neighbour: %v", i, err)
				}
				if _, err := s.Lookup(ctx, "stripe", fmt.Sprintf("evt_%d", i)); err != nil {
					t.Errorf("write %d not stored: %v", i, err)
				}
			}
			// one commit for the first write, one for the batch without
			// the failing write
			if got := sw.sizes(); len(got) != 2 || got[0] != 1 || got[1] != n-1 {
				t.Errorf("commits (writes each) = %v, want [1 %d]", got, n-1)
			}
			if paused, err := s.Pauses(ctx); err != nil || len(paused) != 0 {
				t.Errorf("the failing write was committed: paused = %v, %v", paused, err)
			}
			// the committer is alive
			if _, err := s.Enqueue(ctx, storagetest.NewEvent("stripe", "evt_last"), until); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestPoisonRecordDeadLettered: a stored record that cannot be decoded is
// moved to the DLQ by the lease that meets it, instead of failing every
// lease (and so every delivery) forever; the other jobs are leased.
func TestPoisonRecordDeadLettered(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		payload   string // expected DLQ payload
	}{
		{"garbage", "\x00not json at all", "\x00not json at all"},
		// the event decodes field by field: its body is kept for a retry
		{"wrong type", `{"id":"X","event_id":"evt_poison","source":"stripe","upstream":"http://127.0.0.1:1/","body":"eyJuIjoxfQ==","attempts":"oops","status":"queued"}`, `{"n":1}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openWithOptions(t, embedded.Options{})
			defer storagetest.WantRecounted(t, s, "after the poison record")
			ctx := t.Context()
			until := time.Now().Add(time.Hour)
			bad := storagetest.NewEvent("stripe", "evt_poison")
			good := storagetest.NewEvent("github", "evt_good")
			for _, ev := range []*storage.Event{bad, good} {
				if _, err := s.Enqueue(ctx, ev, until); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.PutRawRecordForTest(bad.ID, []byte(strings.ReplaceAll(tc.raw, `"X"`, `"`+bad.ID+`"`))); err != nil {
				t.Fatal(err)
			}
			now := time.Now().Add(time.Second)
			jobs, err := s.Lease(ctx, now, 10, time.Minute, nil)
			if err != nil {
				t.Fatalf("Lease with a poison record: %v", err)
			}
			if len(jobs) != 1 || jobs[0].ID != good.ID {
				t.Fatalf("leased %d jobs, want only the good one", len(jobs))
			}
			e, err := s.DLQGet(ctx, bad.ID)
			if err != nil {
				t.Fatalf("no DLQ entry for the poison record: %v", err)
			}
			if !strings.HasPrefix(e.Error, storage.PoisonReason) || e.Status != storage.DLQPending || e.Source != "stripe" {
				t.Errorf("DLQ entry %+v", e)
			}
			if string(e.Payload) != tc.payload {
				t.Errorf("DLQ payload %q, want %q", e.Payload, tc.payload)
			}
			if c, err := s.Counts(ctx); err != nil || c.Queued != 0 || c.InFlight != 1 || c.Dead != 1 {
				t.Errorf("counts %+v %v, want 1 in flight (the good one), 1 dead", c, err)
			}
			// never leased again, even after the lease would have expired
			if jobs, err := s.Lease(ctx, now.Add(time.Hour), 10, time.Minute, nil); err != nil || len(jobs) != 1 || jobs[0].ID != good.ID {
				t.Errorf("later lease: %d jobs, %v", len(jobs), err)
			}
			if info, err := s.Lookup(ctx, "stripe", bad.ID); err != nil || info.Status != storage.StatusDead {
				t.Errorf("Lookup of the poison event: %+v %v", info, err)
			}
		})
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}
