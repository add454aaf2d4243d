package redisstore_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/drainbench"
	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/redisstore"
)

// BenchmarkDrain100k drains a backlog of 100k 1 KiB events from Redis
// (drainbench.Benchmark), reporting also redis-server's CPU per job
// and, with -v, what each command cost it.
//
//	go test -run '^$' -bench Drain100k -benchtime 1x ./storage/redisstore/
func BenchmarkDrain100k(b *testing.B) {
	const backlog = 100_000
	srv := redistest.Start(b)
	var c redis.UniversalClient
	var redisCPU float64
	drainbench.Benchmark(b, func() storage.Store {
		c = redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{srv.Addr}, PoolSize: 64})
		return redisstore.New(c, redisstore.Options{Prefix: redistest.Prefix()})
	}, backlog, func(b *testing.B, start bool) {
		if start {
			redisCPU = redisCPUSeconds(b, c)
			_ = c.ConfigResetStat(context.Background()).Err()
			return
		}
		b.ReportMetric((redisCPUSeconds(b, c)-redisCPU)/backlog*1e6, "redis-cpu-µs/job")
		logScripts(b, c, backlog)
	})
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
