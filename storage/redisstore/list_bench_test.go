package redisstore_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage/redisstore"
	"github.com/hookline/hookline/storage/storagetest"
)

// BenchmarkDLQList times a DLQ page over 20k entries of 4 KiB
// (HOOKLINE_BENCH_EVENTS to change it; storagetest.BenchmarkDLQList), on
// one redis-server with the default 16 partitions.
//
//	go test -run '^$' -bench DLQList -benchmem ./storage/redisstore/
func BenchmarkDLQList(b *testing.B) {
	srv := redistest.Start(b)
	c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{srv.Addr}, PoolSize: 64})
	st := redisstore.New(c, redisstore.Options{Prefix: redistest.Prefix()})
	defer st.Close()
	storagetest.BenchmarkDLQList(b, st, storagetest.DLQListBenchSize())
}
