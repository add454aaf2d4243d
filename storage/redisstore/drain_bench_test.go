package redisstore_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/redisstore"
)

// BenchmarkDrain100k fills Redis with a backlog of 100k 1 KiB events, then
// delivers it with 16 workers to a local upstream, reporting the drain rate,
// the upstream's own rate for the same requests, and the Go heap while the
// backlog waits (it must not grow with the backlog).
//
//	go test -run '^$' -bench Drain100k -benchtime 1x ./storage/redisstore/
var drainWorkers = 16

func BenchmarkDrain100k(b *testing.B) {
	const backlog = 100_000
	srv := redistest.Start(b)
	var got atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		got.Add(1)
	}))
	defer up.Close()
	body := make([]byte, 1024)
	for b.Loop() {
		c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{srv.Addr}, PoolSize: 64})
		st := redisstore.New(c, redisstore.Options{Prefix: redistest.Prefix()})
		fill(b, st, backlog, up.URL, body)
		heapFull := heapInUse()

		// the upstream's own speed for the same requests, 16 at a time
		direct := directRate(b, up.URL, body, 20_000)

		done := make(chan struct{})
		var delivered atomic.Int64
		var heapPeak atomic.Uint64
		d := delivery.New(delivery.Config{Store: st, Workers: drainWorkers,
			Resolve: func(string, string) (*delivery.Target, bool) { return nil, false },
			OnResult: func(delivery.Report) {
				if n := delivered.Add(1); n == backlog {
					close(done)
				} else if n%10_000 == 0 {
					if h := heapInUse(); h > heapPeak.Load() {
						heapPeak.Store(h)
					}
				}
			}})
		redisCPU, goCPU := redisCPUSeconds(b, c), processCPUSeconds()
		_ = c.ConfigResetStat(context.Background()).Err()
		start := time.Now()
		d.Start()
		<-done
		elapsed := time.Since(start)
		redisCPU, goCPU = redisCPUSeconds(b, c)-redisCPU, processCPUSeconds()-goCPU
		logScripts(b, c, backlog)
		d.Stop(time.Second)
		st.Close()
		b.ReportMetric(redisCPU/backlog*1e6, "redis-cpu-µs/job")
		b.ReportMetric(goCPU/backlog*1e6, "go-cpu-µs/job")
		b.ReportMetric(backlog/elapsed.Seconds(), "drained/s")
		b.ReportMetric(direct, "upstream-direct/s")
		b.ReportMetric(float64(heapFull)/(1<<20), "heap-MiB-backlog-queued")
		b.ReportMetric(float64(heapPeak.Load())/(1<<20), "heap-MiB-peak-draining")
	}
}

func fill(b *testing.B, st *redisstore.Store, n int, upstream string, body []byte) {
	b.Helper()
	var wg sync.WaitGroup
	ids := make(chan int)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ids {
				ev := &storage.Event{ID: fmt.Sprintf("d%07d", i), EventID: fmt.Sprint(i), Dedupe: true,
					Source: "bench", Upstream: upstream, Body: body, ReceivedAt: time.Now()}
				if _, err := st.Enqueue(context.Background(), ev, time.Now().Add(time.Hour)); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	for i := range n {
		ids <- i
	}
	close(ids)
	wg.Wait()
}

func directRate(b *testing.B, url string, body []byte, n int) float64 {
	client := delivery.NewClient(16)
	var wg sync.WaitGroup
	var next atomic.Int64
	start := time.Now()
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				resp, err := client.Post(url, "application/json", bytes.NewReader(body))
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds()
}

// redisCPUSeconds is the CPU time (user and system) redis-server has used
// since it started (INFO cpu).
func redisCPUSeconds(b *testing.B, c redis.UniversalClient) float64 {
	info, err := c.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\r\n") {
		k, v, _ := strings.Cut(line, ":")
		if k == "used_cpu_sys" || k == "used_cpu_user" {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return total
}

// processCPUSeconds is the CPU time (user and system) this process has
// used: the dispatcher, go-redis and the upstream, which shares it.
func processCPUSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// logScripts logs, with -v, what each command cost redis-server per job
// since the stats were reset (INFO commandstats): calls and microseconds.
func logScripts(b *testing.B, c redis.UniversalClient, jobs int) {
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		name, stats, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		var calls, usec float64
		for _, kv := range strings.Split(stats, ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "calls":
				calls, _ = strconv.ParseFloat(v, 64)
			case "usec":
				usec, _ = strconv.ParseFloat(v, 64)
			}
		}
		b.Logf("%-22s %8.3f calls/job %7.1f µs/job %6.1f µs/call", strings.TrimPrefix(name, "cmdstat_"), calls/float64(jobs), usec/float64(jobs), usec/max(calls, 1))
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}
