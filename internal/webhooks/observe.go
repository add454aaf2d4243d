package webhooks

import (
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/hookline/hookline/dedupe"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/operator"
	"github.com/hookline/hookline/storage"
)

// What the app hears from the ingress and the workers: each answer and
// each delivery result fanned out, in one call, to the metrics, the stats,
// the alerts, the audit log and the L1 cache; and the tracer provider of
// Caddy's tracing, for the delivery spans.

// Observe counts one answer of source's ingress, in the metrics
// (received_total) and in the stats. outcome is "accepted", "duplicate",
// "handshake" or the answer's error code in lower case.
func (a *App) Observe(source, outcome string) {
	observeReceived(source, outcome)
	a.Count(source, outcome, 1)
}

// tracerBox holds a tracer provider in an atomic.Pointer.
type tracerBox struct{ tp trace.TracerProvider }

// seenTracer is the tracer provider of Caddy's tracing, as the last traced
// ingress request showed it. Process-wide, like that provider itself (one
// for every tracing handler): it survives reloads, so traced events queued
// before one still get their spans.
var seenTracer atomic.Pointer[tracerBox]

// UseTracerProvider is called by the ingress with the tracer provider of
// its request's recording span: the delivery attempts of traced events are
// spans of it.
func (a *App) UseTracerProvider(tp trace.TracerProvider) {
	if cur := seenTracer.Load(); cur == nil || cur.tp != tp {
		seenTracer.Store(&tracerBox{tp})
	}
}

// tracerProvider is the tracer provider the ingress saw, or nil.
func (a *App) tracerProvider() trace.TracerProvider {
	if b := seenTracer.Load(); b != nil {
		return b.tp
	}
	return nil
}

// ObserveIgnored counts an event that no destination of its source takes
// (answered 200 "ignored", not stored): as Observe(source, "ignored"), and
// in the audit log with the type that decided it.
func (a *App) ObserveIgnored(source, eventID, typ, tenant, requestID string) {
	a.Observe(source, "ignored")
	a.audit(stepIgnored, auditFields(source, eventID, "", typ, tenant, requestID)...)
}

// ObserveAccepted counts an accepted (stored) event: as Observe(source,
// "accepted") and by type in the stats. Its audit line is Accept's,
// written before its deliveries can start.
func (a *App) ObserveAccepted(ev *storage.Event) {
	a.Observe(ev.Source, "accepted")
	a.countType(ev.Source, "accepted", ev.Type)
	a.countTenant(ev.Source, "accepted", ev.Tenant)
}

// ObserveSignatureFailure counts an answer (outcome as for Observe) to a
// request whose signature check failed (f: why, when, from where): in
// received_total and signature_failures_total (by reason), in the stats,
// among the source's recent failures, and for the signature failure
// alert.
func (a *App) ObserveSignatureFailure(source, outcome string, f operator.SignatureFailure) {
	observeSignatureFailure(source, f.Reason)
	noteSignatureFailure(source, f)
	if a.alerter != nil {
		a.alerter.noteSignatureFailure(source, time.Now())
	}
	a.Observe(source, outcome)
}

// resultName is a delivery result's name in the metrics, the stats and
// the audit log ("" for a release, which is none of them).
func resultName(r storage.Result) string {
	if r == storage.Release {
		return ""
	}
	return r.String()
}

func (a *App) onResult(r delivery.Report) {
	if a.alerter != nil {
		a.alerter.noteResult(r)
	}
	result := resultName(r.Result)
	// a result is counted once: with its attempt, or, dead-lettered with
	// none (its payload did not open), on its own
	if result != "" && (r.Attempt != nil || r.Result == storage.Dead) {
		a.Count(r.Job.Source, result, 1)
		if r.Result != storage.Retry {
			a.countType(r.Job.Source, result, r.Job.Type)
			a.countDestination(r.Job.Source, result, storage.DestinationOf(&r.Job.Event))
			a.countTenant(r.Job.Source, result, r.Job.Tenant)
		}
		if r.Attempt == nil {
			metrics.deliveries.WithLabelValues(r.Job.Source, result).Inc()
		}
	}
	// the event's fields, built once for the attempt's line and the
	// step's after it: each line appends its own after them, in turn
	var fields []zap.Field
	if a.auditLog != nil {
		fields = eventFields(&r.Job.Event)
	}
	if r.Attempt != nil && result != "" {
		observeDelivery(r.Job.Source, result, r.Attempt.Duration)
		a.Count(r.Job.Source, "attempts", 1)
		a.countAttempt(r.Job.Source, result, r.Attempt)
		a.audit(stepAttempt, append(fields, zap.Int("attempt", r.Attempt.N), zap.String("result", result),
			zap.Int("status", r.Attempt.Status), zap.Duration("duration", r.Attempt.Duration), zap.String("error", r.Attempt.Error))...)
	}
	switch r.Result {
	case storage.Delivered:
		a.audit(stepDelivered, fields...)
	case storage.Dead:
		a.audit(stepDead, append(fields, zap.String("error", r.Error))...)
		a.emit(eventDead, map[string]any{"source": r.Job.Source, "event_id": r.Job.EventID, "id": r.Job.ID,
			"type": r.Job.Type, "tenant": r.Job.Tenant, "error": r.Error})
	}
	if !r.Job.Dedupe {
		return
	}
	status := r.Result.Status()
	if status != storage.StatusDelivered && status != storage.StatusDead {
		return
	}
	// the entry keeps the claim's end it was cached with (the window of
	// the config that accepted the event, not the current one's)
	a.seen.use(func(s *dedupe.Seen) {
		s.Finished(dedupe.Key(r.Job.Source, r.Job.EventID), status)
	})
}
