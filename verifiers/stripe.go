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

func init() {
	caddy.RegisterModule(Stripe{})
}

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
// shared/SIGNATURES.md, stricter than the Stripe SDKs (which check only the
// age): t must be within tolerance of the current time in either direction
// (default 5m; a difference exactly equal to the tolerance is accepted), so
// a timestamp too far in the future is refused too.
//
// Caddyfile syntax (the words after `verify`):
//
//	stripe [<secret>...] {
//		secret    <secret>...
//		tolerance <duration>
//	}
type Stripe struct {
	// The endpoint signing secrets ("whsec_..."). Placeholders such as
	// {env.NAME} and {file./path} are resolved when the module is
	// provisioned; secrets that resolve to nothing are ignored, but at
	// least one must remain.
	Secrets []string `json:"secrets,omitempty"`

	// How far the signing time may be from the current time, in either
	// direction. Default: 5m.
	Tolerance caddy.Duration `json:"tolerance,omitempty"`

	keys [][]byte
}

// StripeSignatureHeader is the header Stripe signs its events in.
const StripeSignatureHeader = "Stripe-Signature"

// CaddyModule returns the Caddy module information.
func (Stripe) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "webhooks.verifiers.stripe",
		New: func() caddy.Module { return new(Stripe) },
	}
}

// Provision resolves the secrets and fills in the default tolerance.
func (s *Stripe) Provision(ctx caddy.Context) error {
	if err := provisionTolerance(&s.Tolerance, DefaultTolerance); err != nil {
		return err
	}
	keys, err := ResolveSecrets(s.Secrets)
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
	s.keys = keys
	return nil
}

// Verify checks the request's signature and timestamp.
func (s *Stripe) Verify(r *http.Request, body []byte, now time.Time) error {
	raw := r.Header.Get(StripeSignatureHeader)
	if raw == "" {
		return errHeaderMissing(StripeSignatureHeader)
	}
	ts, sigs, err := parseStripeSignature(raw)
	if err != nil {
		return err
	}
	t, err := ParseUnixSeconds(ts)
	if err != nil {
		return fmt.Errorf("header %s, element t: %w", StripeSignatureHeader, err)
	}
	if !anyWellFormed(EncodingHex, sigs, sha256.Size) {
		return fmt.Errorf("%w: header %s has no v1 signature of %d hex bytes", ErrFormat, StripeSignatureHeader, sha256.Size)
	}
	if err := CheckTimestamp(t, now, time.Duration(s.Tolerance)); err != nil {
		return err
	}
	return CheckHMAC(sha256.New, s.keys, EncodingHex, sigs, []byte(ts), []byte("."), body)
}

// parseStripeSignature splits a Stripe-Signature header into its t value
// (as received) and its v1 values. Every element must be key=value with
// exactly one '='; t must appear exactly once; other keys are ignored.
func parseStripeSignature(h string) (ts string, v1 []string, err error) {
	haveT := false
	for rest, more := h, true; more; {
		var elem string
		elem, rest, more = strings.Cut(rest, ",")
		key, val, ok := strings.Cut(elem, "=")
		if !ok || strings.IndexByte(val, '=') >= 0 {
			return "", nil, fmt.Errorf("%w: header %s has an element without exactly one '='", ErrFormat, StripeSignatureHeader)
		}
		switch key {
		case "t":
			if haveT {
				return "", nil, fmt.Errorf("%w: header %s has more than one t element", ErrFormat, StripeSignatureHeader)
			}
			ts, haveT = val, true
		case "v1":
			v1 = append(v1, val)
		}
	}
	if !haveT {
		return "", nil, fmt.Errorf("%w: header %s has no t element", ErrFormat, StripeSignatureHeader)
	}
	return ts, v1, nil
}

// DefaultIDFrom returns the event id in the body (evt_...).
func (*Stripe) DefaultIDFrom() []IDRule {
	return []IDRule{idJSON("id")}
}

// UnmarshalCaddyfile sets up the scheme from Caddyfile tokens; the first
// token is the scheme name. Syntax: see the type's documentation.
func (s *Stripe) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return parseSecretsBlock(d, &s.Secrets, toleranceOption(&s.Tolerance))
}

// Interface guards
var (
	_ caddy.Provisioner     = (*Stripe)(nil)
	_ caddyfile.Unmarshaler = (*Stripe)(nil)
	_ Verifier              = (*Stripe)(nil)
	_ IDDefaulter           = (*Stripe)(nil)
)
