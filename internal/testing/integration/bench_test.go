package integration

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"

	"github.com/hookline/hookline/internal/testing/redistest"
)

// BenchmarkPaths compares, through one real Caddy in one run, plain
// `respond`, `reverse_proxy` to a local app, and webhook_ingress taking
// new signed 1 KiB events (verify + dedupe claim + fsynced enqueue +
// delivery to the same app) and duplicates (answered from the L1 cache).
// It reports req/s and latency percentiles; the ratios go in docs/benchmarks.md.
//
//	go test -run '^$' -bench Paths -benchtime 5s ./internal/testing/integration/
func BenchmarkPaths(b *testing.B) {
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK)
	}))
	defer app.Close()
	tester := caddytest.NewTester(b)
	tester.InitServer(fmt.Sprintf(`{
	admin localhost:2999
	http_port %d
	https_port 9443
	grace_period 1ns
	skip_install_trust
	webhooks {
		storage embedded %s
	}
}
http://localhost:%d {
	handle /respond {
		respond "ok" 200
	}
	handle /proxy {
		reverse_proxy %s
	}
	webhook_ingress /hooks/bench bench {
		verify hmac %s {
			header X-Signature
			prefix sha256=
		}
		forward_to %s/in
		id_from header Idempotency-Key
	}
}
`, httpPort, filepath.Join(b.TempDir(), "bench.db"), httpPort, app.URL, secret, app.URL), "caddyfile")

	body := bytes.Repeat([]byte("x"), 1000)
	body = append(append([]byte(`{"d":"`), body...), `"}`...)
	sig := sign(body)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}}
	var seq atomic.Int64
	base := fmt.Sprintf("http://localhost:%d", httpPort)

	cases := []struct {
		name, path string
		id         func() string
		want       int
	}{
		{"respond", "/respond", nil, 200},
		{"reverse_proxy", "/proxy", nil, 200},
		{"ingress_new", "/hooks/bench", func() string { return "evt-" + strconv.FormatInt(seq.Add(1), 10) }, 202},
		{"ingress_duplicate", "/hooks/bench", func() string { return "evt-dup" }, 200},
	}
	// the duplicate case needs its event stored once
	if resp, err := postBench(client, base+"/hooks/bench", body, sig, "evt-dup"); err != nil || resp != 202 {
		b.Fatalf("seeding duplicate: %d %v", resp, err)
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var mu sync.Mutex
			var lat []time.Duration
			b.SetParallelism(8) // 8 x GOMAXPROCS concurrent clients
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				local := make([]time.Duration, 0, 1024)
				for pb.Next() {
					id := ""
					if c.id != nil {
						id = c.id()
					}
					t0 := time.Now()
					status, err := postBench(client, base+c.path, body, sig, id)
					local = append(local, time.Since(t0))
					if err != nil || status != c.want {
						b.Errorf("%s: status %d, err %v", c.name, status, err)
						return
					}
				}
				mu.Lock()
				lat = append(lat, local...)
				mu.Unlock()
			})
			elapsed := time.Since(start)
			b.StopTimer()
			slices.Sort(lat)
			if n := len(lat); n > 0 {
				b.ReportMetric(float64(n)/elapsed.Seconds(), "req/s")
				b.ReportMetric(float64(lat[n/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(lat[n*99/100].Microseconds()), "p99-µs")
			}
		})
	}
}

func postBench(c *http.Client, url string, body []byte, sig, id string) (int, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Signature", sig)
	if id != "" {
		req.Header.Set("Idempotency-Key", id)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// BenchmarkIdleDeliveryLatency measures, on an idle system, the time from
// the 202 to the upstream receiving the event (p50 and p99 reported), on
// the embedded store and on Redis (a throwaway redis-server).
//
//	go test -run '^$' -bench IdleDeliveryLatency -benchtime 300x ./internal/testing/integration/
func BenchmarkIdleDeliveryLatency(b *testing.B) {
	b.Run("store=embedded", func(b *testing.B) { benchIdleLatency(b, "") })
	b.Run("store=redis", func(b *testing.B) {
		srv := redistest.Start(b)
		benchIdleLatency(b, fmt.Sprintf("storage redis {\n\t\t\taddress redis://%s/0\n\t\t\tkey_prefix idle%d\n\t\t}", srv.Addr, time.Now().UnixNano()))
	})
}

func benchIdleLatency(b *testing.B, storageLine string) {
	up := newUpstream(b)
	startCaddy(b, up, storageLine, "")
	body := []byte(`{"idle":true}`)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		id := "idle-" + strconv.Itoa(i) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		resp, _ := post(b, "/hooks/gen", body, signedHeaders(body, id))
		acked := time.Now()
		if resp.StatusCode != 202 {
			b.Fatalf("status %d", resp.StatusCode)
		}
		got := up.next(b, 5*time.Second)
		lat = append(lat, got.At.Sub(acked))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
