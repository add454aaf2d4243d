// Package ingress is the webhook_ingress HTTP handler: one webhook source
// at the edge. It verifies the signature on the raw bytes, finds the
// event's id, deduplicates, stores the event durably through the webhooks
// app and only then answers 202 (see docs/reference.md, "Answers to
// the provider"). Its end-to-end tests drive a real Caddy with every module.
package ingress

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/google/uuid"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/hookline/hookline/dedupe"
	"github.com/hookline/hookline/fields"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/operator"
	"github.com/hookline/hookline/internal/webhooks"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/verifiers"
)

func init() {
	caddy.RegisterModule(Ingress{})
}

// Defaults of a source.
const (
	DefaultMaxBody      = 1 << 20 // 1 MiB
	DefaultDedupeWindow = 24 * time.Hour
	// unavailableRetryAfter is the Retry-After (seconds) of a 503.
	unavailableRetryAfter = 5
)

// Ingress receives the webhooks of one source: it verifies the signature
// on the raw bytes, deduplicates by event ID, stores the event durably and
// only then answers 202. The webhooks app delivers it to forward_to.
// Caddyfile syntax: see UnmarshalCaddyfile.
type Ingress struct {
	// Source names the webhook source (at most 64 letters, digits, ".",
	// "_" and "-").
	Source string `json:"source"`
	// VerifyRaw is the signature scheme, a module in webhooks.verifiers named
	// by its "scheme" key (required; "none" accepts unsigned webhooks).
	VerifyRaw json.RawMessage `json:"verify,omitempty" caddy:"namespace=webhooks.verifiers inline_key=scheme"`
	// ForwardTo is the http(s) URL of the upstream events are POSTed to:
	// the destination named "default" (required unless Destinations has
	// one).
	ForwardTo string `json:"forward_to,omitempty"`
	// IDFrom are the rules that find the event ID, tried in order
	// (default: the scheme's).
	IDFrom []IDRule `json:"id_from,omitempty"`
	// TypeFrom are the rules that find the event type, tried in order (the
	// first that finds one wins); empty means the verifier's defaults. The
	// type is stored with the event, shown in the DLQ and stats and sent
	// upstream as X-Webhook-Event-Type.
	TypeFrom []TypeRule `json:"type_from,omitempty"`
	// TenantFrom are the rules that find the customer account an event
	// belongs to (header, json or form, with if/unless conditions), tried
	// in order; empty means the verifier's defaults (where its provider
	// names the account; none elsewhere). The tenant is stored with the
	// event, shown in the DLQ, lookups and audit lines, and sent upstream
	// as X-Webhook-Tenant.
	TenantFrom []IDRule `json:"tenant_from,omitempty"`
	// DedupeWindow is how long an event ID stays claimed, so that a
	// resend is answered as a duplicate (default 24h).
	DedupeWindow caddy.Duration `json:"dedupe_window,omitempty"`
	// MaxBody is the largest accepted body in bytes (default 1 MiB).
	MaxBody int64 `json:"max_body,omitempty"`
	// RequireJSON rejects bodies that are not JSON (400 INVALID_JSON).
	RequireJSON bool `json:"require_json,omitempty"`
	// AckStatus is the status of an accepted webhook: 202 (default), 200,
	// or 204 (with no body, as Discord's Webhook Events want).
	AckStatus int `json:"ack_status,omitempty"`
	// AllowIPs, when set, lists the client IPs and CIDR ranges allowed to
	// send to the source ({env.*} and {file.*} placeholders resolved in
	// Provision, each may hold several, space- or comma-separated); any other
	// client gets 403 FORBIDDEN before its body is read. The client IP is
	// Caddy's, so the server's trusted_proxies apply.
	AllowIPs []string `json:"allow_ips,omitempty"`
	// AcceptRate caps the requests the source accepts on this node: up to
	// Events at once, refilled at Events per Interval; beyond it, 429
	// RATE_LIMIT_EXCEEDED with Retry-After, before the body is read.
	AcceptRate *RateLimit `json:"accept_rate,omitempty"`
	// Schema is the path of a JSON Schema (draft 2020-12 unless its
	// "$schema" says otherwise) every verified body must satisfy: else 400
	// INVALID_PAYLOAD naming the first violation; never stored. A body that
	// is not JSON is 400 INVALID_JSON.
	Schema string `json:"schema,omitempty"`
	// BlockFailures answers 429 to a client IP failing signature checks
	// too often (default: 20 in 1m, blocked for 5m).
	BlockFailures *BlockConfig `json:"block_failures,omitempty"`
	// DeliveryOptions are the per-delivery options of forward_to, and of
	// each destination that does not set them again: timeout, retry,
	// rate_limit, sign_forwarded.
	DeliveryOptions
	// Destinations are more upstreams the source's events go to (fan-out),
	// each taking the events its filters select.
	Destinations []Destination `json:"destinations,omitempty"`

	verifier verifiers.Verifier
	// keyVerifier is the verifier when it tells which secret matched, each
	// match counted in secretMatches (nil: it does not)
	keyVerifier   verifiers.KeyVerifier
	secretMatches *webhooks.SecretMatches
	// the scheme's challenge requests, answered at the edge (nil: none)
	handshakeGET  verifiers.HandshakerGET
	handshakePOST verifiers.HandshakerPOST
	// the scheme's unsigned challenge POSTs, answered before the signature
	// check (nil: none)
	handshakeUnsigned verifiers.HandshakerUnsigned
	// secretHeaders carry the scheme's secret itself: dropped once verified
	secretHeaders []string
	guard         *guard
	guardKey      string                   // the key of guard in guardPool, released in Cleanup
	allow         *caddyhttp.MatchClientIP // allow_ips compiled (nil: every client)
	accept        *acceptLimiter           // accept_rate (nil: none)
	acceptKey     string                   // the key of accept in acceptPool, released in Cleanup
	schema        *jsonschema.Schema       // schema compiled (nil: none)
	app           *webhooks.App
	rules         []dedupe.Rule
	typeRules     []dedupe.TypeRule  // compiled type_from, or the verifier's defaults
	tenantRules   []dedupe.Rule      // compiled tenant_from, or the verifier's defaults
	routes        []route            // forward_to and the destinations, compiled
	filtered      bool               // some route filters: each event is routed
	allDeliveries []storage.Delivery // the deliveries of an event every route takes
	defaultURL    string             // the upstream of the destination named default ("": none)
	orderRule     *dedupe.Rule       // the rule of the order key of the ordered destinations (nil: none)
	log           *zap.Logger
	sourceValue   any // Source as an interface value, made once for the placeholder
}

