package embedded_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded"
	"github.com/hookline/hookline/storage/storagetest"
)

// markerEvent is an event whose body and header X-Marker carry marker
// (twice: once as is, once in the header), padded to size bytes of body
// so that it may span overflow pages.
func markerEvent(source, eventID, marker string, size int) *storage.Event {
	body := []byte(`{"secret":"` + marker + `-body","pad":"` + strings.Repeat("p", max(size-60, 0)) + `"}`)
	return &storage.Event{ID: uuid.NewString(), EventID: eventID, Dedupe: true, Source: source,
		Upstream: "http://127.0.0.1:1/", Headers: http.Header{"X-Marker": {marker + "-header"}, "Content-Type": {"application/json"}},
		Body: body, ReceivedAt: time.Now()}
}

// fileHas reports which of the markers' body and header forms are in the
// raw bytes of the store's files (every file under path: write-ahead
// logs, tables, the manifest).
func fileHas(t *testing.T, path, marker string) (body, header bool) {
	t.Helper()
	raw, err := storagetest.ReadFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	return storagetest.HasMarker(raw, marker+"-body"), storagetest.HasMarker(raw, marker+"-header")
}

// churn enqueues, leases, retries, re-leases and finishes n other events,
// so that the marked records are rewritten many times (each rewrite
// leaves a copy in the log, and in a table once flushed) and the files
// hold others' data beside them.
func churn(t *testing.T, s *embedded.Store, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		ev := markerEvent("other", fmt.Sprintf("o-%s-%d", uuid.NewString(), i), "not-secret", 300)
		if _, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 2 {
		jobs, err := s.Lease(ctx, time.Now(), n, time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			out := storage.Outcome{Result: storage.Retry, Attempt: &storage.Attempt{N: 1, At: time.Now(), Status: 503}, Due: time.Now()}
			if round == 1 && j.Source == "other" {
				out = storage.Outcome{Result: storage.Delivered, Attempt: &storage.Attempt{N: 2, At: time.Now(), Status: 200}}
			}
			if j.Source != "other" {
				out = storage.Outcome{Result: storage.Release}
			}
			if err := s.Finish(ctx, j, out); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestEraseBytesGone: the marker of an erased event, in its body and in a
// header, was in the store's files before the erasure and is in no byte
// of them after it: neither in a live record nor in an earlier version of
// one (queued, leased, retried, dead, its DLQ entry) in a write-ahead log
// or an older table, for a one-delivery event (large), a fanned-out one
// with a dead delivery, and an ordered one waiting in its chain. The store
// is consistent after it, and the other events intact.
func TestEraseBytesGone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hookline.db")
	s := openStore(t, path)
	ctx := context.Background()
	until := time.Now().Add(time.Hour)

	big := markerEvent("stripe", "evt_big", "MARK-big-7f3a", 20_000)
	fan := markerEvent("stripe", "evt_fan", "MARK-fan-91c2", 500)
	for _, d := range []string{"default", "billing", "crm"} {
		fan.Deliveries = append(fan.Deliveries, storage.Delivery{Destination: d, Upstream: "http://127.0.0.1:1/" + d})
	}
	head := markerEvent("shop", "evt_head", "not-secret", 100)
	head.OrderKey = "K"
	chained := markerEvent("shop", "evt_chained", "MARK-chain-55e0", 100)
	chained.OrderKey = "K"
	for _, ev := range []*storage.Event{big, fan, head, chained} {
		if _, err := s.Enqueue(ctx, ev, until); err != nil {
			t.Fatal(err)
		}
	}
	churn(t, s.Store, 50)
	// the fanned-out event: one delivery dead (its DLQ entry holds the payload), one delivered
	jobs, err := s.Lease(ctx, time.Now(), 1000, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		out := storage.Outcome{Result: storage.Release}
		switch j.ID {
		case storage.DeliveryID(fan.ID, "billing"):
			out = storage.Outcome{Result: storage.Dead, Attempt: &storage.Attempt{N: 1, At: time.Now(), Status: 400}, Error: "bad"}
		case storage.DeliveryID(fan.ID, "crm"):
			out = storage.Outcome{Result: storage.Delivered, Attempt: &storage.Attempt{N: 1, At: time.Now(), Status: 200}}
		}
		if err := s.Finish(ctx, j, out); err != nil {
			t.Fatal(err)
		}
	}
	churn(t, s.Store, 50)

	for _, m := range []string{"MARK-big-7f3a", "MARK-fan-91c2", "MARK-chain-55e0"} {
		if b, h := fileHas(t, path, m); !b || !h {
			t.Fatalf("before the erasure the file holds %s in the body %v, in the header %v: the test proves nothing", m, b, h)
		}
	}
	for _, ev := range []*storage.Event{big, fan, chained} {
		start := time.Now()
		res, err := s.Erase(ctx, ev.Source, ev.EventID, time.Now())
		if err != nil {
			t.Fatalf("Erase(%s): %v", ev.EventID, err)
		}
		t.Logf("erased %s: %+v in %v", ev.EventID, res, time.Since(start))
	}
	for _, m := range []string{"MARK-big-7f3a", "MARK-fan-91c2", "MARK-chain-55e0"} {
		if b, h := fileHas(t, path, m); b || h {
			t.Errorf("after the erasure the file still holds %s in the body %v, in the header %v", m, b, h)
		}
	}
	if err := s.CheckForTest(); err != nil {
		t.Fatalf("the file is not consistent after the erasures: %v", err)
	}
	// the rest is intact
	info, err := s.Lookup(ctx, "shop", "evt_head")
	if err != nil || info.Status != storage.StatusQueued {
		t.Fatalf("Lookup(evt_head) = %+v, %v", info, err)
	}
	if b, _ := fileHas(t, path, "not-secret"); !b {
		t.Error("the other events' bodies are gone from the file too")
	}
}

// TestEraseScrubConcurrent: erasures while other goroutines enqueue,
// lease, finish and read keep every operation working (the scrub holds
// readers out and writes back) and leave no marker behind.
func TestEraseScrubConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hookline.db")
	s := openStore(t, path)
	ctx := context.Background()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 100)
	wg.Go(func() { // traffic: enqueue, lease, deliver, look up
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			ev := markerEvent("other", fmt.Sprintf("t-%d", i), "traffic", 200)
			if _, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
				errs <- err
				return
			}
			jobs, err := s.Lease(ctx, time.Now(), 10, time.Minute, nil)
			if err != nil {
				errs <- err
				return
			}
			for _, j := range jobs {
				err := s.Finish(ctx, j, storage.Outcome{Result: storage.Delivered, Attempt: &storage.Attempt{N: 1, At: time.Now(), Status: 200}})
				if err != nil && !errors.Is(err, storage.ErrLeaseLost) {
					errs <- err
					return
				}
			}
			if _, err := s.Lookup(ctx, "other", ev.EventID); err != nil {
				errs <- err
				return
			}
		}
	})
	const n = 20
	for i := range n {
		ev := markerEvent("stripe", fmt.Sprintf("e-%d", i), fmt.Sprintf("MARK-conc-%03d", i), 1000)
		if _, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Erase(ctx, "stripe", ev.EventID, time.Now()); err != nil {
			t.Fatalf("Erase: %v", err)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("traffic during erasures: %v", err)
	}
	for i := range n {
		if b, h := fileHas(t, path, fmt.Sprintf("MARK-conc-%03d", i)); b || h {
			t.Errorf("marker %d still in the file (body %v, header %v)", i, b, h)
		}
	}
	if err := s.CheckForTest(); err != nil {
		t.Fatal(err)
	}
}

