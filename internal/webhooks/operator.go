package webhooks

import (
	"context"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/hookline/hookline/dedupe"
	"github.com/hookline/hookline/internal/operator"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/verifiers"
)

// The app's side of the operator API (internal/operator): what it reads
// and the DLQ status changes. What puts work back in the queue is in
// redrive.go, pause in app.go, the counters in stats.go. Errors are the
// store's or wrap storage.ErrUnavailable.

// Available reports whether the store can be reached, opening it if
// needed: nil, or an error wrapping storage.ErrUnavailable.
func (a *App) Available() error {
	_, err := a.Store()
	return err
}

// ListDead lists the DLQ entries matching f, newest first, a page at a
// time (without payloads).
func (a *App) ListDead(ctx context.Context, f storage.DLQFilter) (storage.DLQPage, error) {
	st, err := a.Store()
	if err != nil {
		return storage.DLQPage{}, err
	}
	return st.DLQList(ctx, f)
}

// RedactPayload returns a stored payload of source as the operator API
// shows it: through the source's RedactBody when its scheme carries a
// secret in the body. A source no longer configured has no known scheme:
// every scheme's body redaction applies, so that a secret is never shown
// because its source was removed.
func (a *App) RedactPayload(source string, payload []byte) []byte {
	a.sourceMu.RLock()
	src, ok := a.sources[source]
	a.sourceMu.RUnlock()
	if !ok {
		for _, r := range bodyRedactors() {
			payload = r.RedactBody(payload)
		}
		return payload
	}
	if src.RedactBody == nil {
		return payload
	}
	return src.RedactBody(payload)
}

// bodyRedactors are the registered schemes that carry a secret in the
// body (verifiers.BodyRedactor), looked up once.
var bodyRedactors = sync.OnceValue(func() []verifiers.BodyRedactor {
	var out []verifiers.BodyRedactor
	for _, info := range caddy.GetModules("webhooks.verifiers") {
		if r, ok := info.New().(verifiers.BodyRedactor); ok {
			out = append(out, r)
		}
	}
	return out
})

// GetDead returns DLQ entry id with its payload, or storage.ErrDLQNotFound.
func (a *App) GetDead(ctx context.Context, id string) (*storage.DLQEntry, error) {
	st, err := a.Store()
	if err != nil {
		return nil, err
	}
	return st.DLQGet(ctx, id)
}

// SetDeadStatus moves DLQ entry id to investigating, resolved or
// discarded, with the operator's text (note, resolution or reason). One
// method for the three: they are the store's one transition, which
// storage.CheckDLQSettable rules; none puts work back in the queue.
func (a *App) SetDeadStatus(ctx context.Context, id string, status storage.DLQStatus, text string) error {
	st, err := a.Store()
	if err != nil {
		return err
	}
	if err := st.DLQSetStatus(ctx, id, status, text, time.Now()); err != nil {
		return err
	}
	if storage.ReleasesChain(status) {
		a.Notify() // a settled head of an ordered key lets the next go now
	}
	a.auditEntry(ctx, st, string(status), id, zap.String("note", text))
	return nil
}

// LookupEvent returns what the store knows of the event eventID of
// source, or storage.ErrNotFound.
func (a *App) LookupEvent(ctx context.Context, source, eventID string) (*storage.EventInfo, error) {
	st, err := a.Store()
	if err != nil {
		return nil, err
	}
	return st.Lookup(ctx, source, eventID)
}

// ListEvents lists the stored events matching f, newest first, a page at
// a time (the event browser).
func (a *App) ListEvents(ctx context.Context, f storage.EventFilter) (storage.EventPage, error) {
	st, err := a.Store()
	if err != nil {
		return storage.EventPage{}, err
	}
	return st.ListEvents(ctx, f)
}

// EraseEvent erases the event eventID of source (GDPR, storage.Eraser):
// everything stored of it goes, its claim stays. The L1 cache of this
// node answers its resends "erased" from now on (other nodes' caches keep
// the status they knew until their entry expires; the store answers
// "erased" to every node). An erased head of an ordered key lets the next
// delivery go: the workers are woken. The audit line (step "erased")
// names the event as it was found just before.
func (a *App) EraseEvent(ctx context.Context, source, eventID string) (storage.EraseResult, error) {
	st, err := a.Store()
	if err != nil {
		return storage.EraseResult{}, err
	}
	// what the audit line and the cache name it by: read before it goes
	info, _ := st.Lookup(ctx, source, eventID)
	res, err := st.Erase(ctx, source, eventID, time.Now())
	if err != nil {
		return res, err
	}
	a.Notify()
	providerID, typ, tenant, requestID := eventID, "", "", ""
	if info != nil {
		providerID, typ, tenant, requestID = info.EventID, info.EventType, info.Tenant, info.RequestID
	}
	a.seen.use(func(s *dedupe.Seen) {
		s.Update(dedupe.Key(source, providerID), storage.StatusErased, res.DedupeUntil)
	})
	a.audit(stepErased, append(auditFields(source, providerID, res.ID, typ, tenant, requestID),
		zap.Int("deliveries", res.Deliveries), zap.Int("dlq_entries", res.DLQEntries))...)
	return res, nil
}

// Interface guards
var _ operator.App = (*App)(nil)
