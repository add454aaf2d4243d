package redisstore_test

import (
	"context"
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

// BenchmarkTenantsQueued measures what tenants cost with 100,000 events
// queued (storagetest.BenchmarkTenantsQueued): Redis's used memory and a
// lease's cost, without tenants, of one, of 100,000.
//
//	go test -run '^$' -bench TenantsQueued -benchtime 200x ./storage/redisstore/
func BenchmarkTenantsQueued(b *testing.B) {
	srv := redistest.Start(b)
	c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{srv.Addr}, PoolSize: 64})
	defer c.Close()
	storagetest.BenchmarkTenantsQueued(b, func(b *testing.B) storage.Store {
		if err := c.FlushAll(b.Context()).Err(); err != nil {
			b.Fatal(err)
		}
		return redisstore.New(c, redisstore.Options{Prefix: redistest.Prefix()})
	}, func(storage.Store) int64 {
		n, _ := redistest.UsedMemory(context.Background(), c)
		return n
	}, 100_000)
}
