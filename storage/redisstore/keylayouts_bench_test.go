package redisstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/redistest"
)

// layoutScripts write one event of 1 KiB in three layouts, for
// BenchmarkKeyLayouts: five commands each in "keys" (the store's own: a
// claim with its TTL, the lookup index, the payload and the job hash,
// each a key of its own, and the lane queue's entry) and "fields" (the
// same values as fields of four hashes shared by every event), three in
// "onehash" (the claim, one hash holding the job and its payload, the
// lane queue's entry).
//
//	KEYS: key prefix
//	ARGV: event id, due ms, payload, event JSON
var layoutScripts = map[string]*redis.Script{
	"keys": redis.NewScript(`
local i = ARGV[1]
redis.call('SET', KEYS[1] .. 'c:' .. i, i, 'PXAT', ARGV[2])
redis.call('SET', KEYS[1] .. 'ids:' .. i, i)
redis.call('SET', KEYS[1] .. 'pl:' .. i, ARGV[3])
redis.call('HSET', KEYS[1] .. 'ev:' .. i, 'ev', ARGV[4], 'st', 'queued', 'due', ARGV[2], 'rs', '0', 'att', '[]', 'ck', i, 'src', 'bench', 'pl', 'x')
redis.call('ZADD', KEYS[1] .. 'q', ARGV[2], i)
return 1
`),
	"fields": redis.NewScript(`
local i = ARGV[1]
redis.call('HSET', KEYS[1] .. 'claims', i, i)
redis.call('HSET', KEYS[1] .. 'ids', i, i)
redis.call('HSET', KEYS[1] .. 'pls', i, ARGV[3])
redis.call('HSET', KEYS[1] .. 'evs', i, ARGV[4])
redis.call('ZADD', KEYS[1] .. 'q', ARGV[2], i)
return 1
`),
	"onehash": redis.NewScript(`
local i = ARGV[1]
redis.call('SET', KEYS[1] .. 'c:' .. i, i, 'PXAT', ARGV[2])
redis.call('HSET', KEYS[1] .. 'ev:' .. i, 'ev', ARGV[4], 'st', 'queued', 'due', ARGV[2], 'rs', '0', 'att', '[]', 'ck', i, 'src', 'bench', 'pb', ARGV[3], 'id', i)
redis.call('ZADD', KEYS[1] .. 'q', ARGV[2], i)
return 1
`),
}

// BenchmarkKeyLayouts is what redis-server spends to store an event in
// each of three key layouts (layoutScripts), apart from the store: its
// CPU per event (redis-cpu-µs/job, a job an event) and the memory it holds for 50,000
// events (used-MiB), and what it appends to its append-only file
// (aof-B/job), each layout on a server of its own persisting as the
// store's users run it (redistest.AOF), its scripts sent 100 to a round
// trip. It tells what a leaner layout could save the
// store's enqueue, which creates four keys an event.
//
//	go test -run '^$' -bench KeyLayouts -benchtime 1x -count 3 ./storage/redisstore/
func BenchmarkKeyLayouts(b *testing.B) {
	const n = 50_000
	body, doc := strings.Repeat("x", 1024), strings.Repeat("y", 400)
	for _, name := range []string{"keys", "fields", "onehash"} {
		b.Run(name, func(b *testing.B) {
			sc := layoutScripts[name]
			for b.Loop() {
				ctx := context.Background()
				srv := redistest.Start(b, redistest.AOF...)
				c := redis.NewClient(&redis.Options{Addr: srv.Addr})
				aof0, _, err := redistest.AOFSize(ctx, c)
				if err != nil {
					b.Fatal(err)
				}
				if err := sc.Load(ctx, c).Err(); err != nil {
					b.Fatal(err)
				}
				due := time.Now().Add(time.Hour).UnixMilli()
				m := redistest.CPUMeter{Client: c}
				m.Start(b)
				for i := 0; i < n; i += 100 {
					if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
						for j := i; j < i+100; j++ {
							sc.EvalSha(ctx, p, []string{"{bench}:"}, fmt.Sprintf("%016d", j), due, body, doc)
						}
						return nil
					}); err != nil {
						b.Fatal(err)
					}
				}
				m.Stop(b, n)
				used, err := redistest.UsedMemory(ctx, c)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(used)/(1<<20), "used-MiB")
				aof1, _, err := redistest.AOFSize(ctx, c)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(aof1-aof0)/n, "aof-B/job")
				_ = c.Close()
			}
		})
	}
}