// CaddyModule returns the Caddy module information.
func (Ingress) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.webhook_ingress",
		New: func() caddy.Module { return new(Ingress) },
	}
}

var sourceName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Provision loads the verifier, registers the source with the webhooks app
// and fills defaults.
func (h *Ingress) Provision(ctx caddy.Context) error {
	h.log = ctx.Logger()
	h.sourceValue = h.Source
	if !sourceName.MatchString(h.Source) {
		return fmt.Errorf("webhook_ingress: invalid source name %q (letters, digits, '.', '_', '-'; at most 64)", h.Source)
	}
	if h.VerifyRaw == nil {
		return fmt.Errorf("webhook_ingress %s: verify is required (write \"verify none\" to accept unsigned webhooks)", h.Source)
	}
	mod, err := ctx.LoadModule(h, "VerifyRaw")
	if err != nil {
		return fmt.Errorf("webhook_ingress %s: loading verifier: %v", h.Source, err)
	}
	h.verifier = mod.(verifiers.Verifier)
	h.keyVerifier, _ = mod.(verifiers.KeyVerifier)
	h.handshakeGET, _ = mod.(verifiers.HandshakerGET)
	h.handshakePOST, _ = mod.(verifiers.HandshakerPOST)
	h.handshakeUnsigned, _ = mod.(verifiers.HandshakerUnsigned)
	if sh, ok := mod.(verifiers.SecretHeaderer); ok {
		for _, name := range sh.SecretHeaders() {
			h.secretHeaders = append(h.secretHeaders, http.CanonicalHeaderKey(name))
		}
	}
	if gs, off := h.BlockFailures.settings(); !off {
		// shared across reloads: a reload must not lift a client's block
		g, key, err := acquireGuard(h.Source, gs)
		if err != nil {
			return fmt.Errorf("webhook_ingress %s: %v", h.Source, err)
		}
		h.guard, h.guardKey = g, key
	}

	if h.allow, err = compileAllowIPs(ctx, h.AllowIPs); err != nil {
		return fmt.Errorf("webhook_ingress %s: %v", h.Source, err)
	}
	if h.AcceptRate != nil {
		if !h.AcceptRate.valid() {
			return fmt.Errorf("webhook_ingress %s: accept_rate must be positive", h.Source)
		}
		if h.accept, h.acceptKey, err = acquireAcceptLimiter(h.Source, h.AcceptRate); err != nil {
			return fmt.Errorf("webhook_ingress %s: %v", h.Source, err)
		}
	}
	if h.Schema != "" {
		if h.schema, err = compileSchema(h.Schema); err != nil {
			return fmt.Errorf("webhook_ingress %s: %v", h.Source, err)
		}
	}
	if h.routes, h.orderRule, err = h.compileRoutes(); err != nil {
		return fmt.Errorf("webhook_ingress %s: %v", h.Source, err)
	}
	h.filtered, h.allDeliveries = routeAll(h.routes)
	for _, r := range h.routes {
		if r.name == storage.DefaultDestination {
			h.defaultURL = r.options.URL
		}
		if r.insecure {
			h.log.Warn("tls_insecure_skip_verify: the upstream's certificate is not checked; anyone on the path can receive these events",
				zap.String("source", h.Source), zap.String("destination", r.name))
		}
	}
	if h.MaxBody == 0 {
		h.MaxBody = DefaultMaxBody
	}
	if h.DedupeWindow == 0 {
		// the provider's retry horizon, where its scheme knows it
		h.DedupeWindow = caddy.Duration(DefaultDedupeWindow)
		if d, ok := h.verifier.(verifiers.DedupeWindower); ok {
			h.DedupeWindow = caddy.Duration(d.DefaultDedupeWindow())
		}
	}
	if h.AckStatus == 0 {
		h.AckStatus = http.StatusAccepted
	}
	// rules from JSON configs get the same checks as Caddyfile ones
	if h.rules, err = compileIDFrom(h.IDFrom); err != nil {
		return fmt.Errorf("webhook_ingress %s: %v", h.Source, err)
	}
	if d, ok := h.verifier.(verifiers.IDDefaulter); ok && len(h.rules) == 0 {
		if h.rules, err = checkedDefaults(d.DefaultIDFrom(), dedupe.Rule.Validate); err != nil {
			return fmt.Errorf("webhook_ingress %s: verifier default id_from: %v", h.Source, err)
		}
	}

	if h.typeRules, err = compileTypeFrom(h.TypeFrom); err != nil {
		return fmt.Errorf("webhook_ingress %s: %v", h.Source, err)
	}
	if d, ok := h.verifier.(verifiers.TypeDefaulter); ok && len(h.typeRules) == 0 {
		if h.typeRules, err = checkedDefaults(d.DefaultTypeFrom(), dedupe.TypeRule.Validate); err != nil {
			return fmt.Errorf("webhook_ingress %s: verifier default type_from: %v", h.Source, err)
		}
	}

	if h.tenantRules, err = compileTenantFrom(h.TenantFrom); err != nil {
		return fmt.Errorf("webhook_ingress %s: %v", h.Source, err)
	}
	if d, ok := h.verifier.(verifiers.TenantDefaulter); ok && len(h.tenantRules) == 0 {
		if h.tenantRules, err = checkedDefaults(d.DefaultTenantFrom(), dedupe.ValidateTenantRule); err != nil {
			return fmt.Errorf("webhook_ingress %s: verifier default tenant_from: %v", h.Source, err)
		}
	}

	appIface, err := ctx.App("webhooks")
	if err != nil {
		return fmt.Errorf("webhook_ingress %s: getting webhooks app: %v", h.Source, err)
	}
	h.app = appIface.(*webhooks.App)
	h.secretMatches = h.app.SecretMatches(h.Source)
	if err := h.app.RegisterSource(h.source()); err != nil {
		return fmt.Errorf("webhook_ingress %s: %v", h.Source, err)
	}
	return nil
}

