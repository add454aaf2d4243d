package redisstore_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/redisstore"
	"github.com/hookline/hookline/storage/storagetest"
)

// BenchmarkCleanup times the retention of HOOKLINE_BENCH_EVENTS (20,000)
// delivered jobs, then DLQ entries, on one redis-server with the default
// 16 partitions (storagetest.BenchmarkCleanup).
//
//	go test -run '^$' -bench Cleanup -benchtime 3x ./storage/redisstore/
func BenchmarkCleanup(b *testing.B) {
	srv := redistest.Start(b)
	storagetest.BenchmarkCleanup(b, func(b *testing.B) storage.Store {
		c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{srv.Addr}, PoolSize: 64})
		st := redisstore.New(c, redisstore.Options{Prefix: redistest.Prefix()})
		b.Cleanup(func() { st.Close() })
		return st
	}, storagetest.DLQListBenchSize())
}
