package verifiers

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// MSGraph verifies Microsoft Graph change notifications and lifecycle
// notifications delivered by webhook
// (https://learn.microsoft.com/graph/change-notifications-delivery-webhooks).
// Graph signs nothing: each notification of the JSON collection
// {"value":[{...,"clientState":"<secret>",...}, ...]} carries the
// clientState the subscription was created with. A request is verified
// when the body is such a collection with at least one notification and
// every notification's clientState equals one of the configured secrets
// (compared in constant time); a body that is no such collection, or a
// notification without clientState, is a format error (401
// INVALID_SIGNATURE_FORMAT) and any other clientState a mismatch (401
// UNAUTHORIZED). Several secrets mean rotation (or several subscriptions
// sharing one URL): each notification may match any one.
//
// The clientState is a bearer token, not a signature: the body is not
// authenticated beyond it, and it stays in the stored and forwarded body
// (use the webhooks app's encryption_key for the body at rest). Rich
// notifications' validationTokens (JWTs) are not checked here.
//
// Graph validates notificationUrl and lifecycleNotificationUrl when a
// subscription is created with an unsigned `POST ?validationToken=<token>`
// that must be answered within 10 seconds with 200, text/plain and the
// URL-decoded token. HandshakeUnsigned answers it before any signature
// check and never queues it; see validGraphToken for the tokens echoed.
//
// Graph sends no per-notification id that every notification carries (the
// changeNotification id is optional and absent from most documented
// notifications), and distinct notifications can be byte-identical: a
// subscription's reauthorizationRequired lifecycle notifications are sent
// again and again (every 15 minutes near expiry) with the same bytes, and
// so are two edits of one Teams message. So this scheme has no default
// id_from: every notification is accepted under a generated id and never
// deduplicated (a retry after a timeout reaches the upstream twice, with
// distinct Webhook-Id values).
type MSGraph struct {
	// SecretsConfig holds the clientState values of the subscriptions
	// that deliver to this source.
	SecretsConfig

	states [][sha256.Size]byte
}

// GraphValidationTokenParam is the query parameter of Graph's endpoint
// validation request.
const GraphValidationTokenParam = "validationToken"

// maxGraphValidationToken is the longest validationToken echoed. Graph's
// tokens are about 115 bytes ("Validation: Testing client application
// reachability for subscription Request-Id: <uuid>"); the docs call the
// format opaque, so a margin of four times that is allowed.
const maxGraphValidationToken = 512

// CaddyModule returns the Caddy module information.
func (MSGraph) CaddyModule() caddy.ModuleInfo {
	return moduleInfo[MSGraph]("webhooks.verifiers.msgraph")
}

// Provision resolves the clientState values and keeps their digests.
func (m *MSGraph) Provision(ctx caddy.Context) error {
	keys, err := m.resolve()
	if err != nil {
		return err
	}
	m.states = make([][sha256.Size]byte, len(keys))
	for i, k := range keys {
		m.states[i] = tokenDigest(k)
	}
	return nil
}

// Verify checks that every notification of the collection carries a
// configured clientState. Member names are matched exactly (value,
// clientState), unlike encoding/json's case-insensitive struct fields, so
// what is checked is what a JSON parser upstream reads.
func (m *MSGraph) Verify(r *http.Request, body []byte, now time.Time) error {
	_, err := m.VerifyKey(r, body, now)
	return err
}

// VerifyKey is Verify, returning the position among the configured
// secrets of the one that matched (KeyVerifier).
func (m *MSGraph) VerifyKey(r *http.Request, body []byte, now time.Time) (int, error) {
	k, err := m.verifyKey(r, body, now)
	return m.keyPosition(k), err
}

