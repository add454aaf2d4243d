package storagetest

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hookline/hookline/storage"
)

// BenchmarkEnqueue measures ingest: b.N enqueues of distinct 1 KiB
// deduplicated events, 16 goroutines per CPU at a time (concurrent
// requests share commits and round trips, as at the ingress), each event
// with deliveries deliveries (1: the default destination alone, stored as
// before destinations existed). It reports events/s.
func BenchmarkEnqueue(b *testing.B, s storage.Store, deliveries int) {
	body := make([]byte, 1024)
	var seq atomic.Int64
	b.SetParallelism(16)
	b.ReportAllocs()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			ev := &storage.Event{ID: uuid.NewString(), EventID: fmt.Sprintf("evt_%d", seq.Add(1)), Dedupe: true, Source: "bench",
				Upstream: "http://127.0.0.1:1/", Headers: http.Header{"Content-Type": {"application/json"}}, Body: body, ReceivedAt: time.Now()}
			if deliveries > 1 {
				for i := range deliveries {
					ev.Deliveries = append(ev.Deliveries, storage.Delivery{Destination: fmt.Sprintf("d%d", i), Upstream: ev.Upstream})
				}
			}
			if _, err := s.Enqueue(b.Context(), ev, time.Now().Add(time.Hour)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkEnqueueSealed runs BenchmarkEnqueue on a fresh store from open
// (closed by its own cleanup) without ("clear") and with ("sealed")
// encryption at rest, a storage.SealingStore over it: the target
// (docs/benchmarks.md) is sealed at least 0.9x the events/s of clear.
func BenchmarkEnqueueSealed(b *testing.B, open func(b *testing.B) storage.Store) {
	keys, err := storage.NewKeyring(TestKey(1))
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		keys *storage.Keyring
	}{{"clear", nil}, {"sealed", keys}} {
		b.Run(tc.name, func(b *testing.B) {
			s := open(b)
			if tc.keys != nil {
				s = storage.NewSealingStore(s, tc.keys)
			}
			BenchmarkEnqueue(b, s, 1)
		})
	}
}

// BenchmarkCounts fills s with n queued events of 1 KiB (of 4 sources, 32
// enqueues at a time), a tenth of them rescheduled an hour later and a
// tenth dead (DLQ entries), then times the answers the stats page and the
// gauges read: QueueByLane, DLQCounts and Counts from the counters, and
// the same counted by reading every job and entry (Scan: the
// storage.Recounter, what QueueByLane and DLQCounts did before the
// counters). Load it once per run:
//
//	go test -run '^$' -bench Counts ./storage/redisstore/ ./storage/embedded/
func BenchmarkCounts(b *testing.B, s storage.Store, n int) {
	ctx := b.Context()
	body := make([]byte, 1024)
	enqueueMany(b, s, n, time.Hour, func(i int64) *storage.Event {
		return &storage.Event{ID: uuid.NewString(), EventID: fmt.Sprintf("evt_%d", i), Dedupe: true,
			Source: fmt.Sprintf("src%d", i%4), Upstream: "http://127.0.0.1:1/", Body: body, ReceivedAt: time.Now()}
	})
	now := time.Now()
	for done := 0; done < n/5; {
		jobs, err := s.Lease(ctx, now, min(1000, n/5-done), time.Minute, nil)
		if err != nil || len(jobs) == 0 {
			b.Fatalf("Lease: %d jobs, %v", len(jobs), err)
		}
		for i, j := range jobs {
			out := storage.Outcome{Result: storage.Retry, Due: now.Add(time.Hour)}
			if (done+i)%2 == 1 {
				out = storage.Outcome{Result: storage.Dead, Error: "bench"}
			}
			if err := s.Finish(ctx, j, out); err != nil {
				b.Fatal(err)
			}
		}
		done += len(jobs)
	}
	b.ResetTimer()
	cases := []struct {
		name string
		run  func() error
	}{
		{"QueueByLane", func() error { _, err := s.QueueByLane(ctx); return err }},
		{"DLQCounts", func() error { _, err := s.DLQCounts(ctx); return err }},
		{"Counts", func() error { _, err := s.Counts(ctx); return err }},
	}
	if r, ok := Unseal(s).(storage.Recounter); ok {
		cases = append(cases, struct {
			name string
			run  func() error
		}{"Scan", func() error { _, _, err := r.Recount(ctx); return err }})
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if err := bc.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// CountsBenchSize is the number of events BenchmarkCounts loads: the
// environment's HOOKLINE_BENCH_EVENTS, 100,000 without it.
func CountsBenchSize() int {
	if n, err := strconv.Atoi(os.Getenv("HOOKLINE_BENCH_EVENTS")); err == nil && n > 0 {
		return n
	}
	return 100_000
}

// BenchmarkDLQList times one page (limit 50) of the DLQ list of a store
// holding n dead entries of 4 KiB (LoadFinished): every entry ("all"), the
// dashboard's default filter that every entry passes ("pending"), one
// matching a quarter ("source"), and one matching nothing ("nomatch"),
// the page that examines its whole scan budget. Load it once per run:
//
//	go test -run '^$' -bench DLQList -benchmem ./storage/redisstore/ ./storage/embedded/
func BenchmarkDLQList(b *testing.B, s storage.Store, n int) {
	LoadFinished(b, s, n, 4096, storage.Dead)
	b.ResetTimer()
	for _, bc := range []struct {
		name string
		f    storage.DLQFilter
	}{
		{"all", storage.DLQFilter{}},
		{"pending", storage.DLQFilter{Status: storage.DLQPending}},
		{"source", storage.DLQFilter{Source: "src1"}},
		{"nomatch", storage.DLQFilter{Type: "nothing"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.DLQList(b.Context(), bc.f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// DLQListBenchSize is the number of entries BenchmarkDLQList loads: the
// environment's HOOKLINE_BENCH_EVENTS, 20,000 without it.
func DLQListBenchSize() int {
	if n, err := strconv.Atoi(os.Getenv("HOOKLINE_BENCH_EVENTS")); err == nil && n > 0 {
		return n
	}
	return 20_000
}

// enqueueMany enqueues n events (event(i) for i from 1 to n), due dueIn
// from each enqueue, 32 at a time: a store loaded as concurrent requests
// load it, for the benchmarks and the tests of what a listing reads.
func enqueueMany(tb testing.TB, s storage.Store, n int, dueIn time.Duration, event func(i int64) *storage.Event) {
	var seq atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := seq.Add(1)
				if i > int64(n) {
					return
				}
				if _, err := s.Enqueue(tb.Context(), event(i), time.Now().Add(dueIn)); err != nil {
					tb.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkEraseTenant measures a tenant's erasure: n queued events of 1
// KiB, one in two of the tenant erased, the others spread over 1000
// other tenants, so that the walk examines every event; each iteration
// erases the tenant's n/2 events with batches of batch (the store is
// filled again between iterations, off the clock). It reports the events
// erased a second.
func BenchmarkEraseTenant(b *testing.B, s storage.Store, n, batch int) {
	body := make([]byte, 1024)
	var erased int
	var took time.Duration
	for it := range b.N {
		b.StopTimer()
		enqueueMany(b, s, n, time.Hour, func(i int64) *storage.Event {
			tenant := "big.myshopify.com"
			if i%2 == 1 {
				tenant = fmt.Sprintf("shop-%d.myshopify.com", i%1000)
			}
			return &storage.Event{ID: uuid.NewString(), EventID: fmt.Sprintf("evt_%d_%d", it, i), Dedupe: true, Source: "bench",
				Tenant: tenant, Upstream: "http://127.0.0.1:1/", Body: body, ReceivedAt: time.Now()}
		})
		b.StartTimer()
		start := time.Now()
		p, err := storage.EraseTenant(b.Context(), s, "bench", "big.myshopify.com", storage.TenantEraseOptions{Batch: batch}, nil, nil)
		took += time.Since(start)
		if err != nil || p.State != storage.TenantErasureDone || p.Erased != n/2 {
			b.Fatalf("EraseTenant = %+v, %v; want done, %d erased", p, err, n/2)
		}
		erased += p.Erased
	}
	b.ReportMetric(float64(erased)/took.Seconds(), "events/s")
}

// BenchmarkTenantsQueued measures what tenants cost a store with n events
// of 1 KiB queued: none with a tenant, all of one tenant, or each of its
// own (n tenants). It reports the memory the backlog took (mem's growth,
// in MB: the process's heap or Redis's used memory) and what a Lease of
// 16 jobs costs with the backlog in place (µs/lease: the shares of a lane
// take turns at lease time).
func BenchmarkTenantsQueued(b *testing.B, open func(b *testing.B) storage.Store, mem func(s storage.Store) int64, n int) {
	body := make([]byte, 1024)
	for _, tc := range []struct {
		name   string
		tenant func(i int64) string
	}{
		{"no-tenant", func(int64) string { return "" }},
		{"one-tenant", func(int64) string { return "big.myshopify.com" }},
		{fmt.Sprintf("%d-tenants", n), func(i int64) string { return fmt.Sprintf("shop-%d.myshopify.com", i) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := open(b)
			before := mem(s)
			enqueueMany(b, s, n, time.Hour, func(i int64) *storage.Event {
				return &storage.Event{ID: uuid.NewString(), EventID: fmt.Sprintf("evt_%d", i), Dedupe: true, Source: "bench",
					Tenant: tc.tenant(i), Upstream: "http://127.0.0.1:1/", Body: body, ReceivedAt: time.Now()}
			})
			grew := mem(s) - before
			leased := 0
			b.ResetTimer()
			for range b.N {
				jobs, err := s.Lease(b.Context(), time.Now(), 16, time.Hour, nil)
				if err != nil {
					b.Fatal(err)
				}
				leased += len(jobs)
			}
			b.StopTimer()
			if leased != 16*b.N {
				b.Fatalf("leased %d jobs in %d leases of 16", leased, b.N)
			}
			b.ReportMetric(float64(grew)/1e6, "MB")
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/lease")
		})
	}
}

// BenchmarkCleanup times the Cleanup that takes what retention ends: n
// delivered jobs past retention ("delivered": their hashes or records,
// claims and indexes), then n DLQ entries past dlq_retention ("dead"),
// each loaded into s (open, once per result) before the clock starts, one
// Cleanup per load. It reports events/s (an event's claim, job and, when
// dead, DLQ entry go): the pace at which a node's cleanup keeps up with
// what its deliveries finish.
//
//	go test -run '^$' -bench Cleanup -benchtime 3x ./storage/redisstore/ ./storage/embedded/
func BenchmarkCleanup(b *testing.B, open func(b *testing.B) storage.Store, n int) {
	for _, bc := range []struct {
		name   string
		result storage.Result
	}{{"delivered", storage.Delivered}, {"dead", storage.Dead}} {
		b.Run(bc.name, func(b *testing.B) {
			var took time.Duration
			for b.Loop() {
				b.StopTimer()
				s := open(b)
				LoadFinished(b, s, n, 1024, bc.result)
				later := time.Now().Add(time.Hour)
				b.StartTimer()
				start := time.Now()
				removed, err := s.Cleanup(b.Context(), later, time.Minute, time.Minute)
				took += time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				if removed < n {
					b.Fatalf("Cleanup removed %d, want at least %d", removed, n)
				}
			}
			b.ReportMetric(float64(n*b.N)/took.Seconds(), "events/s")
		})
	}
}
