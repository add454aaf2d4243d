package webhooks

import (
	"fmt"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/operator"
	"github.com/hookline/hookline/storage"
)

// TestSeriesCounters: the delivery results count in the time series'
// counters (latency bucket, failure class and error, attempt number at
// the end) in the store's minute and hour buckets; the DLQ size is
// sampled as a gauge; the oldest queued age reads the lanes' heads.
func TestSeriesCounters(t *testing.T) {
	app, err := provisionApp(t, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Cleanup()
	st, err := app.Store()
	if err != nil {
		t.Fatal(err)
	}
	job := func(id string) *storage.Job {
		return &storage.Job{Event: storage.Event{ID: id, Source: "shop"}}
	}
	app.onResult(delivery.Report{Job: job("a"), Result: storage.Delivered, Attempt: &storage.Attempt{N: 1, Status: 200, Duration: 20 * time.Millisecond}})
	app.onResult(delivery.Report{Job: job("b"), Result: storage.Retry, Attempt: &storage.Attempt{N: 1, Status: 503, Duration: time.Second, Error: "upstream answered 503 Service Unavailable"}})
	app.onResult(delivery.Report{Job: job("b"), Result: storage.Delivered, Attempt: &storage.Attempt{N: 2, Status: 200, Duration: 30 * time.Millisecond}})
	app.onResult(delivery.Report{Job: job("c"), Result: storage.Dead, Attempt: &storage.Attempt{N: 3, Duration: 5 * time.Second, Error: "dial tcp 10.1.2.3:40001: connect: connection refused"}})
	for i := range maxErrorsPerSource + 2 { // error messages are bounded per source
		app.onResult(delivery.Report{Job: job("d"), Result: storage.Retry, Attempt: &storage.Attempt{N: 1, Status: 500, Error: fmt.Sprintf("boom %c", 'A'+i)}})
	}
	if !app.flushStats(t.Context(), st) {
		t.Error("flushStats of a dead delivery did not say so")
	}
	want := map[string]int64{
		operator.LatencyCounter(20 * time.Millisecond): 1, operator.LatencyCounter(30 * time.Millisecond): 1,
		operator.LatencyCounter(time.Second): 1, operator.LatencyCounter(5 * time.Second): 1,
		operator.FailureCounter(0): 1, operator.FailureCounter(500): maxErrorsPerSource + 3, // 503 and 500: 5xx
		operator.AttemptsCounter("delivered", 1): 1, operator.AttemptsCounter("delivered", 2): 1, operator.AttemptsCounter("dead", 3): 1,
		operator.ErrorCounter("upstream answered 503 Service Unavailable"):        1,
		operator.ErrorCounter("dial tcp 10.1.2.3:N: connect: connection refused"): 1,
		// the two messages above and 30 "boom" ones fill the 32 counted
		// apart; the last 4 count as (other)
		operator.ErrorCounter(otherType): 4,
		"delivered":                      2,
		"dead":                           1,
	}
	for _, res := range []storage.StatsResolution{storage.StatsByMinute, storage.StatsByHour} {
		bs, err := app.StatsBuckets(t.Context(), res, time.Now().Add(-res.Width()), time.Now().Add(res.Width()))
		if err != nil || len(bs) != 1 {
			t.Fatalf("%s buckets: %v %v", res, bs, err)
		}
		c := bs[0].Counters["shop"]
		for name, n := range want {
			if c[name] != n {
				t.Errorf("%s bucket: %q = %d, want %d", res, name, c[name], n)
			}
		}
	}

	// the DLQ size: shop has one open entry
	ev := storagetestEvent("shop", "e1", "")
	if _, err := st.Enqueue(t.Context(), ev, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	ages, err := app.oldestQueuedAges(t.Context(), time.Now().Add(time.Minute))
	if err != nil || ages["shop"] < 59*time.Second || ages["shop"] > 61*time.Second {
		t.Errorf("oldest queued age a minute after the enqueue = %v, %v", ages, err)
	}
	jobs, err := st.Lease(t.Context(), time.Now(), 1, time.Minute, nil)
	if err != nil || len(jobs) != 1 {
		t.Fatal(jobs, err)
	}
	if err := st.Finish(t.Context(), jobs[0], storage.Outcome{Result: storage.Dead, Attempt: &storage.Attempt{N: 1, At: time.Now(), Status: 400}, Error: "bad"}); err != nil {
		t.Fatal(err)
	}
	app.sampleDLQ(t.Context(), st)
	bs, err := app.StatsBuckets(t.Context(), storage.StatsByMinute, time.Now().Add(-time.Minute), time.Now().Add(time.Minute))
	if err != nil || len(bs) == 0 || bs[len(bs)-1].Counters["shop"][operator.DLQSizeGauge] != 1 {
		t.Errorf("DLQ size gauge: %v %v", bs, err)
	}
	// a source with only a DLQ size sample is not listed by the plain stats
	if err := st.SetStatsGauges(t.Context(), time.Now(), map[string]map[string]int64{"quiet": {operator.DLQSizeGauge: 0}}); err != nil {
		t.Fatal(err)
	}
	if s, err := app.Stats(t.Context(), time.Now().Add(-time.Hour)); err != nil || len(s.Sources) != 1 || s.Sources["shop"].Queue.Dead != 1 {
		t.Errorf("plain stats' sources = %v, %v; want shop's only, with its open entry", s.Sources, err)
	}
	if ages, err := app.oldestQueuedAges(t.Context(), time.Now()); err != nil || ages["shop"] != 0 {
		t.Errorf("oldest queued age with nothing queued = %v, %v", ages, err)
	}
}
