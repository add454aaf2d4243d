package verifiers

import (
	"crypto/sha256"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// Meta verifies webhooks from Meta's platforms (Facebook, WhatsApp,
// Instagram, Messenger): the X-Hub-Signature-256 header holds "sha256="
// and the lowercase hex HMAC-SHA256 of the raw body, keyed with the App
// Secret. Meta signs the body exactly as it sends it, with non-ASCII
// characters escaped as \uXXXX (lowercase hex); the check is on those
// received bytes, never on a decoded or re-serialized form. Several
// secrets mean rotation: any one may match. Meta signs no timestamp and
// sends no delivery id, so there is no replay window; deduplication uses
// the message id of a notification carrying one message, otherwise the
// exact bytes (see DefaultIDFrom).
//
// Meta checks the endpoint with a subscription handshake, answered at the
// edge and never queued: `GET ?hub.mode=subscribe&hub.verify_token=<token>
// &hub.challenge=<challenge>` gets 200 with the challenge as its text body
// when the token equals verify_token, and 403 otherwise (always 403 when
// no verify_token is configured).
//
// The module is registered as meta and, for the same scheme, under the
// names facebook, whatsapp and instagram.
type Meta struct {
	// SecretsConfig holds the App Secrets.
	SecretsConfig

	// VerifyToken is the token Meta sends in hub.verify_token during the
	// subscription handshake, as set in the app's webhook configuration;
	// placeholders are resolved when the module is provisioned, and it
	// must not resolve to nothing. Without it, every handshake is refused.
	VerifyToken string `json:"verify_token,omitempty"`

	keys     [][]byte
	hasToken bool
	token    [sha256.Size]byte
}

// MetaSignatureHeader is the header carrying Meta's signature.
const MetaSignatureHeader = "X-Hub-Signature-256"

// CaddyModule returns the Caddy module information.
func (Meta) CaddyModule() caddy.ModuleInfo {
	return moduleInfo[Meta]("webhooks.verifiers.meta")
}

// Provision resolves the secrets and the verify token.
func (m *Meta) Provision(ctx caddy.Context) error {
	var err error
	if m.keys, err = m.resolve(); err != nil {
		return err
	}
	m.hasToken = false
	if m.VerifyToken != "" {
		tok, err := resolveSetting("verify_token", m.VerifyToken)
		if err != nil {
			return err
		}
		m.token = tokenDigest([]byte(tok))
		m.hasToken = true
	}
	return nil
}

// Verify checks the request's signature over the raw body.
func (m *Meta) Verify(r *http.Request, body []byte, now time.Time) error {
	_, err := m.VerifyKey(r, body, now)
	return err
}

// VerifyKey is Verify, returning the position among the configured
// secrets of the one that matched (KeyVerifier).
func (m *Meta) VerifyKey(r *http.Request, body []byte, now time.Time) (int, error) {
	k, err := m.verifyKey(r, body, now)
	return m.keyPosition(k), err
}

// verifyKey checks the request, returning the position of the matching
// key among those in effect.
func (m *Meta) verifyKey(r *http.Request, body []byte, now time.Time) (int, error) {
	return checkPrefixedHMAC(r, MetaSignatureHeader, "sha256=", sha256.New, m.keys, EncodingHex, body)
}

// HandshakeGET answers Meta's subscription handshake. A GET without
// hub.mode is not a handshake and is left to the ingress.
func (m *Meta) HandshakeGET(w http.ResponseWriter, r *http.Request) bool {
	q := r.URL.Query()
	if !q.Has("hub.mode") {
		return false
	}
	challenge := q.Get("hub.challenge")
	switch {
	case !m.hasToken:
		handshakeRefuse(w, "no verify_token is configured for this webhook")
	case q.Get("hub.mode") != "subscribe" || challenge == "":
		handshakeRefuse(w, "not a subscription handshake (hub.mode=subscribe with hub.challenge)")
	case !equalTokenDigest([]byte(q.Get("hub.verify_token")), m.token):
		handshakeRefuse(w, "hub.verify_token does not match")
	default:
		handshakeText(w, challenge)
	}
	return true
}

// HandshakePOST does nothing: Meta has no handshake by POST.
func (*Meta) HandshakePOST(w http.ResponseWriter, r *http.Request, body []byte) bool {
	return false
}

// DefaultIDFrom returns, in order:
//
//   - WhatsApp: the id of the message (wamid) of a notification that
//     carries exactly one entry, one change and one message and no
//     statuses;
//   - Messenger and Instagram messaging: the mid of a notification that
//     carries exactly one entry and one messaging event, that event being
//     a message (not a read, delivery, reaction, postback or edit, which
//     name another message or none) that is not an Instagram unsend
//     (is_deleted, which repeats the mid of the message it deletes);
//   - otherwise a hash of the exact received bytes: status updates of one
//     message, read and delivery receipts, feed and comment changes and
//     batched notifications all differ in bytes, and Meta sends no
//     delivery id.
//
// The entry id names a page or a business account, never one
// notification, so it is not a default.
func (*Meta) DefaultIDFrom() []IDRule {
	return []IDRule{
		idJSON("entry.0.changes.0.value.messages.0.id").Unless(
			"entry.1", "entry.0.changes.1",
			"entry.0.changes.0.value.messages.1",
			"entry.0.changes.0.value.statuses"),
		idJSON("entry.0.messaging.0.message.mid").Unless(
			"entry.1", "entry.0.messaging.1",
			"entry.0.messaging.0.message.is_deleted"),
		idRawHash(),
	}
}

// UnmarshalCaddyfile sets up the scheme from the Caddyfile tokens after
// `verify` (the scheme name is meta or one of its aliases). Syntax:
//
//	meta [<secret>...] {
//		secret       <secret>...
//		verify_token <token>
//	}
//
// verify_token may appear once.
func (m *Meta) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return parseSecretsBlock(d, &m.Secrets, func(d *caddyfile.Dispenser, name string) (bool, error) {
		if name != "verify_token" {
			return false, nil
		}
		return true, oneArgOnce(d, &m.VerifyToken)
	})
}

// Facebook, WhatsApp and Instagram are the meta scheme registered under
// the names facebook, whatsapp and instagram (module IDs
// webhooks.verifiers.<name>): the same JSON fields, Caddyfile syntax
// (with their name as the scheme name) and behaviour as Meta.
type (
	Facebook  struct{ Meta }
	WhatsApp  struct{ Meta }
	Instagram struct{ Meta }
)

// CaddyModule returns the Caddy module information.
func (Facebook) CaddyModule() caddy.ModuleInfo {
	return moduleInfo[Facebook]("webhooks.verifiers.facebook")
}

// CaddyModule returns the Caddy module information.
func (WhatsApp) CaddyModule() caddy.ModuleInfo {
	return moduleInfo[WhatsApp]("webhooks.verifiers.whatsapp")
}

// CaddyModule returns the Caddy module information.
func (Instagram) CaddyModule() caddy.ModuleInfo {
	return moduleInfo[Instagram]("webhooks.verifiers.instagram")
}

// SecretQueryParams names hub.verify_token, the token Meta sends in the
// query of its subscription handshake (configured here or not: it is in
// the URI Caddy's access log records).
func (*Meta) SecretQueryParams() []string { return []string{"hub.verify_token"} }

// Interface guards
var (
	_ SecretQueryer     = (*Meta)(nil)
	_ handshakingScheme = (*Meta)(nil)
	_ handshakingScheme = (*Facebook)(nil)
	_ handshakingScheme = (*WhatsApp)(nil)
	_ handshakingScheme = (*Instagram)(nil)
)