// checkedDefaults returns a scheme's default rules once each passes the
// check a configured rule of its option gets.
func checkedDefaults[R any](rules []R, check func(R) error) ([]R, error) {
	for _, r := range rules {
		if err := check(r); err != nil {
			return nil, err
		}
	}
	return rules, nil
}

// source is the delivery side of the config (defaults filled in, the
// routes compiled) as the webhooks app delivers for it.
func (h *Ingress) source() *webhooks.Source {
	src := &webhooks.Source{Name: h.Source}
	if r, ok := h.verifier.(verifiers.BodyRedactor); ok {
		src.RedactBody = r.RedactBody
	}
	if q, ok := h.verifier.(verifiers.SecretQueryer); ok {
		src.SecretQueryParams = q.SecretQueryParams()
	}
	if sh, ok := h.verifier.(verifiers.SecretHeaderer); ok {
		src.SecretHeaders = sh.SecretHeaders()
	}
	if h.keyVerifier != nil {
		src.Secrets = h.keyVerifier.KeyCount()
	}
	src.Destinations = make(map[string]delivery.Options, len(h.routes))
	for _, r := range h.routes {
		src.Destinations[r.name] = r.options
	}
	return src
}

// WebhookSource names the source this handler receives
// (webhooks.WebhookSourcer: how the app finds the servers that serve it).
func (h *Ingress) WebhookSource() string { return h.Source }

