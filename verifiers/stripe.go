package verifiers

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// Stripe verifies Stripe webhook events. The Stripe-Signature header is a
// comma-separated list of key=value elements, such as
// "t=1700000000,v1=<hex>,v1=<hex>,v0=<hex>": t is the signing time in Unix
// seconds and each v1 is the lowercase hex HMAC-SHA256 of t + "." + the
// raw body, keyed with the UTF-8 bytes of the whole endpoint secret
// ("whsec_..." as shown by Stripe, not base64-decoded). The request is
// authentic when any v1 signature matches any configured secret: Stripe
// sends one v1 per active secret while a rolled secret is still valid, and
// several configured secrets mean rotation on our side. Every other scheme
// (v0 is a fake test-mode signature) is ignored, so a header with no v1
// signature is refused.
//
// The header is parsed strictly, like stripe-go: an element without
// exactly one '=' makes the whole header malformed, and so does a missing,
// repeated or non-numeric t. The timestamp check is the gateway policy of
// docs/signatures.md, stricter than the Stripe SDKs (which check only the
// age): t must be within tolerance of the current time in either direction
// (default 5m; a difference exactly equal to the tolerance is accepted), so
// a timestamp too far in the future is refused too.
//
// Providers that sign in Stripe's format under another header name
// (Calendly-Webhook-Signature, Mux-Signature) are verified by setting
// header; their bodies are not Stripe events, so the default id is then
// none (set id_from to the provider's event id).
type Stripe struct {
	// TimestampedConfig holds the endpoint signing secrets ("whsec_...",
	// used as they are, not base64-decoded) and the tolerance (default 5m).
	TimestampedConfig

	// Header is the request header carrying the signature. Default:
	// Stripe-Signature.
	Header string `json:"header,omitempty"`

	keys      [][]byte
	tolerance time.Duration
	header    string
}

// StripeSignatureHeader is the header Stripe signs its events in.
const StripeSignatureHeader = "Stripe-Signature"

// CaddyModule returns the Caddy module information.
func (Stripe) CaddyModule() caddy.ModuleInfo {
	return moduleInfo[Stripe]("webhooks.verifiers.stripe")
}

// Provision resolves the secrets and fills in the default tolerance. A
// secret with whitespace in it is refused.
func (s *Stripe) Provision(ctx caddy.Context) error {
	keys, tol, err := s.compile(DefaultTolerance)
	if err != nil {
		return err
	}
	for _, k := range keys {
		// as stripe-node: whitespace is a copy-and-paste mistake, never
		// part of a Stripe secret
		if bytes.ContainsFunc(k, unicode.IsSpace) {
			return errors.New("a stripe secret contains whitespace")
		}
	}
	s.keys, s.tolerance = keys, tol
	s.header = s.Header
	if s.header == "" {
		s.header = StripeSignatureHeader
	}
	return nil
}

// Verify checks the request's signature and timestamp.
func (s *Stripe) Verify(r *http.Request, body []byte, now time.Time) error {
	_, err := s.VerifyKey(r, body, now)
	return err
}

// VerifyKey is Verify, returning the position among the configured
// secrets of the one that matched (KeyVerifier).
func (s *Stripe) VerifyKey(r *http.Request, body []byte, now time.Time) (int, error) {
	k, err := s.verifyKey(r, body, now)
	return s.keyPosition(k), err
}

// verifyKey checks the request, returning the position of the matching
// key among those in effect.
func (s *Stripe) verifyKey(r *http.Request, body []byte, now time.Time) (int, error) {
	raw := r.Header.Get(s.header)
	if raw == "" {
		return 0, errHeaderMissing(s.header)
	}
	ts, sigs, err := parseStripeSignature(s.header, raw)
	if err != nil {
		return 0, err
	}
	t, err := ParseUnixSeconds(ts)
	if err != nil {
		return 0, fmt.Errorf("header %s, element t: %w", s.header, err)
	}
	if !anyWellFormed(EncodingHex, sigs, sha256.Size) {
		return 0, fmt.Errorf("%w: header %s has no v1 signature of %d hex bytes", ErrFormat, s.header, sha256.Size)
	}
	if err := CheckTimestamp(t, now, s.tolerance); err != nil {
		return 0, err
	}
	return MatchHMAC(sha256.New, s.keys, EncodingHex, sigs, []byte(ts), []byte("."), body)
}

// parseStripeSignature splits a Stripe-Signature header (named name) into its t value
// (as received) and its v1 values. Every element must be key=value with
// exactly one '='; t must appear exactly once; other keys are ignored.
func parseStripeSignature(name, h string) (ts string, v1 []string, err error) {
	haveT := false
	for rest, more := h, true; more; {
		var elem string
		elem, rest, more = strings.Cut(rest, ",")
		key, val, ok := strings.Cut(elem, "=")
		if !ok || strings.IndexByte(val, '=') >= 0 {
			return "", nil, fmt.Errorf("%w: header %s has an element without exactly one '='", ErrFormat, name)
		}
		switch key {
		case "t":
			if haveT {
				return "", nil, fmt.Errorf("%w: header %s has more than one t element", ErrFormat, name)
			}
			ts, haveT = val, true
		case "v1":
			v1 = append(v1, val)
		}
	}
	if !haveT {
		return "", nil, fmt.Errorf("%w: header %s has no t element", ErrFormat, name)
	}
	return ts, v1, nil
}

// DefaultIDFrom returns the event id in the body (evt_...), and no rule
// when header names another provider's header (its body is not a Stripe
// event).
func (s *Stripe) DefaultIDFrom() []IDRule {
	if s.otherProvider() {
		return nil
	}
	return []IDRule{idJSON("id")}
}

// otherProvider reports whether the scheme reads Stripe's format under
// another provider's header (Calendly, Mux): Stripe's defaults (its id
// rule, its retry horizon) are then not that provider's.
func (s *Stripe) otherProvider() bool {
	return s.Header != "" && !strings.EqualFold(s.Header, StripeSignatureHeader)
}

// UnmarshalCaddyfile sets up the scheme from the Caddyfile tokens after
// `verify`. Syntax:
//
//	stripe [<secret>...] {
//		secret    <secret>...
//		tolerance <duration>
//		header    <name>
//	}
//
// header may appear once.
func (s *Stripe) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	tol := s.ToleranceConfig.option()
	return parseSecretsBlock(d, &s.Secrets, func(d *caddyfile.Dispenser, name string) (bool, error) {
		if name == "header" {
			return true, oneArgOnce(d, &s.Header)
		}
		return tol(d, name)
	})
}

// Interface guards
var _ scheme = (*Stripe)(nil)
