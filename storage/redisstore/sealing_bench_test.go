package redisstore_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/redisstore"
	"github.com/hookline/hookline/storage/storagetest"
)

// BenchmarkEnqueueSealed: ingest of 1 KiB events on Redis without and with
// encryption at rest, 16 concurrent callers per CPU, each side on a
// redis-server of its own so that neither meets the other's data.
//
//	go test -run '^$' -bench EnqueueSealed -benchtime 20000x -count 3 ./storage/redisstore/
func BenchmarkEnqueueSealed(b *testing.B) {
	storagetest.BenchmarkEnqueueSealed(b, func(b *testing.B) storage.Store {
		srv := redistest.Start(b)
		c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{srv.Addr}, PoolSize: 64})
		st := redisstore.New(c, redisstore.Options{Prefix: redistest.Prefix()})
		b.Cleanup(func() { st.Close() })
		return st
	})
}