// Cleanup releases the source's references on its shared guard and
// accept limiter.
func (h *Ingress) Cleanup() error {
	if h.guardKey != "" {
		key := h.guardKey
		h.guardKey = ""
		if _, err := guardPool.Delete(key); err != nil {
			return err
		}
	}
	if h.acceptKey != "" {
		key := h.acceptKey
		h.acceptKey = ""
		if _, err := acceptPool.Delete(key); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks the settings.
func (h *Ingress) Validate() error {
	if h.MaxBody < 1 {
		return fmt.Errorf("webhook_ingress %s: max_body must be positive", h.Source)
	}
	if h.AckStatus != http.StatusOK && h.AckStatus != http.StatusAccepted && h.AckStatus != http.StatusNoContent {
		return fmt.Errorf("webhook_ingress %s: ack_status must be 200, 202 or 204", h.Source)
	}
	if h.DedupeWindow < 0 || h.Timeout < 0 {
		return fmt.Errorf("webhook_ingress %s: durations must not be negative", h.Source)
	}
	if err := h.DeliveryOptions.check(); err != nil {
		return fmt.Errorf("webhook_ingress %s: %v", h.Source, err)
	}
	if !h.AcceptRate.valid() {
		return fmt.Errorf("webhook_ingress %s: accept_rate must be positive", h.Source)
	}
	for _, d := range h.Destinations {
		if err := d.DeliveryOptions.check(); err != nil {
			return fmt.Errorf("webhook_ingress %s: destination %s: %v", h.Source, d.Name, err)
		}
	}
	return nil
}

// ServeHTTP implements caddyhttp.MiddlewareHandler. It never calls next:
// the ingress answers every request of its route.
func (h *Ingress) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	if r.Method == http.MethodGet && h.handshakeGET != nil {
		if !h.allowed(r) { // a challenge is the provider's too
			h.forbid(w, r)
			return nil
		}
		if h.handshakeGET.HandshakeGET(w, r) {
			h.app.Observe(h.Source, "handshake")
			return nil
		}
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.reject(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed, "only POST is accepted", 0, nil)
		return nil
	}
	if p, ok := h.app.SourcePause(h.Source); ok && !p.Holds() {
		// refused: the provider keeps the event and sends it again later
		// (a hold accepts and stores as usual: its deliveries wait)
		h.reject(w, http.StatusServiceUnavailable, CodeServiceUnavailable,
			"this webhook source is paused; retry later", p.RetryAfter(time.Now()), nil)
		return nil
	}
	if !h.allowed(r) {
		h.forbid(w, r)
		return nil
	}
	now := time.Now()
	if h.accept != nil {
		if retryAfter, ok := h.accept.take(now); !ok {
			h.limitAccept(w, retryAfter)
			return nil
		}
	}
	if r.ContentLength > h.MaxBody {
		h.tooLarge(w)
		return nil
	}
	body, err := readBody(w, r, h.MaxBody)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			h.tooLarge(w)
			return nil
		}
		h.reject(w, http.StatusBadRequest, CodeBadRequest, "could not read the request body", 0, nil)
		return nil
	}

	// a provider's unsigned endpoint check (Graph's validationToken): the
	// scheme bounds what it echoes, and nothing is queued
	if h.handshakeUnsigned != nil && h.handshakeUnsigned.HandshakeUnsigned(w, r, body) {
		h.app.Observe(h.Source, "handshake")
		return nil
	}
	// verify first: a validly signed request is never refused by the guard
	// (behind a proxy every provider may share one client IP)
	if h.keyVerifier != nil {
		key, err := h.keyVerifier.VerifyKey(r, body, now)
		if err != nil {
			h.rejectSignature(w, clientIP(r), now, err)
			return nil
		}
		h.secretMatches.Observe(key, now)
	} else if err := h.verifier.Verify(r, body, now); err != nil {
		h.rejectSignature(w, clientIP(r), now, err)
		return nil
	}
	// the scheme's secret itself (GitLab's token): verified, now gone from
	// the request too, so no log, placeholder or later handler sees it
	for _, name := range h.secretHeaders {
		r.Header.Del(name)
	}
	// deliveries yield while many verified requests are in progress (a
	// flood of unsigned ones does not slow them)
	h.app.BeginIngest()
	defer h.app.EndIngest()
	if h.handshakePOST != nil && h.handshakePOST.HandshakePOST(w, r, body) {
		h.app.Observe(h.Source, "handshake")
		return nil
	}
	if (h.RequireJSON || h.schema != nil) && !json.Valid(body) {
		h.reject(w, http.StatusBadRequest, CodeInvalidJSON, "the body is not valid JSON", 0, nil)
		return nil
	}

	// one decoding of the body for the schema, the id, the type and the routing
	inspect := fields.Read(r, body)
	if h.schema != nil {
		if err := h.schema.Validate(inspect.JSON()); err != nil {
			field, reason := violation(err)
			h.reject(w, http.StatusBadRequest, CodeInvalidPayload, "the payload does not match the source's schema", 0,
				map[string]any{"field": field, "reason": reason})
			return nil
		}
	}
	// a paused tenant's event: refused (503: its provider sends it again
	// later) or held (stored in its tenant's own lanes, where its
	// deliveries wait); the tenant is looked for first only then
	tenant, tenantFound, apart := "", false, false
	if h.app.TenantsPaused(h.Source) {
		tenant, tenantFound = dedupe.FindTenant(inspect, h.tenantRules), true
		if p, ok := h.app.TenantPause(h.Source, tenant); ok {
			if !p.Holds() {
				h.reject(w, http.StatusServiceUnavailable, CodeServiceUnavailable,
					"this tenant's webhooks are paused; retry later", p.RetryAfter(time.Now()), nil)
				return nil
			}
			apart = true
		}
	}
	tenantOf := func() string {
		if !tenantFound {
			tenant, tenantFound = dedupe.FindTenant(inspect, h.tenantRules), true
		}
		return tenant
	}
	eventID := dedupe.FindID(inspect, h.rules, now)
	var typ string // found before the store only when a destination filters on it
	if h.filtered {
		typ = dedupe.FindType(inspect, h.typeRules)
	}
	deliveries, taken := h.route(typ, inspect)
	if !taken {
		h.ignore(w, r, eventID, typ, tenantOf())
		return nil
	}
	var accepted *storage.Event // the event stored, when it is not a duplicate
	deduped := eventID != ""    // an id was found: the event is deduplicated
	var idErr error
	// the event is built only past the L1 cache: a duplicate it knows
	// costs no id, no header copy and no store round trip
	res, err := h.app.Accept(r.Context(), h.Source, eventID, time.Duration(h.DedupeWindow), func() (*storage.Event, error) {
		id, err := uuid.NewV7()
		if err != nil {
			idErr = err
			return nil, err
		}
		sid := id.String()
		if !deduped {
			eventID = sid // never deduplicated
		}
		h.setPlaceholders(r, eventID)
		if !h.filtered {
			typ = dedupe.FindType(inspect, h.typeRules) // a duplicate's type is never read
		}
		// Apart: in its tenant's own lanes, held there by its pause, or
		// busy enough to hold back the other tenants of its share
		accepted = &storage.Event{
			ID:         sid,
			EventID:    eventID,
			Dedupe:     deduped,
			Source:     h.Source,
			Type:       typ,
			Tenant:     tenantOf(),
			Apart:      apart || h.app.BusyTenant(h.Source, tenantOf()),
			RequestID:  requestID(r),
			Trace:      h.traceOf(r),
			Deliveries: deliveries,
			Upstream:   h.defaultURL,
			Headers:    forwardHeaders(r.Header),
			Body:       body,
			ReceivedAt: now,
		}
		return accepted, nil
	})
	switch {
	case idErr != nil:
		h.reject(w, http.StatusInternalServerError, CodeInternalError, "internal error", 0, nil)
		return nil
	case err != nil:
		h.log.Error("storing webhook failed; answered 503",
			zap.String("source", h.Source), zap.String("event_id", eventID), zap.Error(err))
		h.reject(w, http.StatusServiceUnavailable, CodeServiceUnavailable,
			"the webhook could not be stored; retry later", unavailableRetryAfter, nil)
		return nil
	case res.Duplicate:
		if res.Cached {
			h.setPlaceholders(r, eventID)
		}
		h.answerDuplicate(w, eventID, res.Status)
		return nil
	}
	if ce := h.log.Check(zap.DebugLevel, "webhook accepted"); ce != nil {
		ce.Write(zap.String("source", h.Source), zap.String("event_id", eventID), zap.String("id", res.ID))
	}
	h.app.ObserveAccepted(accepted)
	h.answer(w, h.AckStatus, eventID, "Webhook accepted for processing", "")
	return nil
}

