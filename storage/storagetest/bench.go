package storagetest

import (
	"fmt"
	"net/http"
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
