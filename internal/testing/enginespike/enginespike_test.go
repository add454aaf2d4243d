package enginespike_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hookline/hookline/internal/testing/enginespike"
)

// The spike's runs, each engine in turn in one run:
//
//	go test -run '^$' -bench . -benchtime 20000x ./internal/testing/enginespike/
//	HOOKLINE_SPIKE_EVENTS=1000000 go test -run '^$' -bench Disk -benchtime 1x ./internal/testing/enginespike/

// open opens o in a fresh directory, closed by the test's cleanup.
func open(tb testing.TB, o enginespike.Opener) (enginespike.Engine, string) {
	tb.Helper()
	dir := tb.TempDir()
	e, err := o.Open(dir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := e.Close(); err != nil {
			tb.Error(err)
		}
	})
	return e, dir
}

// pool is random bytes the jobs' bodies are cut from: incompressible, as
// a payload sealed at rest is, so that an engine that compresses its
// blocks is not measured on bodies that shrink to nothing.
var pool = func() []byte {
	b := make([]byte, 8<<20)
	_, _ = rand.Read(b)
	return b
}()

// bodyOf is job i's body of size bytes: its own stretch of the pool.
func bodyOf(i, size int) []byte {
	off := (i * 7919 * 64) % (len(pool) - size)
	return pool[off : off+size]
}

// fill enqueues n jobs of size bytes, due a second ago, writers at a time.
func fill(tb testing.TB, e enginespike.Engine, n, size, writers int) []string {
	tb.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = uuid.Must(uuid.NewV7()).String()
	}
	due := time.Now().Add(-time.Second).UnixNano()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				if err := e.Enqueue(context.Background(), enginespike.Job{ID: ids[i], Due: due, Body: bodyOf(int(i), size)}); err != nil {
					tb.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return ids
}

// drain leases every due job in batches of up to 64 and hands them to
// workers, which deliver each (deliver may be nil) and finish it.
func drain(tb testing.TB, e enginespike.Engine, n, workers int, deliver func(enginespike.Job) error) {
	tb.Helper()
	jobs := make(chan enginespike.Job, 128)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if deliver != nil {
					if err := deliver(j); err != nil {
						tb.Error(err)
					}
				}
				if err := e.Finish(j); err != nil {
					tb.Error(err)
				}
			}
		}()
	}
	for leased := 0; leased < n; {
		batch, err := e.Lease(64, time.Now().UnixNano())
		if err != nil {
			tb.Fatal(err)
		}
		if len(batch) == 0 {
			tb.Fatalf("leased %d of %d jobs, then none", leased, n)
		}
		for _, j := range batch {
			jobs <- j
		}
		leased += len(batch)
	}
	close(jobs)
	wg.Wait()
}

// TestEngines: each engine keeps the queue's contract, so that what the
// benchmarks measure is the real pattern: every job leased once, with its
// body, none before it is due, none again after it was leased, and after
// Expire and Reclaim (and a dead letter) what is left is small.
func TestEngines(t *testing.T) {
	for _, o := range enginespike.Openers {
		t.Run(o.Name, func(t *testing.T) {
			e, dir := open(t, o)
			ids := fill(t, e, 500, 1024, 8)
			late := enginespike.Job{ID: uuid.Must(uuid.NewV7()).String(), Due: time.Now().Add(time.Hour).UnixNano(), Body: []byte("late")}
			if o.Name != "journal" { // the journal's queue is in order of writing: every job is due at once
				if err := e.Enqueue(t.Context(), late); err != nil {
					t.Fatal(err)
				}
			}
			seen := map[string]bool{}
			for {
				batch, err := e.Lease(64, time.Now().UnixNano())
				if err != nil {
					t.Fatal(err)
				}
				if len(batch) == 0 {
					break
				}
				for _, j := range batch {
					if seen[j.ID] || len(j.Body) != 1024 {
						t.Fatalf("job %s leased twice or with a %d-byte body", j.ID, len(j.Body))
					}
					seen[j.ID] = true
					if len(seen)%100 == 0 {
						err = e.Dead(j)
					} else {
						err = e.Finish(j)
					}
					if err != nil {
						t.Fatal(err)
					}
				}
			}
			for _, id := range ids {
				if !seen[id] {
					t.Fatalf("job %s never leased (%d of %d)", id, len(seen), len(ids))
				}
			}
			if seen[late.ID] {
				t.Error("a job due in an hour was leased")
			}
			full, err := enginespike.Size(dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Expire(); err != nil {
				t.Fatal(err)
			}
			if err := e.Reclaim(); err != nil {
				t.Fatal(err)
			}
			if jobs, err := e.Lease(64, time.Now().Add(2*time.Hour).UnixNano()); err != nil || (o.Name != "journal" && (len(jobs) != 1 || jobs[0].ID != late.ID)) {
				t.Errorf("after Expire, the job due later: %v, %v", jobs, err)
			}
			after, err := enginespike.Size(dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d KiB full, %d KiB after Expire and Reclaim", o.Name, full>>10, after>>10)
			if os.Getenv("HOOKLINE_SPIKE_FILES") != "" {
				_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
					if info, err := d.Info(); err == nil && !d.IsDir() {
						t.Logf("  %s %d", path, info.Size())
					}
					return nil
				})
			}
		})
	}
}

