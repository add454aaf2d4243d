package redisstore_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
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
		start := time.Now()
		d.Start()
		<-done
		elapsed := time.Since(start)
		d.Stop(time.Second)
		st.Close()
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

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}
