package delivery

import (
	"context"
	"net/http"
	"strconv"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookline/hookline/storage"
)

// Tracing. With Caddy's tracing directive on, the ingress stores the W3C
// traceparent of its request's span with the event (storage.Event.Trace)
// and hands the app the tracer provider Caddy's tracing uses
// (Config.Tracer). Each delivery attempt of such an event is then a span,
// child of the ingress request's span, across restarts and nodes; its HTTP
// request goes through otelhttp, which records the client span under it
// and sends traceparent upstream. Events without a trace go through the
// plain client: no tracing cost when tracing is off.

// tracerName names the tracer of the delivery spans.
const tracerName = "github.com/hookline/hookline/internal/delivery"

// traceContext is the propagation of stored traces: W3C traceparent.
var traceContext = propagation.TraceContext{}

// tracedClient is c with its transport wrapped by otelhttp (spans from the
// provider of the span in each request's context, traceparent injected).
func tracedClient(c *http.Client) *http.Client {
	cc := *c
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	cc.Transport = otelhttp.NewTransport(base, otelhttp.WithPropagators(traceContext))
	return &cc
}

// startAttempt starts the span of one attempt of job under the ingress
// request's span; span is nil when the job carries no trace or no tracer
// provider is known.
func (d *Dispatcher) startAttempt(ctx context.Context, job *storage.Job) (context.Context, trace.Span) {
	if job.Trace == "" || d.cfg.Tracer == nil {
		return ctx, nil
	}
	tp := d.cfg.Tracer()
	if tp == nil {
		return ctx, nil
	}
	parent := traceContext.Extract(ctx, propagation.MapCarrier{"traceparent": job.Trace})
	if !trace.SpanContextFromContext(parent).IsValid() {
		return ctx, nil
	}
	return tp.Tracer(tracerName).Start(parent, "webhook delivery",
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			attribute.String("webhook.source", job.Source),
			attribute.String("webhook.event_id", job.EventID),
			attribute.String("webhook.id", job.ID),
			attribute.String("webhook.event_type", job.Type),
			attribute.Int("webhook.attempt", len(job.Attempts)+1),
		))
}

// endAttempt ends an attempt's span with its outcome.
func endAttempt(span trace.Span, status int, err error) {
	if span == nil {
		return
	}
	if status != 0 {
		span.SetAttributes(attribute.Int("http.response.status_code", status))
	}
	switch {
	case err != nil:
		span.SetStatus(codes.Error, Describe(err))
	case status < 200 || status > 299:
		span.SetStatus(codes.Error, "upstream answered "+strconv.Itoa(status))
	}
	span.End()
}
