package delivery

import (
	"net/http"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookline/hookline/storage"
)

// TestDeliveryAttemptSpans: a job carrying a trace is delivered under an
// attempt span whose parent is the stored span, with the HTTP client span
// under it and its traceparent upstream; a job without one, or with no
// tracer provider known, goes through untraced (no traceparent added).
func TestDeliveryAttemptSpans(t *testing.T) {
	const parentTrace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	var provider trace.TracerProvider = tp

	st := newStore(t)
	up := newUpstream(t, status(http.StatusOK))
	reports := make(chan Report, 10)
	startDispatcher(t, Config{
		Store:    st,
		Targets:  targetsOf(map[string]*Target{"s": {URL: up.URL, Timeout: time.Second, Policy: fastPolicy(1)}}),
		OnResult: reportsTo(reports),
		Tracer:   func() trace.TracerProvider { return provider },
	})
	enqueue(t, st, storage.Event{EventID: "traced", Source: "s", Type: "t.x", Trace: parentTrace, Body: []byte("{}"), ReceivedAt: time.Now()})
	nextReport(t, reports, 5*time.Second)
	got := up.requests()[0].header.Get("traceparent")
	if !strings.HasPrefix(got, "00-4bf92f3577b34da6a3ce929d0e0e4736-") || strings.Contains(got, "00f067aa0ba902b7") {
		t.Fatalf("upstream traceparent %q, want a span of hookline's in the stored trace", got)
	}
	spans := rec.Ended()
	var attempt, client sdktrace.ReadOnlySpan
	for _, s := range spans {
		switch {
		case s.Name() == "webhook delivery":
			attempt = s
		case s.SpanKind() == trace.SpanKindClient:
			client = s
		}
	}
	if attempt == nil || client == nil {
		t.Fatalf("spans %v, want an attempt span and a client span", spans)
	}
	if attempt.Parent().SpanID().String() != "00f067aa0ba902b7" || client.Parent().SpanID() != attempt.SpanContext().SpanID() {
		t.Errorf("attempt's parent %s, client's parent %s (attempt %s)", attempt.Parent().SpanID(), client.Parent().SpanID(), attempt.SpanContext().SpanID())
	}
	if !strings.Contains(got, client.SpanContext().SpanID().String()) {
		t.Errorf("upstream traceparent %q is not the client span %s", got, client.SpanContext().SpanID())
	}

	// untraced: no trace stored, or no provider known
	enqueue(t, st, storage.Event{EventID: "plain", Source: "s", Body: []byte("{}"), ReceivedAt: time.Now()})
	nextReport(t, reports, 5*time.Second)
	provider = nil
	enqueue(t, st, storage.Event{EventID: "no-provider", Source: "s", Trace: parentTrace, Body: []byte("{}"), ReceivedAt: time.Now()})
	nextReport(t, reports, 5*time.Second)
	for _, r := range up.requests()[1:] {
		if tp := r.header.Get("traceparent"); tp != "" {
			t.Errorf("untraced delivery sent traceparent %q", tp)
		}
	}
	if n := len(rec.Ended()); n != len(spans) {
		t.Errorf("%d spans after untraced deliveries, want still %d", n, len(spans))
	}
}
