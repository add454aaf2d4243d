package embedded_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"github.com/hookline/hookline/storage/embedded/kv"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded"
	"github.com/hookline/hookline/storage/storagetest"
)

// testStore closes its store at most once: the suite's Reopen closes it
// and the test cleanup closes whatever is still open.
type testStore struct {
	*embedded.Store
	once sync.Once
	err  error
}

func (s *testStore) Close() error {
	s.once.Do(func() { s.err = s.Store.Close() })
	return s.err
}

func openStore(t *testing.T, path string) *testStore {
	t.Helper()
	st, err := embedded.Open(path, embedded.Options{Timeout: time.Second})
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	s := &testStore{Store: st}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestConformance(t *testing.T) { storagetest.Run(t, conformance()) }

// TestConformanceSealed runs the suite again with encryption at rest.
func TestConformanceSealed(t *testing.T) {
	storagetest.Run(t, storagetest.Sealing(conformance(), sealingKeys(t)))
}

func sealingKeys(t *testing.T) *storage.Keyring {
	k, err := storage.NewKeyring(storagetest.TestKey(9), storagetest.TestKey(8))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// conformance is the suite's Factory of the embedded store.
func conformance() storagetest.Factory {
	return storagetest.Factory{
		LonePayload:   true,
		ProcessLeases: true,
		Open: func(t *testing.T) storage.Store {
			return openStore(t, filepath.Join(t.TempDir(), "hookline.db"))
		},
		Reopen: func(t *testing.T, s storage.Store) storage.Store {
			ts := s.(*testStore)
			path := ts.Path()
			if err := ts.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			return openStore(t, path)
		},
		Uncounted: func(t *testing.T, s storage.Store) storage.Store {
			ts := s.(*testStore)
			path := ts.Path()
			if err := ts.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if err := embedded.RewriteWithoutCounters(path); err != nil {
				t.Fatal(err)
			}
			return openStore(t, path)
		},
		Dump: func(t *testing.T, s storage.Store) [][]byte {
			out, err := s.(*testStore).Dump()
			if err != nil {
				t.Fatalf("Dump: %v", err)
			}
			return out
		},
		Legacy: func(t *testing.T, s storage.Store, source string) {
			// earlier versions kept a paused source as a key with no value
			err := s.(*testStore).UpdateForTest(t.Context(), func(tx *kv.Tx) error {
				return tx.Bucket([]byte("paused")).Put([]byte(source), nil)
			})
			if err != nil {
				t.Fatal(err)
			}
		},
	}
}

// The file lock keeps a second process (here: a second Open) out; it gives
// up after Options.Timeout, and gets in once the first one closes.
func TestOpenLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hookline.db")
	first, err := embedded.Open(path, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			first.Close()
		}
	}()

	const timeout = 200 * time.Millisecond
	start := time.Now()
	second, err := embedded.Open(path, embedded.Options{Timeout: timeout})
	elapsed := time.Since(start)
	if err == nil {
		second.Close()
		t.Fatal("second Open of a locked file succeeded")
	}
	if !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("second Open: err = %v, want ErrUnavailable", err)
	}
	if elapsed < timeout/2 || elapsed > timeout+time.Second {
		t.Errorf("second Open gave up after %v, want about %v", elapsed, timeout)
	}

	// a waiting Open gets the file once the holder closes it
	type result struct {
		s   *embedded.Store
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := embedded.Open(path, embedded.Options{Timeout: 5 * time.Second})
		done <- result{s, err}
	}()
	time.Sleep(100 * time.Millisecond)
	select {
	case r := <-done:
		if r.err == nil {
			r.s.Close()
		}
		t.Fatalf("Open did not wait for the lock (err %v)", r.err)
	default:
	}
	closed = true
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("Open after the holder closed: %v", r.err)
		}
		r.s.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("Open still waiting after the holder closed")
	}
}

// BenchmarkEnqueueParallel measures durable enqueues from many concurrent
// writers (1 KiB bodies). Group commit lets one fsync cover every write
// that arrived during the previous one, so events/s grows with the number
// of writers instead of staying at one event per fsync.
func BenchmarkEnqueueParallel(b *testing.B) {
	body := make([]byte, 1024)
	_, _ = rand.Read(body)
	headers := http.Header{"Content-Type": {"application/json"}, "Stripe-Signature": {"t=1,v1=0123456789abcdef"}}
	for _, p := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("writers=%dxGOMAXPROCS", p), func(b *testing.B) {
			s, err := embedded.Open(filepath.Join(b.TempDir(), "bench.db"), embedded.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			until := time.Now().Add(time.Hour)
			b.SetBytes(int64(len(body)))
			b.SetParallelism(p)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					id := uuid.Must(uuid.NewV7()).String()
					ev := &storage.Event{
						ID: id, EventID: id, Dedupe: true, Source: "bench",
						Upstream: "http://127.0.0.1:8080/", Headers: headers,
						Body: body, ReceivedAt: time.Now(),
					}
					res, err := s.Enqueue(ctx, ev, until)
					if err != nil || res.Duplicate {
						b.Errorf("Enqueue: %+v %v", res, err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// TestLegacyDueIndexMigrated: a file written by a version with one due
// index for every source (due|id keys in bucket "due") is upgraded to lane
// queues when opened, and its jobs are leased.
func TestLegacyDueIndexMigrated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hookline.db")
	s := openStore(t, path)
	ctx := t.Context()
	until := time.Now().Add(time.Hour)
	var ids []string
	for _, src := range []string{"stripe", "github"} {
		ev := &storage.Event{ID: uuid.NewString(), EventID: "evt_" + src, Dedupe: true, Source: src,
			Upstream: "http://127.0.0.1:1/", ReceivedAt: time.Now()}
		if _, err := s.Enqueue(ctx, ev, until); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ev.ID)
	}
	path = s.Path()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := embedded.RewriteAsLegacyDue(path); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, path)
	jobs, err := s.Lease(ctx, time.Now(), 10, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 {
		t.Fatalf("leased %d jobs after the upgrade, want 2", len(jobs))
	}
}
