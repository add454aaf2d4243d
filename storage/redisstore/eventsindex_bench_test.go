package redisstore

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
)

// BenchmarkEventsPage times the first page of GET /webhooks/events (50
// events, newest first) over a store holding HOOKLINE_EVENTS_PAGE_EVENTS
// queued events (default 100,000), read from the events index and, as
// before it existed, from the queues; and the indexing of such a store by
// Open (IndexEvents, "build"). Each reports the longest command Redis ran
// meanwhile (longest-redis-ms: every other client waited that long);
// "index" also what the index takes of Redis's memory per event, beside
// what Redis takes in all:
//
//	go test -run '^$' -bench EventsPage -benchtime 20x ./storage/redisstore/
func BenchmarkEventsPage(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("HOOKLINE_EVENTS_PAGE_EVENTS")); err == nil && v > 0 {
		n = v
	}
	srv := redistest.Start(b)
	s := New(redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 64}), Options{Prefix: redistest.Prefix()})
	defer s.Close()
	ctx := b.Context()
	if err := s.IndexEvents(ctx); err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 32 {
		wg.Go(func() {
			for i := w; i < n; i += 32 {
				id, _ := uuid.NewV7()
				ev := &storage.Event{ID: id.String(), EventID: fmt.Sprintf("evt_%d", i), Dedupe: true, Source: "src",
					Type: "t", Upstream: "http://127.0.0.1:1/", Body: []byte(`{"a":1}`), ReceivedAt: time.Now()}
				if _, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	f := storage.EventFilter{Limit: 50}
	b.Run("index", func(b *testing.B) {
		defer longestCommand(b, s.c)()
		for b.Loop() {
			if page, err := s.listIndexed(ctx, f, ""); err != nil || len(page.Events) != 50 {
				b.Fatalf("%d events, %v", len(page.Events), err)
			}
		}
		// what the index takes of Redis's memory, beside all the store takes
		var index int64
		for _, p := range s.parts {
			v, err := s.c.MemoryUsage(ctx, p.events(), 0).Result()
			if err != nil {
				b.Fatal(err)
			}
			index += v
		}
		used, err := redistest.UsedMemory(ctx, s.c)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(index)/float64(n), "index-B/event")
		b.ReportMetric(float64(used)/float64(n), "redis-B/event")
	})
	b.Run("queues", func(b *testing.B) {
		defer longestCommand(b, s.c)()
		for b.Loop() {
			if page, err := s.listQueues(ctx, f, ""); err != nil || len(page.Events) != 50 {
				b.Fatalf("%d events, %v", len(page.Events), err)
			}
		}
	})
	b.Run("build", func(b *testing.B) {
		defer longestCommand(b, s.c)()
		for b.Loop() {
			b.StopTimer()
			for _, p := range s.parts {
				if err := s.c.Unlink(ctx, p.events()).Err(); err != nil { // freed apart: not the indexing's time
					b.Fatal(err)
				}
			}
			b.StartTimer()
			if err := s.IndexEvents(ctx); err != nil {
				b.Fatal(err)
			}
		}
		if got, _ := s.c.ZCard(ctx, s.parts[0].events()).Result(); got == 0 {
			b.Fatal("nothing indexed")
		}
	})
}

// longestCommand clears the server's slow log (every command of 1 ms or
// more); the function it returns reports the longest command logged since.
func longestCommand(b *testing.B, c redis.UniversalClient) func() {
	ctx := b.Context()
	if err := c.ConfigSet(ctx, "slowlog-log-slower-than", "1000").Err(); err != nil {
		b.Fatal(err)
	}
	if err := c.ConfigSet(ctx, "slowlog-max-len", "10000").Err(); err != nil {
		b.Fatal(err)
	}
	if err := c.Do(ctx, "SLOWLOG", "RESET").Err(); err != nil {
		b.Fatal(err)
	}
	return func() {
		logs, err := c.SlowLogGet(ctx, -1).Result()
		if err != nil {
			b.Fatal(err)
		}
		var longest time.Duration
		for _, l := range logs {
			longest = max(longest, l.Duration)
		}
		b.ReportMetric(float64(longest.Microseconds())/1000, "longest-redis-ms")
	}
}
