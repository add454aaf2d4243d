// Package verifiers holds hookline's signature schemes. Each scheme is a
// Caddy guest module in the namespace webhooks.verifiers (ID
// webhooks.verifiers.<scheme>), so a plugin can add its own. A scheme
// checks the exact received bytes; it never logs or returns a secret.
//
// A scheme implements Verifier, and IDDefaulter, SecretHeaderer,
// HandshakerGET, HandshakerPOST or HandshakerUnsigned as its provider
// needs. The schemes of
// this package share their configuration, one type per concept:
// SecretsConfig (the secrets), ToleranceConfig (the replay window) and
// TimestampedConfig (both), each read from the Caddyfile by one secrets
// block parser and compiled in Provision into the keys and the tolerance
// Verify uses; and their signature pieces (CheckHMAC, Encoding,
// ParseUnixSeconds, CheckTimestamp, ResolveSecrets).
package verifiers

import (
	"errors"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// init registers every scheme of the package, each under the module ID
// its CaddyModule returns (webhooks.verifiers.<name>; aliases such as svix
// or facebook are types of their own embedding the scheme).
func init() {
	for _, m := range []caddy.Module{
		Ed25519{}, GitHub{}, GitLab{}, HMAC{}, MSGraph{}, None{}, Paddle{}, SendGrid{}, Shopify{}, Slack{}, Stripe{}, Twilio{}, Zoom{},
		Meta{}, Facebook{}, WhatsApp{}, Instagram{},
		Standard{}, Svix{},
		Twitter{}, X{}, Twitch{},
	} {
		caddy.RegisterModule(m)
	}
}

// moduleInfo returns the Caddy module information of the scheme T,
// registered under id.
func moduleInfo[T any, P interface {
	*T
	caddy.Module
}](id caddy.ModuleID) caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: id, New: func() caddy.Module { return P(new(T)) }}
}

// Verifier checks one request. body is the exact raw body (already limited
// to max_body). now is the time to check timestamps against. It returns nil
// when the request is authentic, or an error wrapping one of ErrFormat,
// ErrMismatch or ErrTimestamp. Error texts must not contain secrets or
// computed signatures.
type Verifier interface {
	Verify(r *http.Request, body []byte, now time.Time) error
}

// KeyVerifier is implemented by schemes that can tell which of their
// configured secrets verified a request, so that an operator rotating a
// secret sees when the old one stops matching. VerifyKey is Verify that
// also returns, when the request is authentic, the position of the secret
// that matched among the scheme's configured secrets (0 for the first; one
// whose placeholder resolved to nothing keeps its place, so positions do
// not move when an optional {env.OLD_SECRET} is left unset), and KeyCount
// how many are configured. Every scheme of this package with secrets
// implements it.
type KeyVerifier interface {
	Verifier
	VerifyKey(r *http.Request, body []byte, now time.Time) (key int, err error)
	KeyCount() int
}

// IDDefaulter is implemented by schemes that know where their provider puts
// the event ID. DefaultIDFrom returns the id_from rules the ingress uses
// when the source sets none, tried in order (see IDRule: header, json and
// form rules, raw_hash, each with optional conditions on the JSON body).
//
// A default may fail to merge two deliveries of one event (the upstream
// then sees a rare duplicate) but must never give two distinct events the
// same id: the second would be answered "already processed" and dropped.
// A field naming a page, an account, a message or a customer rather than
// this one notification is never a default; where the provider sends no
// id for the notification, raw_hash (a hash of the exact received bytes)
// is.
type IDDefaulter interface {
	DefaultIDFrom() []IDRule
}

// SecretHeaderer is implemented by schemes whose provider sends the
// configured secret itself in a request header (GitLab's X-Gitlab-Token),
// rather than a signature computed with it. The ingress drops those
// headers once the request is verified, before the event is stored, so
// the secret is never stored, shown or forwarded to the upstream. Header
// names are case-insensitive.
type SecretHeaderer interface {
	SecretHeaders() []string
}

// SecretQueryer is implemented by schemes whose provider sends a secret in
// the query string of a request it makes (Meta's hub.verify_token in its
// subscription handshake). No handler can keep it out of Caddy's access
// log, which records the URI before any handler runs: the log's own
// filter must, and the webhooks app warns at load when a server logs
// access for such a source without one.
type SecretQueryer interface {
	SecretQueryParams() []string
}

// BodyRedactor is implemented by schemes whose secret travels inside the
// body (Microsoft Graph's clientState, a bearer token in every
// notification): RedactBody returns the body as the admin API, the CLI and
// the dashboard show it, each secret replaced by "[redacted]". The stored
// and forwarded bytes are never changed: the upstream gets them exactly.
type BodyRedactor interface {
	RedactBody(body []byte) []byte
}

// scheme is what every keyed scheme of this package is: a Caddy module
// that reads its Caddyfile syntax, provisions itself, verifies requests
// and knows its default id rules. Its interface guards assert it.
type scheme interface {
	caddy.Module
	caddy.Provisioner
	caddyfile.Unmarshaler
	KeyVerifier
	IDDefaulter
}

// handshakingScheme is a scheme that also answers its provider's
// handshakes.
type handshakingScheme interface {
	scheme
	Handshaker
}

// The three ways a signature check fails, mapped by the ingress to the
// documented 401 codes.
var (
	// ErrFormat: signature header missing or unparsable (INVALID_SIGNATURE_FORMAT).
	ErrFormat = errors.New("signature missing or malformed")
	// ErrMismatch: no configured secret produces the signature (UNAUTHORIZED).
	ErrMismatch = errors.New("signature does not match")
	// ErrTimestamp: the signed timestamp is outside the tolerance (INVALID_TIMESTAMP).
	ErrTimestamp = errors.New("timestamp outside tolerance")
)

// errHeaderMissing is the error of a request without the header name (or
// with it empty): a format error (ErrFormat).
func errHeaderMissing(name string) error {
	return &reasonError{base: ErrFormat, mark: errMissing, msg: "header " + name + " missing"}
}
