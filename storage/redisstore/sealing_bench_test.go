package redisstore_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/redisstore"
	"github.com/hookline/hookline/storage/storagetest"
)

// BenchmarkEnqueueSealed: ingest of 1 KiB events on Redis without and with
// encryption at rest (storage.SealingStore), 16 concurrent callers, each
// side on a redis-server of its own so that neither meets the other's
// data (DESIGN.md: ingest with encryption ≥ 0.9x without).
//
//	go test -run '^$' -bench EnqueueSealed -count 5 ./storage/redisstore/
func BenchmarkEnqueueSealed(b *testing.B) {
	keys, err := storage.NewKeyring(storagetest.TestKey(1))
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		keys *storage.Keyring
	}{{"clear", nil}, {"sealed", keys}} {
		b.Run(tc.name, func(b *testing.B) {
			srv := redistest.Start(b)
			c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{srv.Addr}, PoolSize: 64})
			st := redisstore.New(c, redisstore.Options{Prefix: redistest.Prefix()})
			defer st.Close()
			var s storage.Store = st
			if tc.keys != nil {
				s = storage.NewSealingStore(st, tc.keys)
			}
			storagetest.BenchmarkEnqueue(b, s, 1)
		})
	}
}
