package operator_test

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/operator"
	"github.com/hookline/hookline/storage"
)

// seriesBuckets is known traffic for the range and series routes: source
// gen, 10 minutes ago and 3 minutes ago by the minute, and in the hour
// buckets 3 days ago and now.
func seriesBuckets(now time.Time) map[storage.StatsResolution][]storage.StatsBucket {
	m1 := now.Add(-10 * time.Minute).Truncate(time.Minute)
	m2 := now.Add(-3 * time.Minute).Truncate(time.Minute)
	gen1 := map[string]int64{"accepted": 10, "delivered": 8, "dead": 1, "retry": 3, "attempts": 12,
		operator.TypeCounter("accepted", "invoice.paid"): 4, operator.TypeCounter("delivered", "invoice.paid"): 3,
		operator.FailureCounter(503): 2, operator.FailureCounter(0): 1, operator.FailureCounter(404): 1,
		operator.LatencyCounter(20 * time.Millisecond): 10, operator.LatencyCounter(2 * time.Second): 2,
		operator.AttemptsCounter("delivered", 1): 7, operator.AttemptsCounter("delivered", 3): 1, operator.AttemptsCounter("dead", 4): 1,
		operator.ErrorCounter(operator.NormalizeError("upstream answered 503 Service Unavailable")):            2,
		operator.ErrorCounter(operator.NormalizeError("dial tcp 10.0.0.7:41234: connect: connection refused")): 1,
		operator.ErrorCounter(operator.NormalizeError("upstream answered 404 Not Found")):                      1,
		operator.DLQSizeGauge: 1}
	gen2 := map[string]int64{"accepted": 5, "delivered": 5, "attempts": 5, operator.LatencyCounter(40 * time.Millisecond): 5,
		operator.AttemptsCounter("delivered", 1): 5, operator.DLQSizeGauge: 1,
		operator.TenantCounter("accepted", "big.myshopify.com"): 3, operator.TenantCounter("delivered", "big.myshopify.com"): 2,
		operator.TenantCounter("accepted", operator.OtherTenant): 2, operator.TenantCounter("delivered", operator.OtherTenant): 2}
	shop := map[string]int64{"accepted": 2, operator.DLQSizeGauge: 3}
	return map[storage.StatsResolution][]storage.StatsBucket{
		storage.StatsByMinute: {
			{Start: m1, Counters: map[string]map[string]int64{"gen": gen1, "shop": shop}},
			{Start: m2, Counters: map[string]map[string]int64{"gen": gen2}},
		},
		storage.StatsByHour: {
			{Start: now.Add(-72 * time.Hour).Truncate(time.Hour), Counters: map[string]map[string]int64{"gen": {"accepted": 100, "delivered": 90, "dead": 10, "retry": 20}}},
			{Start: now.Truncate(time.Hour), Counters: map[string]map[string]int64{"gen": gen1}},
		},
	}
}

// get answers a GET of path from api, decoded into v.
func get(t *testing.T, api http.Handler, path string, v any) int {
	t.Helper()
	w := httptest.NewRecorder()
	api.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
	if w.Code == http.StatusOK {
		if err := json.Unmarshal(w.Body.Bytes(), v); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
	}
	return w.Code
}