// eraseChildEnv names the store file of TestEraseCrash's child process,
// and eraseChildStage the scrub stage it stops at to be killed.
const (
	eraseChildEnv   = "HOOKLINE_ERASE_CHILD_DB"
	eraseChildStage = "HOOKLINE_ERASE_CHILD_STAGE"
)

// TestEraseCrashChild is the child of TestEraseCrash: it stores a marked
// event, erases it, and blocks in the scrub's stage named by its
// environment (saying so on stdout) until it is killed.
func TestEraseCrashChild(t *testing.T) {
	path := os.Getenv(eraseChildEnv)
	if path == "" {
		t.Skip("the child of TestEraseCrash")
	}
	stage := os.Getenv(eraseChildStage)
	s, err := embedded.Open(path, embedded.Options{OnScrub: func(got string) {
		if got == stage {
			fmt.Println("STOPPED", stage)
			select {} // until killed
		}
	}})
	if err != nil {
		fmt.Println("ERROR", err)
		return
	}
	ctx := context.Background()
	for i := range 30 {
		ev := markerEvent("other", fmt.Sprintf("keep-%d", i), "kept-event", 400)
		if _, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
			fmt.Println("ERROR", err)
			return
		}
	}
	ev := markerEvent("stripe", "evt_crash", "MARK-crash-c4f1", 3000)
	if _, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
		fmt.Println("ERROR", err)
		return
	}
	jobs, _ := s.Lease(ctx, time.Now(), 100, time.Minute, nil)
	for _, j := range jobs { // rewritten: copies in the log
		_ = s.Finish(ctx, j, storage.Outcome{Result: storage.Retry, Attempt: &storage.Attempt{N: 1, At: time.Now(), Status: 503}, Due: time.Now()})
	}
	fmt.Println("READY")
	if _, err := s.Erase(ctx, "stripe", "evt_crash", time.Now()); err != nil {
		fmt.Println("ERROR", err)
	}
	fmt.Println("NOT STOPPED")
}