// ignore answers an event that no destination takes: 200, not stored,
// counted (received_total{outcome="ignored"}) and audited. An event whose
// provider gave no id is named by a generated one, as an accepted one is.
func (h *Ingress) ignore(w http.ResponseWriter, r *http.Request, eventID, typ, tenant string) {
	if eventID == "" {
		if id, err := uuid.NewV7(); err == nil {
			eventID = id.String()
		}
	}
	h.setPlaceholders(r, eventID)
	h.app.ObserveIgnored(h.Source, eventID, typ, tenant, requestID(r))
	h.answer(w, http.StatusOK, eventID, "Webhook ignored: no destination takes this event", "ignored")
}

// reject writes an error answer and counts it under its code.
func (h *Ingress) reject(w http.ResponseWriter, status int, code, msg string, retryAfter int, details map[string]any) {
	h.app.Observe(h.Source, outcomeOf(code))
	writeError(w, status, code, msg, retryAfter, details)
}

func (h *Ingress) tooLarge(w http.ResponseWriter) {
	h.reject(w, http.StatusRequestEntityTooLarge, CodePayloadTooLarge,
		"payload too large", 0, map[string]any{"max_bytes": h.MaxBody})
}

// setPlaceholders lets users log and route on the event:
// {http.webhook.id} and {http.webhook.source}.
func (h *Ingress) setPlaceholders(r *http.Request, eventID string) {
	if repl, ok := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer); ok {
		repl.Set("http.webhook.id", eventID)
		repl.Set("http.webhook.source", h.sourceValue)
	}
}