// TestRangeStats: GET /webhooks/stats with a window sums the buckets in
// it into getWebhookStats' fields, in total and by source with health;
// without parameters it stays the plain answer.
func TestRangeStats(t *testing.T) {
	f := newFakeApp()
	now := time.Now()
	f.buckets = seriesBuckets(now)
	f.health = map[string]operator.Health{"gen": {OldestQueuedAge: 90 * time.Second, BreakerOpen: true}}
	f.stats = operator.Stats{Sources: map[string]operator.SourceCounts{"gen": {Queue: storage.Counts{Queued: 4, InFlight: 1, Dead: 2}}}}
	f.paused["gen"] = storage.Pause{Source: "gen"}
	f.paused["shop#big"] = storage.Pause{Source: "shop", Tenant: "big"} // a tenant's pause: shop is not paused
	api := apiOver(f)

	var plain map[string]any
	if code := get(t, api, "/webhooks/stats", &plain); code != 200 || plain["total"] == nil || plain["from"] != nil {
		t.Fatalf("plain stats: %d %v", code, plain)
	}
	var rs operator.RangeStatsAnswer
	if code := get(t, api, "/webhooks/stats?from=1h", &rs); code != 200 {
		t.Fatalf("range: %d", code)
	}
	if rs.Resolution != "minute" || rs.Total != 17 || rs.Completed != 13 || rs.DeadLetter != 1 || *rs.TotalRetries != 3 || *rs.Failed != 4 || rs.Pending != 5 {
		t.Errorf("last hour = %+v", rs.RangeCounts)
	}
	if want := 13.0 / 14 * 100; math.Abs(*rs.SuccessRate-want) > 1e-9 {
		t.Errorf("success rate %v, want %v", *rs.SuccessRate, want)
	}
	if want := 1.0 / 17 * 100; math.Abs(*rs.DeadLetterRate-want) > 1e-9 {
		t.Errorf("dead letter rate %v, want %v", *rs.DeadLetterRate, want)
	}
	gen := rs.Sources["gen"]
	perMinute := 15 / rs.To.Sub(rs.From).Minutes() // from rounded down to the minute
	if gen.Total != 15 || gen.OpenDLQ != 2 || gen.OldestQueuedAgeSeconds != 90 || !gen.Paused || !gen.BreakerOpen || math.Abs(gen.ReceivedPerMinute-perMinute) > 1e-9 {
		t.Errorf("gen = %+v", gen)
	}
	if shop := rs.Sources["shop"]; shop.Total != 2 || shop.Paused || shop.SuccessRate != nil {
		t.Errorf("shop = %+v", shop)
	}

	// a week: the hour buckets; by source
	rs = operator.RangeStatsAnswer{}
	if code := get(t, api, "/webhooks/stats?from=7d&source=gen", &rs); code != 200 {
		t.Fatalf("week: %d", code)
	}
	if rs.Resolution != "hour" || rs.Total != 110 || rs.DeadLetter != 11 || len(rs.Sources) != 1 || *rs.AverageRetries != 23.0/(98+11) {
		t.Errorf("week of gen = %s %+v, %d sources", rs.Resolution, rs.RangeCounts, len(rs.Sources))
	}
	// by type: what is counted by type, the rest null
	rs = operator.RangeStatsAnswer{}
	if code := get(t, api, "/webhooks/stats?type=invoice.paid", &rs); code != 200 {
		t.Fatalf("type: %d", code)
	}
	if rs.Total != 4 || rs.Completed != 3 || rs.Failed != nil || rs.TotalRetries != nil || rs.Type != "invoice.paid" {
		t.Errorf("by type = %+v", rs.RangeCounts)
	}
	// by tenant: while it was among the busiest; "(other)": the rest
	for tenant, want := range map[string][2]int64{"big.myshopify.com": {3, 2}, operator.OtherTenant: {2, 2}, "quiet.myshopify.com": {0, 0}} {
		rs = operator.RangeStatsAnswer{}
		if code := get(t, api, "/webhooks/stats?tenant="+url.QueryEscape(tenant), &rs); code != 200 {
			t.Fatalf("tenant %s: %d", tenant, code)
		}
		if rs.Total != want[0] || rs.Completed != want[1] || rs.Failed != nil || rs.Tenant != tenant || rs.Sources["gen"].Total != want[0] {
			t.Errorf("tenant %s = %+v, want %v", tenant, rs, want)
		}
	}
	var e map[string]any
	if code := get(t, api, "/webhooks/stats?type=x&tenant=y", &e); code != 400 {
		t.Errorf("type and tenant together: %d %v, want 400", code, e)
	}
}

