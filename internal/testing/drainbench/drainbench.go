// Package drainbench is the backlog drain benchmark shared by the stores
// tests: a backlog delivered by the real dispatcher to a local upstream,
// against that upstream's own speed (the drain target of docs/reference.md);
// and, for the queues kept in Redis, redis-server's time a job in each of
// a backlog's phases (RedisPhases). It lives apart from storagetest,
// which the dispatcher's own tests import.
package drainbench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/storage"
)

// Workers is how many workers Benchmark delivers with, and how
// many requests at a time it drives the upstream with directly.
const Workers = 16

// Latencies are the times the upstream takes to answer, one sub-benchmark
// each. With none (a bare handler in this process) the drain's own CPU is
// all that limits it, and drain/direct is its overhead against a bare
// HTTP exchange on the same cores. With 2 ms, an app that does some work
// per webhook (a database write), drain/direct is how near the upstream's
// own pace hookline delivers once the upstream, not the CPU, sets it.
var Latencies = []time.Duration{0, 2 * time.Millisecond}

// Benchmark runs, for each of Latencies, a sub-benchmark that fills a
// store from open with a backlog of n 1 KiB events (32 enqueues at a
// time), then delivers it with Workers workers to a local upstream
// answering after that latency, once per b.Loop. It reports the drain rate, the
// upstream's own rate for the same requests at the same concurrency (its
// ratio is the drain target), the Go process's CPU per job and the
// Go heap while the backlog waits and while it drains (neither may grow
// with the backlog). around, if set, is called with the sub-benchmark
// just before the drain starts (true) and once it is over (false), for a
// backend's own measurements (redis-server's CPU). With HOOKLINE_DRAIN_PROFILE=<file>
// set, the drain alone (not the fill) is CPU-profiled into that file.
//
//	go test -run '^$' -bench Drain100k -benchtime 1x ./storage/redisstore/ ./storage/embedded/
func Benchmark(b *testing.B, open func() storage.Store, n int, around func(b *testing.B, start bool)) {
	for _, lat := range Latencies {
		b.Run("upstream="+lat.String(), func(b *testing.B) { drain(b, open, n, around, lat) })
	}
}

// drain is one sub-benchmark of Benchmark.
func drain(b *testing.B, open func() storage.Store, n int, around func(b *testing.B, start bool), latency time.Duration) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if latency > 0 {
			time.Sleep(latency)
		}
	}))
	defer up.Close()
	body := make([]byte, 1024)
	for b.Loop() {
		st := open()
		fillBacklog(b, st, n, up.URL, body)
		heapFull := heapInUse()
		direct := directRate(b, up.URL, body, 20_000)

		done := make(chan struct{})
		var delivered atomic.Int64
		var heapPeak atomic.Uint64
		counted := &leaseCounter{Store: st}
		d := delivery.New(delivery.Config{Store: counted, Workers: Workers,
			OnResult: func(delivery.Report) {
				if k := delivered.Add(1); k == int64(n) {
					close(done)
				} else if k%10_000 == 0 {
					if h := heapInUse(); h > heapPeak.Load() {
						heapPeak.Store(h)
					}
				}
			}})
		if around != nil {
			around(b, true)
		}
		stopProfile := profileDrain(b)
		goCPU := processCPUSeconds()
		start := time.Now()
		d.Start()
		<-done
		elapsed := time.Since(start)
		goCPU = processCPUSeconds() - goCPU
		stopProfile()
		if around != nil {
			around(b, false)
		}
		d.Stop(time.Second)
		if err := st.Close(); err != nil {
			b.Error(err)
		}
		rate := float64(n) / elapsed.Seconds()
		b.ReportMetric(goCPU/float64(n)*1e6, "go-cpu-µs/job")
		b.ReportMetric(rate, "drained/s")
		b.ReportMetric(direct, "upstream-direct/s")
		b.ReportMetric(rate/direct, "drain/direct")
		b.ReportMetric(float64(heapFull)/(1<<20), "heap-MiB-backlog-queued")
		b.ReportMetric(float64(heapPeak.Load())/(1<<20), "heap-MiB-peak-draining")
		b.ReportMetric(float64(counted.leased.Load())/float64(max(counted.leases.Load(), 1)), "jobs/lease")
	}
}

// leaseCounter counts the leases a dispatcher asks its store for and the
// jobs they hand out: how many jobs a lease's round trip serves.
type leaseCounter struct {
	storage.Store
	leases, leased atomic.Int64
}

// Lease counts the lease and its jobs.
func (c *leaseCounter) Lease(ctx context.Context, now time.Time, n int, lease time.Duration, gate *storage.Gate) ([]*storage.Job, error) {
	jobs, err := c.Store.Lease(ctx, now, n, lease, gate)
	c.leases.Add(1)
	c.leased.Add(int64(len(jobs)))
	return jobs, err
}

// LeaseNamed counts the lease and its jobs.
func (c *leaseCounter) LeaseNamed(ctx context.Context, now time.Time, cands []storage.Candidate, lease time.Duration) ([]*storage.Job, error) {
	jobs, err := c.Store.LeaseNamed(ctx, now, cands, lease)
	c.leases.Add(1)
	c.leased.Add(int64(len(jobs)))
	return jobs, err
}

// profileDrain starts the CPU profile of HOOKLINE_DRAIN_PROFILE, if set,
// and returns what stops it.
func profileDrain(b *testing.B) (stop func()) {
	path := os.Getenv("HOOKLINE_DRAIN_PROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Error(err)
		}
	}
}

// fillBacklog enqueues n events of body for upstream, 32 at a time.
func fillBacklog(b *testing.B, st storage.Store, n int, upstream string, body []byte) {
	b.Helper()
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 32 {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				ev := &storage.Event{ID: fmt.Sprintf("d%07d", i), EventID: fmt.Sprint(i), Dedupe: true,
					Source: "bench", Upstream: upstream, Body: body, ReceivedAt: time.Now()}
				if _, err := st.Enqueue(b.Context(), ev, time.Now().Add(time.Hour)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// directRate is the upstream's own rate for n posts of body, Workers
// at a time, with the delivery client.
func directRate(b *testing.B, url string, body []byte, n int) float64 {
	client := delivery.NewClient(Workers)
	var wg sync.WaitGroup
	var next atomic.Int64
	start := time.Now()
	for range Workers {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				resp, err := client.Post(url, "application/json", bytes.NewReader(body))
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds()
}

// processCPUSeconds is the CPU time (user and system) this process has
// used: the dispatcher, the store's client (or its engine) and the upstream,
// which shares it.
func processCPUSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}
