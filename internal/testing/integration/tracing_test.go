package integration

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpCollector is a loopback OTLP/HTTP trace receiver standing in for the
// user's collector.
type otlpCollector struct {
	*httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span
}

func newOTLPCollector(t *testing.T) *otlpCollector {
	c := &otlpCollector{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			t.Errorf("collector: %v", err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				c.spans = append(c.spans, ss.Spans...)
			}
		}
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(nil)
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *otlpCollector) find(name string, traceID []byte) []*tracepb.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range c.spans {
		if strings.Contains(s.Name, name) && string(s.TraceId) == string(traceID) {
			out = append(out, s)
		}
	}
	return out
}

// TestDeliveryTracing: with Caddy's tracing on, each delivery attempt is a
// span under the ingress request's span (exported to a real OTLP
// receiver), its HTTP request a client span under it, and the upstream
// gets that client span's traceparent; a retry is another attempt span of
// the same trace.
func TestDeliveryTracing(t *testing.T) {
	col := newOTLPCollector(t)
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", col.URL+"/v1/traces")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	up := newUpstream(t)
	up.setRespond(func(n int, w http.ResponseWriter) {
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	startCaddy(t, up, "", "tracing {\n\t\tspan ingress\n\t}")

	const traceID, clientSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	body := []byte(`{"traced":1}`)
	h := signedHeaders(body, "tr-1")
	h["traceparent"] = "00-" + traceID + "-" + clientSpan + "-01"
	post(t, "/hooks/gen", body, h)
	var upstreamSpans []string
	for range 2 { // the first attempt fails (503), the retry succeeds
		tp := up.next(t, 5*time.Second).Header.Get("traceparent")
		parts := strings.Split(tp, "-")
		if len(parts) != 4 || parts[1] != traceID || parts[2] == clientSpan {
			t.Fatalf("upstream traceparent %q, want trace %s and a span of hookline's", tp, traceID)
		}
		upstreamSpans = append(upstreamSpans, parts[2])
	}

	tid, _ := hex.DecodeString(traceID)
	var server, attempts, clients []*tracepb.Span
	waitFor(t, func() bool {
		server, attempts, clients = col.find("ingress", tid), col.find("webhook delivery", tid), col.find("HTTP POST", tid)
		return len(server) == 1 && len(attempts) == 2 && len(clients) == 2
	})
	for _, a := range attempts {
		if string(a.ParentSpanId) != string(server[0].SpanId) {
			t.Errorf("attempt span's parent %x, want the ingress span %x", a.ParentSpanId, server[0].SpanId)
		}
	}
	for i, c := range clients {
		if string(c.ParentSpanId) != string(attempts[0].SpanId) && string(c.ParentSpanId) != string(attempts[1].SpanId) {
			t.Errorf("client span %d's parent %x is no attempt span", i, c.ParentSpanId)
		}
		if got := hex.EncodeToString(c.SpanId); got != upstreamSpans[0] && got != upstreamSpans[1] {
			t.Errorf("client span %s is not what the upstream got (%v)", got, upstreamSpans)
		}
	}
}
