package ceiling_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/ceiling"
	"github.com/hookline/hookline/internal/testing/drainbench"
	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded"
)

// BenchmarkDrain100k is storage/embedded's BenchmarkDrain100k with the
// queue in memory (drainbench.Benchmark): the drain with no store work at
// all, then with each event and outcome journaled and fdatasync'd per
// round, then with the outcomes journaled unsynced. Against the embedded
// store's run it tells what of the drain's time is the store's.
//
//	go test -run '^$' -bench Drain100k -benchtime 1x ./internal/testing/ceiling/ ./storage/embedded/
func BenchmarkDrain100k(b *testing.B) {
	for _, v := range []struct {
		name string
		opts func(dir string) ceiling.Options
	}{
		{"memory", func(string) ceiling.Options { return ceiling.Options{} }},
		{"journal", func(dir string) ceiling.Options {
			return ceiling.Options{Journal: filepath.Join(dir, "journal")}
		}},
		{"journal_unsynced_outcomes", func(dir string) ceiling.Options {
			return ceiling.Options{Journal: filepath.Join(dir, "journal"), UnsyncedOutcomes: true}
		}},
	} {
		b.Run(v.name, func(b *testing.B) {
			dir := b.TempDir()
			runs := 0
			drainbench.Benchmark(b, func() storage.Store {
				runs++
				st, err := embedded.Open(filepath.Join(dir, fmt.Sprintf("drain%d.db", runs)), embedded.Options{})
				if err != nil {
					b.Fatal(err)
				}
				c, err := ceiling.Wrap(st, v.opts(dir))
				if err != nil {
					b.Fatal(err)
				}
				return c
			}, 100_000, nil)
		})
	}
}

// BenchmarkRedisDrain100k is storage/redisstore's BenchmarkDrain100k
// (redis-server's CPU too) with the least queue any Redis store needs
// (RedisQueue): against the Redis store's run it tells what of the
// drain's time is Redis's own and what is the store's layout.
//
//	go test -run '^$' -bench RedisDrain100k -benchtime 1x ./internal/testing/ceiling/
func BenchmarkRedisDrain100k(b *testing.B) {
	const backlog = 100_000
	open := redisQueues(b, redistest.Start(b).Addr)
	var m redistest.CPUMeter
	drainbench.Benchmark(b, func() storage.Store {
		q, c := open()
		m.Client = c
		return q
	}, backlog, m.Around(backlog))
}

// redisQueues opens, at each call, a RedisQueue on the redis-server at
// addr (keys of a fresh prefix) in front of a fresh embedded store: the
// queue and its client, closed at the end of b.
func redisQueues(b *testing.B, addr string) func() (storage.Store, redis.UniversalClient) {
	dir := b.TempDir()
	runs := 0
	return func() (storage.Store, redis.UniversalClient) {
		runs++
		st, err := embedded.Open(filepath.Join(dir, fmt.Sprintf("queue%d.db", runs)), embedded.Options{})
		if err != nil {
			b.Fatal(err)
		}
		rc := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64})
		b.Cleanup(func() { _ = rc.Close() })
		return ceiling.WrapRedis(st, rc, redistest.Prefix()), rc
	}
}

// BenchmarkRedisScriptCost is storage/redisstore's BenchmarkScriptCost
// on the least Redis queue (RedisQueue): redis-server's time a job to
// enqueue, lease and finish, against the store's.
//
//	go test -run '^$' -bench ScriptCost -benchtime 1x ./storage/redisstore/ ./internal/testing/ceiling/
func BenchmarkRedisScriptCost(b *testing.B) {
	drainbench.RedisPhases(b, redisQueues(b, redistest.Start(b, redistest.AOF...).Addr), 20_000)
}
