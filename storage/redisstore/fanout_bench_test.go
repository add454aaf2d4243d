package redisstore_test

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage/redisstore"
	"github.com/hookline/hookline/storage/storagetest"
)

// BenchmarkEnqueueFanOut: ingest of events with 1 and 3 deliveries, one
// script per event, concurrent calls sharing round trips (the fan-out
// target of docs/reference.md: 3 destinations cost at most 1.3x one).
//
//	go test -run '^$' -bench EnqueueFanOut ./storage/redisstore/
func BenchmarkEnqueueFanOut(b *testing.B) {
	srv := redistest.Start(b)
	for _, n := range []int{1, 3} {
		b.Run(map[int]string{1: "deliveries=1", 3: "deliveries=3"}[n], func(b *testing.B) {
			c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{srv.Addr}, PoolSize: 64})
			st := redisstore.New(c, redisstore.Options{Prefix: redistest.Prefix()})
			defer st.Close()
			if err := c.ConfigResetStat(b.Context()).Err(); err != nil {
				b.Fatal(err)
			}
			storagetest.BenchmarkEnqueue(b, st, n)
			// the server's own time per enqueue script, free of the
			// client's share of the machine
			info, err := c.Info(b.Context(), "commandstats").Result()
			if err != nil {
				b.Fatal(err)
			}
			if m := usecPerCall.FindStringSubmatch(info); m != nil {
				us, _ := strconv.ParseFloat(m[1], 64)
				b.ReportMetric(us, "server-us/script")
			}
		})
	}
}

// usecPerCall finds the server time per EVALSHA call in INFO commandstats.
var usecPerCall = regexp.MustCompile(`cmdstat_evalsha:calls=\d+,usec=\d+,usec_per_call=([0-9.]+)`)