func (h *Ingress) answerDuplicate(w http.ResponseWriter, eventID string, status storage.Status) {
	h.app.Observe(h.Source, "duplicate")
	h.answer(w, http.StatusOK, eventID, "Webhook already processed", string(status.Reported()))
}

// rejectSignature answers a failed verification with the documented code,
// counts it, and starts a cool-down for a client failing too often. A
// client cooling down gets 429 + Retry-After instead of 401 for its failing
// requests (its validly signed ones never get here).
func (h *Ingress) rejectSignature(w http.ResponseWriter, ip string, now time.Time, err error) {
	status, code, msg := http.StatusUnauthorized, CodeUnauthorized, "signature verification failed"
	switch {
	case errors.Is(err, verifiers.ErrFormat):
		code, msg = CodeInvalidSignatureFormat, "signature header missing or malformed"
	case errors.Is(err, verifiers.ErrTimestamp):
		code, msg = CodeInvalidTimestamp, "timestamp outside the allowed tolerance"
	}
	// why, for the operator (the sender's answer stays the code's)
	failure := operator.SignatureFailure{At: now, Reason: verifiers.Reason(err), ClientIP: ip}
	if failure.Reason == verifiers.ReasonTimestamp {
		if skew, ok := verifiers.Skew(err); ok {
			s := int64(skew / time.Second)
			failure.SkewSeconds = &s
		}
	}
	if ce := h.log.Check(zap.InfoLevel, "webhook signature rejected"); ce != nil {
		skew := zap.Skip()
		if failure.SkewSeconds != nil {
			skew = zap.Int64("skew_seconds", *failure.SkewSeconds)
		}
		ce.Write(zap.String("source", h.Source), zap.String("code", code), zap.String("reason", failure.Reason), zap.String("client_ip", ip), skew)
	}
	retryAfter := 0
	if left, blocked := h.guard.blocked(ip, now); blocked {
		h.guard.fail(ip, now) // still counted: a client failing on keeps failing after the cool-down
		status, code, msg = http.StatusTooManyRequests, CodeRateLimitExceeded, "too many failed signature checks; retry later"
		retryAfter = int(left/time.Second) + 1
	} else if h.guard.fail(ip, now) {
		h.log.Warn("security: client blocked after repeated signature failures",
			zap.String("source", h.Source), zap.String("client_ip", ip),
			zap.Int("failures", h.guard.failures), zap.Duration("window", h.guard.window),
			zap.Duration("cooldown", h.guard.cooldown))
		h.app.EmitClientBlocked(h.Source, ip)
	}
	// one call: received_total, signature_failures_total, stats, alerts
	h.app.ObserveSignatureFailure(h.Source, outcomeOf(code), failure)
	writeError(w, status, code, msg, retryAfter, nil)
}

