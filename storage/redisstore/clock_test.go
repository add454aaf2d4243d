package redisstore_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/redisstore"
	"github.com/hookline/hookline/storage/storagetest"
)

// TestOptionsNowIsTheClock: the store reads Options.Now wherever it reads
// the clock itself (storagetest.RunClock).
func TestOptionsNowIsTheClock(t *testing.T) {
	srv := redistest.Start(t)
	storagetest.RunClock(t, func(t *testing.T, now func() time.Time) storage.Store {
		s := redisstore.New(redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{srv.Addr}}),
			redisstore.Options{Prefix: redistest.Prefix(), Partitions: 4, Now: now})
		t.Cleanup(func() { s.Close() })
		return s
	})
}
