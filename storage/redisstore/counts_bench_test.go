package redisstore_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage/redisstore"
	"github.com/hookline/hookline/storage/storagetest"
)

// BenchmarkCounts times the counts of a store holding 100k events
// (HOOKLINE_BENCH_EVENTS to change it; storagetest.BenchmarkCounts): the
// counters against the scans.
//
//	go test -run '^$' -bench Counts ./storage/redisstore/
func BenchmarkCounts(b *testing.B) {
	srv := redistest.Start(b)
	c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{srv.Addr}, PoolSize: 64})
	st := redisstore.New(c, redisstore.Options{Prefix: redistest.Prefix()})
	defer st.Close()
	storagetest.BenchmarkCounts(b, st, storagetest.CountsBenchSize())
}