// TestSeries: one point per step with the buckets' counters where they
// fall, the DLQ size summed over sources, interpolated latencies, the
// attempts distribution and the top errors; windows of 15m, 1h, 24h and
// 7d get their default steps; bad parameters a 400.
func TestSeries(t *testing.T) {
	f := newFakeApp()
	now := time.Now()
	f.buckets = seriesBuckets(now)
	api := apiOver(f)
	for _, tc := range []struct {
		window string
		step   int64
		points int
		res    string
	}{
		{"15m", 60, 15, "minute"},
		{"1h", 60, 60, "minute"},
		{"24h", 900, 96, "minute"},
		{"7d", 3600, 168, "hour"},
	} {
		var s operator.SeriesAnswer
		if code := get(t, api, "/webhooks/stats/series?from="+tc.window, &s); code != 200 {
			t.Fatalf("%s: %d", tc.window, code)
		}
		// from is rounded down to the step: one more point when now is
		// not on a step's boundary
		if s.StepSeconds != tc.step || s.Resolution != tc.res || len(s.Points) < tc.points || len(s.Points) > tc.points+1 {
			t.Errorf("%s: step %d, %s, %d points; want %d, %s, %d", tc.window, s.StepSeconds, s.Resolution, len(s.Points), tc.step, tc.res, tc.points)
		}
		var received int64
		for _, p := range s.Points {
			received += p.Received
		}
		if want := map[string]int64{"15m": 17, "1h": 17, "24h": 17, "7d": 110}[tc.window]; received != want {
			t.Errorf("%s: %d received over the points, want %d", tc.window, received, want)
		}
	}

	var s operator.SeriesAnswer
	if code := get(t, api, "/webhooks/stats/series?from=15m&step=1m", &s); code != 200 {
		t.Fatal(code)
	}
	at := func(ago time.Duration) operator.SeriesPoint {
		start := now.Add(-ago).Truncate(time.Minute)
		for _, p := range s.Points {
			if p.Time.Equal(start) {
				return p
			}
		}
		t.Fatalf("no point at %v", start)
		return operator.SeriesPoint{}
	}
	p := at(10 * time.Minute)
	if p.Received != 12 || p.Delivered != 8 || p.Dead != 1 || p.Retries != 3 ||
		p.Failed["5xx"] != 2 || p.Failed["connection"] != 1 || p.Failed["4xx"] != 1 || p.Failed["other"] != 0 {
		t.Errorf("point 10m ago = %+v", p)
	}
	if p.DLQSize == nil || *p.DLQSize != 4 {
		t.Errorf("DLQ size 10m ago = %v, want gen's 1 + shop's 3", p.DLQSize)
	}
	// 10 attempts in (0.01, 0.025], 2 in (1, 2.5]: p50 at rank 6 of the
	// first bucket, p95 and p99 in the second
	if p.Latency == nil || p.Latency.P50 != 0.019 || p.Latency.P95 != 1+1.5*(11.4-10)/2 || p.Latency.P99 != 1+1.5*(11.88-10)/2 {
		t.Errorf("latency 10m ago = %+v", p.Latency)
	}
	if q := at(5 * time.Minute); q.Received != 0 || q.Latency != nil || q.DLQSize != nil || q.SuccessRate != nil {
		t.Errorf("an empty point = %+v", q)
	}
	if q := at(3 * time.Minute); *q.SuccessRate != 100 || *q.DLQSize != 1 {
		t.Errorf("point 3m ago = %+v", q)
	}
	if s.Attempts["delivered"]["1"] != 12 || s.Attempts["delivered"]["3"] != 1 || s.Attempts["dead"]["4"] != 1 {
		t.Errorf("attempts = %v", s.Attempts)
	}
	want := []operator.ErrorCount{{Message: "upstream answered 503 Service Unavailable", Count: 2},
		{Message: "dial tcp 10.0.0.7:N: connect: connection refused", Count: 1}, {Message: "upstream answered 404 Not Found", Count: 1}}
	if len(s.TopErrors) != 3 || s.TopErrors[0] != want[0] || s.TopErrors[1] != want[1] || s.TopErrors[2] != want[2] {
		t.Errorf("top errors = %v, want %v", s.TopErrors, want)
	}
	// one source
	s = operator.SeriesAnswer{}
	if code := get(t, api, "/webhooks/stats/series?from=15m&source=shop", &s); code != 200 {
		t.Fatal(code)
	}
	var received int64
	for _, p := range s.Points {
		received += p.Received
	}
	if received != 2 || s.Source != "shop" || len(s.TopErrors) != 0 {
		t.Errorf("shop's series: %d received, %+v", received, s)
	}

	for _, path := range []string{
		"/webhooks/stats/series?from=soon",
		"/webhooks/stats/series?to=1h&from=30m",
		"/webhooks/stats/series?from=24h&step=0s",
		"/webhooks/stats/series?from=24h&step=-1m",
		"/webhooks/stats/series?from=24h&step=841h", // past the 35 days kept
		"/webhooks/stats/series?from=24h&step=2562047h",
		"/webhooks/stats/series?from=24h&step=tomorrow",
		"/webhooks/stats/series?from=47h&step=1m", // 2820 points
		"/webhooks/stats/series?from=60d&step=1h", // counters are kept 35 days
	} {
		var e operator.ErrorAnswer
		w := httptest.NewRecorder()
		api.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		if w.Code != 400 || json.Unmarshal(w.Body.Bytes(), &e) != nil || e.Error == "" {
			t.Errorf("GET %s: %d %s, want a 400 JSON error", path, w.Code, w.Body)
		}
	}
}

