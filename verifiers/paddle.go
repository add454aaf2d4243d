package verifiers

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// Paddle verifies Paddle Billing webhooks: the Paddle-Signature header is
// `ts=<unix seconds>;h1=<hex>[;h1=<hex>...]`, and each h1 is the lowercase
// hex HMAC-SHA256 of ts + ":" + the raw body, keyed with the notification
// destination's endpoint secret key (the whole pdl_ntfset_... string).
// The request is accepted when any h1 matches for any configured secret
// (several secrets mean rotation); elements with other names, such as h2,
// are ignored. An element without "=", an empty value, or a repeated ts is
// a malformed header.
//
// The timestamp check is the policy of docs/signatures.md,
// stricter than Paddle's Node SDK (which checks only the age): ts is
// refused when it is more than tolerance before or after the current time
// (a difference exactly equal to the tolerance is accepted), so a
// timestamp too far in the future is refused too.
type Paddle struct {
	// TimestampedConfig holds the endpoint secret keys (the whole
	// pdl_ntfset_... strings) and the tolerance (default 5s, as in
	// Paddle's SDKs).
	TimestampedConfig

	keys      [][]byte
	tolerance time.Duration
}

// PaddleSignatureHeader is the header carrying Paddle's signature.
const PaddleSignatureHeader = "Paddle-Signature"

// DefaultPaddleTolerance is Paddle's own tolerance.
const DefaultPaddleTolerance = 5 * time.Second

// CaddyModule returns the Caddy module information.
func (Paddle) CaddyModule() caddy.ModuleInfo {
	return moduleInfo[Paddle]("webhooks.verifiers.paddle")
}

// Provision resolves the secrets and fills in the default tolerance.
func (p *Paddle) Provision(ctx caddy.Context) (err error) {
	p.keys, p.tolerance, err = p.compile(DefaultPaddleTolerance)
	return err
}

// Verify checks the request's timestamp and signatures.
func (p *Paddle) Verify(r *http.Request, body []byte, now time.Time) error {
	_, err := p.VerifyKey(r, body, now)
	return err
}

// VerifyKey is Verify, returning the position among the configured
// secrets of the one that matched (KeyVerifier).
func (p *Paddle) VerifyKey(r *http.Request, body []byte, now time.Time) (int, error) {
	k, err := p.verifyKey(r, body, now)
	return p.keyPosition(k), err
}

// verifyKey checks the request, returning the position of the matching
// key among those in effect.
func (p *Paddle) verifyKey(r *http.Request, body []byte, now time.Time) (int, error) {
	raw := r.Header.Get(PaddleSignatureHeader)
	if raw == "" {
		return 0, errHeaderMissing(PaddleSignatureHeader)
	}
	ts, sigs, err := parsePaddleSignature(raw)
	if err != nil {
		return 0, err
	}
	t, err := ParseUnixSeconds(ts)
	if err != nil {
		return 0, fmt.Errorf("header %s: %w", PaddleSignatureHeader, err)
	}
	if err := CheckTimestamp(t, now, p.tolerance); err != nil {
		return 0, err
	}
	return MatchHMAC(sha256.New, p.keys, EncodingHex, sigs, []byte(ts), []byte{':'}, body)
}

// parsePaddleSignature splits a Paddle-Signature header into its ts value
// and its h1 values. It fails, with an error wrapping ErrFormat, when an
// element has no "=" or an empty value, when ts is missing or repeated, or
// when there is no h1.
func parsePaddleSignature(raw string) (ts string, h1 []string, err error) {
	seenTS := false
	for elem := range strings.SplitSeq(raw, ";") {
		k, v, ok := strings.Cut(elem, "=")
		if !ok || v == "" {
			return "", nil, fmt.Errorf("%w: header %s has an element that is not name=value", ErrFormat, PaddleSignatureHeader)
		}
		switch k {
		case "ts":
			if seenTS {
				return "", nil, fmt.Errorf("%w: header %s has more than one ts", ErrFormat, PaddleSignatureHeader)
			}
			seenTS = true
			ts = v
		case "h1":
			h1 = append(h1, v)
		}
	}
	if !seenTS {
		return "", nil, fmt.Errorf("%w: header %s has no ts", ErrFormat, PaddleSignatureHeader)
	}
	if len(h1) == 0 {
		return "", nil, fmt.Errorf("%w: header %s has no h1 signature", ErrFormat, PaddleSignatureHeader)
	}
	return ts, h1, nil
}

// DefaultIDFrom returns the event id in the body.
func (*Paddle) DefaultIDFrom() []IDRule {
	return []IDRule{idJSON("event_id")}
}

// UnmarshalCaddyfile sets up the scheme from the Caddyfile tokens after
// `verify`. Syntax:
//
//	paddle [<secret>...] {
//		secret    <secret>...
//		tolerance <duration>
//	}
func (p *Paddle) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return p.parseCaddyfile(d)
}

// Interface guards
var _ scheme = (*Paddle)(nil)
