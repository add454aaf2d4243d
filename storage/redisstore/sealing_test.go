package redisstore_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/redisstore"
	"github.com/hookline/hookline/storage/storagetest"
)

func sealingKeys(t *testing.T) *storage.Keyring {
	k, err := storage.NewKeyring(storagetest.TestKey(9), storagetest.TestKey(8))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestConformanceSealed runs the suite again with encryption at rest.
func TestConformanceSealed(t *testing.T) {
	srv := redistest.Start(t)
	storagetest.Run(t, storagetest.Sealing(factory(func() redis.UniversalClient {
		return redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{srv.Addr}})
	}, redisstore.Options{Partitions: 4}), sealingKeys(t)))
}

// TestConformanceClusterSealed runs the suite with encryption at rest on
// a real 3-master Redis Cluster (the rekey walks every master).
func TestConformanceClusterSealed(t *testing.T) {
	addrs := redistest.StartCluster(t, 3)
	storagetest.Run(t, storagetest.Sealing(factory(func() redis.UniversalClient {
		return redis.NewUniversalClient(&redis.UniversalOptions{Addrs: addrs, IsClusterMode: true})
	}, redisstore.Options{Partitions: 16}), sealingKeys(t)))
}
