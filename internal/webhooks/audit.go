package webhooks

import (
	"context"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyevents"
	"go.uber.org/zap"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/spool"
)

// The audit trail and the Caddy events of an event's life.
//
// With the app's audit option (off by default), the logger webhooks.audit
// writes one Info line per lifecycle step (received, attempt, delivered,
// dead, retried, resolved, discarded, investigating, replayed, ignored,
// erased; paused and resumed for an operator's pause, with its source,
// destination, mode, reason, since, until and whether it ended by itself)
// with the event's source, ids, type and the id of the ingress request
// that accepted it, never a body, a header or a secret, so that a user can
// route it to a file of its own with Caddy's log config (include
// webhooks.audit).
//
// The events app gets webhook_dead, webhook_source_paused,
// webhook_source_resumed, webhook_breaker_open, webhook_breaker_closed,
// webhook_client_blocked, webhook_spool_started and webhook_spool_stopped,
// whose data carry the same kind of fields.

// Audit steps.
const (
	stepReceived      = "received"
	stepAttempt       = "attempt"
	stepDelivered     = "delivered"
	stepDead          = "dead"
	stepRetried       = "retried"
	stepResolved      = "resolved"
	stepDiscarded     = "discarded"
	stepInvestigating = "investigating"
	stepReplayed      = "replayed"
	stepIgnored       = "ignored"
	stepPaused        = "paused"
	stepResumed       = "resumed"
	// stepErased is an operator's erasure of an event (GDPR): its line
	// names the event and counts what was removed, never a body.
	stepErased = "erased"
	// stepSpooled follows received for an event kept in the node's spool
	// while its store was unreachable (storage redis spool).
	stepSpooled = "spooled"
)

// Caddy event names.
const (
	eventDead          = "webhook_dead"
	eventPaused        = "webhook_source_paused"
	eventResumed       = "webhook_source_resumed"
	eventBreakerOpen   = "webhook_breaker_open"
	eventBreakerClosed = "webhook_breaker_closed"
	eventClientBlocked = "webhook_client_blocked"
	eventSpoolStarted  = "webhook_spool_started"
	eventSpoolStopped  = "webhook_spool_stopped"
)

// eventFields are the audit fields of an event (a job: of its delivery);
// an accepted event fanned out names each of its destinations.
func eventFields(ev *storage.Event) []zap.Field {
	f := auditFields(ev.Source, ev.EventID, ev.ID, ev.Type, ev.Tenant, ev.RequestID)
	if len(ev.Deliveries) == 0 {
		return append(f, zap.String("destination", storage.DestinationOf(ev)))
	}
	names := make([]string, len(ev.Deliveries))
	for i, d := range ev.Deliveries {
		names[i] = storage.DestinationOf(&storage.Event{Destination: d.Destination})
	}
	return append(f, zap.Strings("destinations", names))
}

// entryFields are the audit fields of a DLQ entry's event.
func entryFields(e *storage.DLQEntry) []zap.Field {
	return append(auditFields(e.Source, e.EventID, e.ID, e.EventType, e.Tenant, e.RequestID),
		zap.String("destination", storage.DestinationOf(&storage.Event{Destination: e.Destination})))
}

// infoFields are the audit fields of an event as a store reports it.
func infoFields(info *storage.EventInfo) []zap.Field {
	return append(auditFields(info.Source, info.EventID, info.ID, info.EventType, info.Tenant, info.RequestID),
		zap.String("destination", storage.DestinationOf(&storage.Event{Destination: info.Destination})))
}

// auditFieldsCap is room for the most fields an audit line has (an
// attempt's: these six, its destination, five of its own and the step),
// so that the appends of a line never copy its fields to a larger array.
const auditFieldsCap = 13

// auditFields are the fields naming an event on every audit line.
func auditFields(source, eventID, id, typ, tenant, requestID string) []zap.Field {
	return append(make([]zap.Field, 0, auditFieldsCap),
		zap.String("source", source), zap.String("event_id", eventID), zap.String("id", id),
		zap.String("type", typ), zap.String("tenant", tenant), zap.String("request_id", requestID))
}

// audit writes the line of one step.
func (a *App) audit(step string, fields ...zap.Field) {
	if a.auditLog == nil {
		return
	}
	a.auditLog.Info(step, append(fields, zap.String("step", step))...)
}

// auditEntry writes the line of an operator's step on DLQ entry id,
// reading the entry for its event's fields (only the id when it cannot).
func (a *App) auditEntry(ctx context.Context, st storage.DeadLetters, step, id string, fields ...zap.Field) {
	if a.auditLog == nil {
		return
	}
	if e, err := st.DLQGet(ctx, id); err == nil {
		fields = append(entryFields(e), fields...)
	} else {
		fields = append([]zap.Field{zap.String("id", id)}, fields...)
	}
	a.audit(step, fields...)
}

// emit sends a Caddy event when the events app is there.
func (a *App) emit(name string, data map[string]any) {
	if a.events == nil {
		return
	}
	a.events.Emit(a.ctx, name, data)
}

// EmitClientBlocked tells the events app that a client of source was
// blocked after repeated signature failures.
func (a *App) EmitClientBlocked(source, clientIP string) {
	a.emit(eventClientBlocked, map[string]any{"source": source, "client_ip": clientIP})
}

// breakerChanged is the breakers' state-change hook: a Caddy event when an
// upstream's breaker opens or closes.
func (a *App) breakerChanged(upstream string, open bool) {
	name := eventBreakerClosed
	if open {
		name = eventBreakerOpen
	}
	a.emit(name, map[string]any{"upstream": upstream})
}

// provisionAudit sets up the audit logger (only with the audit option:
// without it every step's line is skipped before its fields are built)
// and the events app.
func (a *App) provisionAudit(ctx caddy.Context) error {
	a.ctx = ctx
	if a.Audit {
		a.auditLog = ctx.Logger().Named("audit")
	}
	v, err := ctx.App("events")
	if err != nil {
		return err
	}
	a.events, _ = v.(*caddyevents.App)
	return nil
}

// spoolChanged is the spool's hook: a Caddy event, and an alert when
// alerts are set, when this node starts spooling (its store unreachable,
// or a spool an earlier run left) and when its spool is moved into the
// store again. The event's data: the spool's directory, events (held at a
// start, moved at a stop), since (when spooling started) and, at a start,
// earlier.
func (a *App) spoolChanged(sp *spool.Spool, c spool.Change) {
	data := map[string]any{"spool": sp.Dir(), "events": c.Events, "since": c.Since}
	name := eventSpoolStopped
	if c.Spooling {
		name = eventSpoolStarted
		data["earlier"] = c.Earlier
	}
	a.emit(name, data)
	if a.alerter != nil {
		a.alerter.spoolChanged(c, time.Now())
	} else {
		spoolAlertStateOf(sp.Dir()).noteLocked(c)
	}
}