// traceOf is the W3C traceparent of the request's span when Caddy's
// tracing is on ("" otherwise); it tells the app which tracer provider
// Caddy's tracing uses, for the delivery spans.
func (h *Ingress) traceOf(r *http.Request) string {
	span := trace.SpanFromContext(r.Context())
	if !span.SpanContext().IsValid() {
		return ""
	}
	if span.IsRecording() {
		h.app.UseTracerProvider(span.TracerProvider())
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(r.Context(), c)
	return c["traceparent"]
}

// requestID is the request's id as Caddy's {http.request.uuid} has it
// (the same id any log or header using that placeholder shows).
func requestID(r *http.Request) string {
	if repl, ok := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer); ok {
		if v, ok := repl.GetString("http.request.uuid"); ok {
			return v
		}
	}
	return ""
}

func clientIP(r *http.Request) string {
	if ip, ok := caddyhttp.GetVar(r.Context(), caddyhttp.ClientIPVarKey).(string); ok && ip != "" {
		return ip
	}
	return r.RemoteAddr
}

// initialBodyBuffer caps the buffer allocated for a body before any of it
// arrived: a client announcing a large Content-Length and sending little
// must not make the server allocate what it announced.
const initialBodyBuffer = 64 << 10

// readBody reads at most max bytes; beyond that it returns an
// *http.MaxBytesError. With a known length, the buffer starts at
// min(Content-Length, initialBodyBuffer) and grows with what is received,
// never beyond Content-Length.
func readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	rd := http.MaxBytesReader(w, r.Body, max)
	n := r.ContentLength
	if n <= 0 {
		return io.ReadAll(rd)
	}
	n = min(n, max+1) // beyond max the reader fails anyway
	buf := make([]byte, 0, min(n, initialBodyBuffer))
	for int64(len(buf)) < n {
		if len(buf) == cap(buf) {
			// grow by doubling, bounded by the announced length
			buf = slices.Grow(buf, int(min(int64(cap(buf)), n-int64(len(buf)))))
		}
		end := int(min(int64(cap(buf)), n))
		m, err := rd.Read(buf[len(buf):end])
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			if int64(len(buf)) < n {
				return nil, io.ErrUnexpectedEOF
			}
			break
		}
		if err != nil {
			return nil, err
		}
	}
	// a body longer than its Content-Length is a client error
	var one [1]byte
	if m, _ := rd.Read(one[:]); m > 0 {
		return nil, errors.New("body longer than Content-Length")
	}
	return buf, nil
}

// hopHeaders are not forwarded (RFC 9110 7.6.1), like reverse_proxy.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
	"Content-Length",
}

// forwardHeaders copies the request headers the upstream should get.
func forwardHeaders(in http.Header) http.Header {
	out := in.Clone()
	for _, f := range in.Values("Connection") {
		for _, name := range strings.Split(f, ",") {
			if name = strings.TrimSpace(name); name != "" {
				out.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		out.Del(name)
	}
	return out
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Ingress)(nil)
	_ caddy.CleanerUpper          = (*Ingress)(nil)
	_ caddy.Validator             = (*Ingress)(nil)
	_ caddyhttp.MiddlewareHandler = (*Ingress)(nil)
	_ webhooks.WebhookSourcer     = (*Ingress)(nil)
)
