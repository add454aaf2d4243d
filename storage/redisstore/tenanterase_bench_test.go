package redisstore_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/redisstore"
	"github.com/hookline/hookline/storage/storagetest"
)

// BenchmarkEraseTenant measures a tenant's erasure (storagetest.
// BenchmarkEraseTenant): 10,000 of 20,000 events, batches of 500.
//
//	go test -run '^$' -bench EraseTenant -benchtime 1x ./storage/redisstore/
func BenchmarkEraseTenant(b *testing.B) {
	srv := redistest.Start(b)
	c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{srv.Addr}, PoolSize: 64})
	st := redisstore.New(c, redisstore.Options{Prefix: redistest.Prefix()})
	defer st.Close()
	storagetest.BenchmarkEraseTenant(b, st, 20_000, storage.MaxTenantEraseBatch)
}
