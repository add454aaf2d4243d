package redisstore

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
)

// BenchmarkScriptCost tells where redis-server's time goes for each job
// of a backlog, phase by phase: n events of 1 KiB enqueued by 32
// goroutines (enqueue-µs/job); then all leased, 45 at a time (what a
// dispatcher's lease holds in BenchmarkDrain100k: lease-µs/job, the peek
// and lease scripts); then all finished delivered by 16 workers
// (finish-µs/job). Each is the scripts' time (commands they call
// included) and the plain commands', from the server's INFO
// commandstats, over n.
//
//	go test -run '^$' -bench ScriptCost -benchtime 1x ./storage/redisstore/
func BenchmarkScriptCost(b *testing.B) {
	const n = 20_000
	srv := redistest.Start(b)
	body := make([]byte, 1024)
	for b.Loop() {
		c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{srv.Addr}, PoolSize: 64})
		s := New(c, Options{Prefix: redistest.Prefix()})
		ctx := context.Background()
		if err := s.CheckLayout(ctx); err != nil {
			b.Fatal(err)
		}
		phase := func(name string, run func()) {
			if err := c.ConfigResetStat(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			run()
			stats, err := redistest.CommandStats(ctx, c)
			if err != nil {
				b.Fatal(err)
			}
			var usec int64
			for cmd, st := range stats {
				if cmd != "info" && cmd != "config|resetstat" && !isInner(cmd, stats) {
					usec += st.Usec
				}
			}
			b.ReportMetric(float64(usec)/n, name+"-µs/job")
		}
		phase("enqueue", func() {
			var wg sync.WaitGroup
			var next atomic.Int64
			for range 32 {
				wg.Go(func() {
					for i := next.Add(1); i <= n; i = next.Add(1) {
						ev := &storage.Event{ID: fmt.Sprintf("c%07d", i), EventID: fmt.Sprint(i), Dedupe: true,
							Source: "bench", Upstream: "http://127.0.0.1:1/in", Body: body, ReceivedAt: time.Now()}
						if _, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
		})
		var jobs []*storage.Job
		phase("lease", func() {
			for len(jobs) < n {
				got, err := s.Lease(ctx, time.Now(), 45, time.Minute, nil)
				if err != nil || len(got) == 0 {
					b.Fatalf("lease after %d jobs: %d, %v", len(jobs), len(got), err)
				}
				jobs = append(jobs, got...)
			}
		})
		phase("finish", func() {
			var wg sync.WaitGroup
			var next atomic.Int64
			for range 16 {
				wg.Go(func() {
					for i := next.Add(1); i <= int64(len(jobs)); i = next.Add(1) {
						if err := s.Finish(ctx, jobs[i-1], storage.Outcome{Result: storage.Delivered}); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
		})
		s.Close()
	}
}

// isInner: cmd is one the store calls only from its scripts, whose time
// the scripts' already holds (INFO commandstats counts both): with any
// script run, every command but the scripts themselves.
func isInner(cmd string, stats map[string]redistest.CommandStat) bool {
	_, scripts := stats["evalsha"]
	return scripts && cmd != "evalsha" && cmd != "eval"
}
