package drainbench

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
)

// RedisPhases tells where redis-server's time goes for each job of a
// backlog kept in Redis, phase by phase, once per b.Loop on a store from
// open (and the client to the server it uses): n events of 1 KiB
// enqueued by 32 goroutines (fillBacklog: enqueue-µs/job); then all
// leased, 45 at a time (what a dispatcher's lease holds in Benchmark:
// lease-µs/job); then all finished delivered by Workers workers
// (finish-µs/job). Each is, from the server's INFO commandstats, over n,
// the time of the scripts (the commands they call included) or, in a
// phase that ran no script, of the commands: INFO counts a script's
// commands apart too, and cannot tell them from commands sent alone (a
// phase's few reads outside its scripts are left out). That time is the
// server's clock, and counts a script preempted by the benchmark's own
// goroutines; each phase's redis-server CPU time over n
// (enqueue-cpu-µs/job, ...) does not. On a server with an append-only
// file, each phase also reports what it added to the file over n
// (enqueue-aof-B/job, ...): what the server writes for each job, and
// what the file's rewrites (a forked child's CPU) then go over again.
func RedisPhases(b *testing.B, open func() (storage.Store, redis.UniversalClient), n int) {
	body := make([]byte, 1024)
	for b.Loop() {
		st, c := open()
		ctx := context.Background()
		phase := func(name string, run func()) {
			m := redistest.CPUMeter{Client: c, Metric: name + "-cpu-µs/job"}
			aof0, aof, err := redistest.AOFSize(ctx, c)
			if err != nil {
				b.Fatal(err)
			}
			m.Start(b) // resets the command stats too
			run()
			m.Stop(b, n)
			if aof {
				aof1, _, err := redistest.AOFSize(ctx, c)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(aof1-aof0)/float64(n), name+"-aof-B/job")
			}
			stats, err := redistest.CommandStats(ctx, c)
			if err != nil {
				b.Fatal(err)
			}
			_, scripts := stats["evalsha"]
			var usec int64
			for cmd, s := range stats {
				// with scripts run, the other commands were theirs (INFO
				// counts them twice) but for the stats' own reads
				if cmd == "evalsha" || cmd == "eval" || !scripts && cmd != "info" && cmd != "config|resetstat" {
					usec += s.Usec
				}
			}
			b.ReportMetric(float64(usec)/float64(n), name+"-µs/job")
		}
		phase("enqueue", func() { fillBacklog(b, st, n, "http://127.0.0.1:1/in", body) })
		var jobs []*storage.Job
		phase("lease", func() {
			for len(jobs) < n {
				got, err := st.Lease(ctx, time.Now(), 45, time.Minute, nil)
				if err != nil || len(got) == 0 {
					b.Fatalf("lease after %d jobs: %d, %v", len(jobs), len(got), err)
				}
				jobs = append(jobs, got...)
			}
		})
		phase("finish", func() {
			var wg sync.WaitGroup
			var next atomic.Int64
			for range Workers {
				wg.Go(func() {
					for i := next.Add(1); i <= int64(len(jobs)); i = next.Add(1) {
						if err := st.Finish(ctx, jobs[i-1], storage.Outcome{Result: storage.Delivered}); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
		})
		if err := st.Close(); err != nil {
			b.Error(err)
		}
	}
}
