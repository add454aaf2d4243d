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

func init() {
	caddy.RegisterModule(Paddle{})
}

// Paddle verifies Paddle Billing webhooks: the Paddle-Signature header is
// `ts=<unix seconds>;h1=<hex>[;h1=<hex>...]`, and each h1 is the lowercase
// hex HMAC-SHA256 of ts + ":" + the raw body, keyed with the notification
// destination's endpoint secret key (the whole pdl_ntfset_... string).
// The request is accepted when any h1 matches for any configured secret
// (several secrets mean rotation); elements with other names, such as h2,
// are ignored. An element without "=", an empty value, or a repeated ts is
// a malformed header.
//
// The timestamp check is the gateway policy of shared/SIGNATURES.md,
// stricter than Paddle's Node SDK (which checks only the age): ts is
// refused when it is more than tolerance before or after the current time
// (a difference exactly equal to the tolerance is accepted), so a
// timestamp too far in the future is refused too.
//
// Caddyfile syntax (the words after `verify`):
//
//	paddle [<secret>...] {
//		secret    <secret>...
//		tolerance <duration>
//	}
type Paddle struct {
	// The endpoint secret keys. Placeholders such as {env.NAME} and
	// {file./path} are resolved when the module is provisioned; secrets
	// that resolve to nothing are ignored, but at least one must remain.
	Secrets []string `json:"secrets,omitempty"`

	// How far the signed timestamp may be from the current time, in either
	// direction. Default: 5s, as in Paddle's SDKs.
	Tolerance caddy.Duration `json:"tolerance,omitempty"`

	keys [][]byte
}

// PaddleSignatureHeader is the header carrying Paddle's signature.
const PaddleSignatureHeader = "Paddle-Signature"

// DefaultPaddleTolerance is Paddle's own tolerance.
const DefaultPaddleTolerance = 5 * time.Second

// CaddyModule returns the Caddy module information.
func (Paddle) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "webhooks.verifiers.paddle",
		New: func() caddy.Module { return new(Paddle) },
	}
}

// Provision resolves the secrets and fills in the default tolerance.
func (p *Paddle) Provision(ctx caddy.Context) error {
	if err := provisionTolerance(&p.Tolerance, DefaultPaddleTolerance); err != nil {
		return err
	}
	var err error
	p.keys, err = ResolveSecrets(p.Secrets)
	return err
}

// Verify checks the request's timestamp and signatures.
func (p *Paddle) Verify(r *http.Request, body []byte, now time.Time) error {
	raw := r.Header.Get(PaddleSignatureHeader)
	if raw == "" {
		return errHeaderMissing(PaddleSignatureHeader)
	}
	ts, sigs, err := parsePaddleSignature(raw)
	if err != nil {
		return err
	}
	t, err := ParseUnixSeconds(ts)
	if err != nil {
		return fmt.Errorf("header %s: %w", PaddleSignatureHeader, err)
	}
	if err := CheckTimestamp(t, now, time.Duration(p.Tolerance)); err != nil {
		return err
	}
	return CheckHMAC(sha256.New, p.keys, EncodingHex, sigs, []byte(ts), []byte{':'}, body)
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

// UnmarshalCaddyfile sets up the scheme from Caddyfile tokens; the first
// token is the scheme name. Syntax: see the type's documentation.
func (p *Paddle) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return parseSecretsBlock(d, &p.Secrets, toleranceOption(&p.Tolerance))
}

// Interface guards
var (
	_ caddy.Provisioner     = (*Paddle)(nil)
	_ caddyfile.Unmarshaler = (*Paddle)(nil)
	_ Verifier              = (*Paddle)(nil)
	_ IDDefaulter           = (*Paddle)(nil)
)