// TestSeriesStepRounded: a step finer than the counters kept is rounded up
// (to whole minutes; to whole hours for a window older than the minute
// counters) and the answer names the step asked for; a step used as asked
// has no step_rounded_from.
func TestSeriesStepRounded(t *testing.T) {
	api := operator.New(func() (operator.App, error) { return newFakeApp(), nil })
	for _, tc := range []struct {
		query       string
		stepSeconds int64
		roundedFrom string
		resolution  string
	}{
		{"from=15m&step=10s", 60, "10s", "minute"},
		{"from=15m&step=1ms", 60, "1ms", "minute"},
		{"from=15m&step=1m", 60, "", "minute"},
		{"from=24h&step=90s", 120, "1m30s", "minute"},
		{"from=24h&step=1h", 3600, "", "hour"},
		{"from=72h&step=30m", 3600, "30m0s", "hour"}, // minutes are kept 48h
		{"from=72h&step=1h", 3600, "", "hour"},
		{"from=7d&step=1m", 3600, "1m0s", "hour"},
		{"from=72h&to=48h", 3600, "", "hour"}, // no step: the default is whole hours past the minute counters
		{"from=49h", 3600, "", "hour"},
	} {
		var s operator.SeriesAnswer
		if code := get(t, api, "/webhooks/stats/series?"+tc.query, &s); code != 200 {
			t.Errorf("%s: %d", tc.query, code)
			continue
		}
		if s.StepSeconds != tc.stepSeconds || s.StepRoundedFrom != tc.roundedFrom || s.Resolution != tc.resolution {
			t.Errorf("%s: step %d rounded from %q at %s, want %d from %q at %s", tc.query, s.StepSeconds, s.StepRoundedFrom, s.Resolution, tc.stepSeconds, tc.roundedFrom, tc.resolution)
		}
		if want := int(s.To.Sub(s.From)/(time.Duration(s.StepSeconds)*time.Second)) + 1; len(s.Points) < want-1 || len(s.Points) > want {
			t.Errorf("%s: %d points from %s to %s by %ds", tc.query, len(s.Points), s.From, s.To, s.StepSeconds)
		}
	}
}
