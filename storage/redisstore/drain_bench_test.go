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
	var m redistest.CPUMeter
	drainbench.Benchmark(b, func() storage.Store {
		st, c := openStore(srv.Addr)
		m.Client = c
		return st
	}, backlog, m.Around(backlog))
}

// openStore opens a Redis store on the server at addr, under keys of a
// fresh prefix, with the pool the dispatcher's workers need: the store
// and its client.
func openStore(addr string) (storage.Store, redis.UniversalClient) {
	c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{addr}, PoolSize: 64})
	return redisstore.New(c, redisstore.Options{Prefix: redistest.Prefix()}), c
}

// BenchmarkScriptCost tells where redis-server's time goes for each job
// of a backlog: enqueue, lease and finish (drainbench.RedisPhases), on a
// server with an append-only file as the store's users run it.
//
//	go test -run '^$' -bench ScriptCost -benchtime 1x ./storage/redisstore/ ./internal/testing/ceiling/
func BenchmarkScriptCost(b *testing.B) {
	srv := redistest.Start(b, redistest.AOF...)
	drainbench.RedisPhases(b, func() (storage.Store, redis.UniversalClient) { return openStore(srv.Addr) }, 20_000)
}
