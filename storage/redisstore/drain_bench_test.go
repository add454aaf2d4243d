package redisstore_test

import (
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
	var m *redistest.CPUMeter
	drainbench.Benchmark(b, func() storage.Store {
		c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{srv.Addr}, PoolSize: 64})
		m = redistest.NewCPUMeter(c)
		return redisstore.New(c, redisstore.Options{Prefix: redistest.Prefix()})
	}, backlog, func(b *testing.B, start bool) {
		if start {
			m.Start(b)
		} else {
			m.Stop(b, backlog)
		}
	})
}

// BenchmarkScriptCost tells where redis-server's time goes for each job
// of a backlog: enqueue, lease and finish (drainbench.RedisPhases).
//
//	go test -run '^$' -bench ScriptCost -benchtime 1x ./storage/redisstore/ ./internal/testing/ceiling/
func BenchmarkScriptCost(b *testing.B) {
	srv := redistest.Start(b)
	drainbench.RedisPhases(b, func() (storage.Store, redis.UniversalClient) {
		c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{srv.Addr}, PoolSize: 64})
		return redisstore.New(c, redisstore.Options{Prefix: redistest.Prefix()}), c
	}, 20_000)
}