// BenchmarkEnqueue: b.N jobs of 1 KiB, synced, by 2 and by 128 writers.
func BenchmarkEnqueue(b *testing.B) {
	for _, o := range enginespike.Openers {
		for _, writers := range []int{2, 128} {
			b.Run(fmt.Sprintf("%s/writers=%d", o.Name, writers), func(b *testing.B) {
				e, _ := open(b, o)
				start := time.Now()
				fill(b, e, b.N, 1024, writers)
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
			})
		}
	}
}

// spikeEvents is the size of the drain's backlog and of the disk run: the
// environment's HOOKLINE_SPIKE_EVENTS, or def.
func spikeEvents(def int) int {
	if n, err := strconv.Atoi(os.Getenv("HOOKLINE_SPIKE_EVENTS")); err == nil && n > 0 {
		return n
	}
	return def
}

// cpu is the process's user and system CPU time so far.
func cpu() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDrain: a backlog of 20k jobs of 1 KiB (HOOKLINE_SPIKE_EVENTS)
// delivered by 16 workers to a bare upstream in this process, against the
// upstream driven directly with the same requests at the same
// concurrency: drain/direct is what the engine leaves of the upstream's
// speed (the target is 0.7x in process before the engine goes on).
func BenchmarkDrain(b *testing.B) {
	const workers = 16
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer up.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	post := func(body []byte) error {
		resp, err := client.Post(up.URL, "application/json", bytes.NewReader(body))
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}
	n := spikeEvents(20_000)
	for _, o := range enginespike.Openers {
		b.Run(o.Name, func(b *testing.B) {
			for b.Loop() {
				e, _ := open(b, o)
				fill(b, e, n, 1024, 128)
				if s, ok := e.(enginespike.Settler); ok { // the fill's compactions do not run beside either side
					if err := s.Settle(); err != nil {
						b.Fatal(err)
					}
				}
				// the upstream alone, the same requests, the same concurrency
				body := bodyOf(0, 1024)
				cpu0, start := cpu(), time.Now()
				var next atomic.Int64
				var wg sync.WaitGroup
				for range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for next.Add(1) <= int64(n) {
							if err := post(body); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				direct, directCPU := float64(n)/time.Since(start).Seconds(), cpu()-cpu0
				cpu0, start = cpu(), time.Now()
				drain(b, e, n, workers, func(j enginespike.Job) error { return post(j.Body) })
				rate, drainCPU := float64(n)/time.Since(start).Seconds(), cpu()-cpu0
				b.ReportMetric(rate, "drain/s")
				b.ReportMetric(direct, "direct/s")
				b.ReportMetric(rate/direct, "drain/direct")
				b.ReportMetric(float64(drainCPU.Microseconds())/float64(n), "cpu-µs/job")
				b.ReportMetric(float64(directCPU.Microseconds())/float64(n), "direct-cpu-µs/req")
			}
		})
	}
}

// BenchmarkDisk: 20k jobs of 4 KiB (HOOKLINE_SPIKE_EVENTS; the target is
// stated for 1M) enqueued by 128 writers, all finished, past retention
// (Expire) and reclaimed: the MiB the engine's files take at each step.
func BenchmarkDisk(b *testing.B) {
	n := spikeEvents(20_000)
	for _, o := range enginespike.Openers {
		b.Run(o.Name, func(b *testing.B) {
			for b.Loop() {
				e, dir := open(b, o)
				start := time.Now()
				fill(b, e, n, 4096, 128)
				b.ReportMetric(float64(n)/time.Since(start).Seconds(), "events/s")
				full := size(b, dir)
				start = time.Now()
				drain(b, e, n, 16, nil)
				b.ReportMetric(float64(n)/time.Since(start).Seconds(), "finished/s")
				if err := e.Expire(); err != nil {
					b.Fatal(err)
				}
				expired := size(b, dir)
				if err := e.Reclaim(); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(full, "MiB-full")
				b.ReportMetric(expired, "MiB-expired")
				b.ReportMetric(size(b, dir), "MiB-reclaimed")
			}
		})
	}
}

func size(tb testing.TB, dir string) float64 {
	tb.Helper()
	n, err := enginespike.Size(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return float64(n) / (1 << 20)
}