// TestEraseCrash: a process killed (SIGKILL) in the middle of an
// erasure's scrub, before it compacted anything and after it compacted
// but before it cleared its mark, leaves a consistent store: reopened, it
// finishes the scrub (the marker is gone from the files), the event is
// erased, and the store works.
func TestEraseCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	for _, stage := range []string{"begin", "compacted"} {
		t.Run(stage, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "hookline.db")
			cmd, lines := startChild(t, "TestEraseCrashChild", eraseChildEnv+"="+path, eraseChildStage+"="+stage)
			stopped := false
			for lines.Scan() {
				line := lines.Text()
				if strings.HasPrefix(line, "ERROR") || line == "NOT STOPPED" {
					t.Fatalf("child: %s", line)
				}
				if line == "STOPPED "+stage {
					stopped = true
					break
				}
			}
			if !stopped {
				t.Fatal("the child ended without stopping in the scrub")
			}
			if err := cmd.Process.Kill(); err != nil { // SIGKILL
				t.Fatal(err)
			}
			_ = cmd.Wait()
			if stage == "begin" {
				if b, h := fileHas(t, path, "MARK-crash-c4f1"); !b || !h {
					t.Fatalf("killed before the scrub wrote anything, the file holds the marker: body %v header %v; want both (else the test proves nothing)", b, h)
				}
			}

			s := openStore(t, path) // finishes the scrub
			if err := s.CheckForTest(); err != nil {
				t.Fatalf("the file is not consistent after the crash: %v", err)
			}
			if b, h := fileHas(t, path, "MARK-crash-c4f1"); b || h {
				t.Errorf("after reopening, the file still holds the marker: body %v header %v", b, h)
			}
			ctx := context.Background()
			if _, err := s.Lookup(ctx, "stripe", "evt_crash"); !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("Lookup of the erased event: %v, want ErrNotFound", err)
			}
			res, err := s.Enqueue(ctx, markerEvent("stripe", "evt_crash", "again", 10), time.Now().Add(time.Hour))
			if err != nil || !res.Duplicate || res.Status != storage.StatusErased {
				t.Errorf("resend after the crash = %+v, %v; want a duplicate, erased", res, err)
			}
			jobs, err := s.Lease(ctx, time.Now(), 100, time.Minute, nil)
			if err != nil || len(jobs) != 30 {
				t.Fatalf("Lease after the crash = %d jobs, %v; want the 30 others", len(jobs), err)
			}
		})
	}
}

// dirSize is the size of the files under dir.
func dirSize(tb testing.TB, dir string) int64 {
	tb.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err == nil {
			n += fi.Size()
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// BenchmarkEraseScrub measures an erasure with its scrub, in a store of
// b.N-independent size: 20,000 events of 1 KiB, half delivered.
func BenchmarkEraseScrub(b *testing.B) {
	path := filepath.Join(b.TempDir(), "hookline.db")
	s, err := embedded.Open(path, embedded.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	const n = 20_000
	var wg sync.WaitGroup
	for w := range 64 {
		wg.Go(func() {
			for i := w; i < n; i += 64 {
				ev := markerEvent("stripe", fmt.Sprintf("e-%d", i), "x", 1024)
				if _, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for {
		jobs, err := s.Lease(ctx, time.Now(), 500, time.Minute, nil)
		if err != nil || len(jobs) == 0 {
			break
		}
		for k, j := range jobs {
			out := storage.Outcome{Result: storage.Delivered, Attempt: &storage.Attempt{N: 1, At: time.Now(), Status: 200}}
			if k%2 == 0 {
				out = storage.Outcome{Result: storage.Retry, Attempt: &storage.Attempt{N: 1, At: time.Now(), Status: 503}, Due: time.Now().Add(time.Hour)}
			}
			if err := s.Finish(ctx, j, out); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Logf("files %d MiB", dirSize(b, path)>>20)
	b.ResetTimer()
	for i := range b.N {
		if _, err := s.Erase(ctx, "stripe", fmt.Sprintf("e-%d", i%n), time.Now()); err != nil && !errors.Is(err, storage.ErrNotFound) {
			b.Fatal(err)
		}
	}
}

// BenchmarkEraseTenant measures a tenant's erasure (storagetest.
// BenchmarkEraseTenant): 10,000 of 20,000 events, batches of 500.
func BenchmarkEraseTenant(b *testing.B) {
	s, err := embedded.Open(filepath.Join(b.TempDir(), "hookline.db"), embedded.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	storagetest.BenchmarkEraseTenant(b, s, 20_000, storage.MaxTenantEraseBatch)
}

// BenchmarkTenantsQueued measures what tenants cost with 100,000 events
// queued (storagetest.BenchmarkTenantsQueued): the heap the backlog takes
// (after a GC) and a lease's cost, without tenants, of one, of 100,000.
//
//	go test -run '^$' -bench TenantsQueued -benchtime 200x ./storage/embedded/
func BenchmarkTenantsQueued(b *testing.B) {
	storagetest.BenchmarkTenantsQueued(b, func(b *testing.B) storage.Store {
		s, err := embedded.Open(filepath.Join(b.TempDir(), "hookline.db"), embedded.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	}, func(storage.Store) int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapInuse)
	}, 100_000)
}
