package redisstore_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/redisstore"
	"github.com/hookline/hookline/storage/storagetest"
)

// TestClaimCost measures a dedupe claim's cost in Redis's memory
// (docs/benchmarks.md, "Claims per GiB"): used_memory of a fresh server
// with and without the claims of 20,000 removed events (265 bytes a
// claim in layout 2, one key a claim; 402 in layout 1, three). It fails
// past 400 bytes, so that a layout change that bloats them is seen.
func TestClaimCost(t *testing.T) {
	clients := map[storage.Store]*redis.Client{}
	open := func(t *testing.T) storage.Store {
		srv := redistest.Start(t)
		c := redis.NewClient(&redis.Options{Addr: srv.Addr})
		s := redisstore.New(c, redisstore.Options{Prefix: redistest.Prefix(), Partitions: 4})
		t.Cleanup(func() { s.Close() })
		clients[s] = c
		return s
	}
	size := func(t *testing.T, s storage.Store) int64 {
		n, err := redistest.UsedMemory(t.Context(), clients[s])
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if per := storagetest.ClaimCost(t, open, size, 20000); per > 400 || per <= 0 {
		t.Errorf("%.0f bytes a claim, want at most 400", per)
	}
}