// verifyKey checks the request, returning the position of the matching
// key among those in effect.
func (m *MSGraph) verifyKey(r *http.Request, body []byte, now time.Time) (int, error) {
	var coll map[string]json.RawMessage
	if err := json.Unmarshal(body, &coll); err != nil {
		return 0, fmt.Errorf("%w: the body is not a JSON notification collection", ErrFormat)
	}
	var items []map[string]json.RawMessage
	if raw, ok := coll["value"]; !ok || json.Unmarshal(raw, &items) != nil || len(items) == 0 {
		return 0, fmt.Errorf("%w: the body has no array of notifications in value", ErrFormat)
	}
	ok, key := 1, 0
	for i, item := range items {
		var state string
		raw, has := item["clientState"]
		if !has || json.Unmarshal(raw, &state) != nil || state == "" {
			return 0, fmt.Errorf("%w: notification %d has no clientState", ErrFormat, i)
		}
		got := tokenDigest([]byte(state))
		match := 0
		for j := range m.states {
			eq := subtle.ConstantTimeCompare(got[:], m.states[j][:])
			if i == 0 {
				// the first notification's clientState is the one reported
				key = subtle.ConstantTimeSelect(eq&^match, j, key)
			}
			match |= eq
		}
		ok &= match
	}
	if ok != 1 {
		return 0, fmt.Errorf("%w: a notification's clientState is not a configured one", ErrMismatch)
	}
	return key, nil
}

// HandshakeUnsigned answers Graph's endpoint validation: a POST whose
// query has validationToken gets 200 text/plain with the URL-decoded
// token, whatever its body, when the token passes validGraphToken, and
// 401 INVALID_SIGNATURE_FORMAT otherwise; it is never queued. A POST
// without validationToken is left to Verify.
func (*MSGraph) HandshakeUnsigned(w http.ResponseWriter, r *http.Request, body []byte) bool {
	q := r.URL.Query()
	if !q.Has(GraphValidationTokenParam) {
		return false
	}
	tok := q.Get(GraphValidationTokenParam)
	if len(q[GraphValidationTokenParam]) != 1 || !validGraphToken(tok) {
		handshakeMalformed(w, fmt.Sprintf("validationToken must be one value of 1 to %d printable ASCII characters without < > & \" ' or `", maxGraphValidationToken))
		return true
	}
	handshakeText(w, tok)
	return true
}

// validGraphToken reports whether tok may be echoed: 1 to
// maxGraphValidationToken bytes of printable ASCII (space included), none
// of them < > & " ' or `. Graph's docs say it never sends a token holding
// HTML or JavaScript, and the answer is text/plain with nosniff, so the
// echo cannot carry markup, control characters or a long payload of the
// caller's choosing.
func validGraphToken(tok string) bool {
	if len(tok) == 0 || len(tok) > maxGraphValidationToken {
		return false
	}
	for i := 0; i < len(tok); i++ {
		switch c := tok[i]; {
		case c < 0x20 || c > 0x7e:
			return false
		case c == '<' || c == '>' || c == '&' || c == '"' || c == '\'' || c == '`':
			return false
		}
	}
	return true
}

// DefaultIDFrom returns no rule (see the type's documentation).
func (*MSGraph) DefaultIDFrom() []IDRule { return nil }

// DefaultTypeFrom returns the first notification's changeType (created,
// updated, deleted), else its lifecycleEvent (reauthorizationRequired,
// subscriptionRemoved, missed): Graph's changeNotification has exactly
// one of the two. A batch may mix subscriptions; the first names it.
func (*MSGraph) DefaultTypeFrom() []TypeRule {
	return types(idJSON("value.0.changeType"), idJSON("value.0.lifecycleEvent"))
}

// UnmarshalCaddyfile sets up the scheme from the Caddyfile tokens after
// `verify`. Syntax:
//
//	msgraph [<client_state>...] {
//		secret <client_state>...
//	}
func (m *MSGraph) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return parseSecretsBlock(d, &m.Secrets, nil)
}

// RedactBody shows a notification batch with every clientState member's
// value replaced by "[redacted]": it is the subscription's secret.
func (*MSGraph) RedactBody(body []byte) []byte { return RedactJSONMembers(body, "clientState") }

// Interface guards
var (
	_ BodyRedactor       = (*MSGraph)(nil)
	_ scheme             = (*MSGraph)(nil)
	_ HandshakerUnsigned = (*MSGraph)(nil)
	_ TypeDefaulter      = (*MSGraph)(nil)
)
