package verifiers

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"time"

	"filippo.io/edwards25519"
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// Ed25519 verifies an Ed25519 signature, for the providers that sign with
// a key pair and publish the public key (Discord's Webhook Events, Telnyx).
// Its secrets are the provider's public keys, the 32 bytes in hex or in
// standard base64: not secret, but kept like secrets (placeholders, several
// for rotation, any may verify). The signature header holds the 64-byte
// signature in the configured encoding, over signed_content, a template
// like hmac's: {body} the raw body, {timestamp} the timestamp header's
// value as received, {id} the id header's. With timestamp_header set, the
// timestamp must be within tolerance of the current time, either way, read
// as timestamp_format says.
//
// For example, Discord:
//
//	verify ed25519 {env.DISCORD_PUBLIC_KEY} {
//		header X-Signature-Ed25519
//		timestamp_header X-Signature-Timestamp
//	}
type Ed25519 struct {
	// SecretsConfig holds the provider's public keys: 32 bytes each, in
	// hex or standard base64.
	SecretsConfig

	// Header is the request header carrying the signature. Required.
	Header string `json:"header,omitempty"`

	// Encoding is how the signature is written: hex or base64 (standard
	// alphabet, padded). Default: hex.
	Encoding string `json:"encoding,omitempty"`

	// TimestampHeader is the request header carrying the signed timestamp;
	// when it is set, the timestamp is required and must be within
	// tolerance, and signed_content must include {timestamp}.
	TimestampHeader string `json:"timestamp_header,omitempty"`

	// TimestampFormat is how the timestamp is written: unix (integer
	// seconds), unix_ms (milliseconds) or rfc3339. Default: unix.
	TimestampFormat string `json:"timestamp_format,omitempty"`

	// IDHeader is the request header whose value fills {id} in
	// signed_content, and the default id_from rule. Default:
	// Idempotency-Key.
	IDHeader string `json:"id_header,omitempty"`

	// SignedContent is the template of the signed bytes over {id},
	// {timestamp} and {body}, which it must include. Default: "{body}", or
	// "{timestamp}{body}" with timestamp_header (Discord's).
	SignedContent string `json:"signed_content,omitempty"`

	// ToleranceConfig holds the replay window, only taken with
	// timestamp_header (default 5m).
	ToleranceConfig

	keys []ed25519.PublicKey
	enc  Encoding
	signed
}

// CaddyModule returns the Caddy module information.
func (Ed25519) CaddyModule() caddy.ModuleInfo {
	return moduleInfo[Ed25519]("webhooks.verifiers.ed25519")
}

// Provision decodes the public keys, fills in defaults and checks the
// configuration. Errors name a key by its position, never its value.
func (e *Ed25519) Provision(ctx caddy.Context) error {
	if e.Header == "" {
		return errors.New("header is required: the request header carrying the signature")
	}
	if e.Encoding == "" {
		e.Encoding = string(EncodingHex)
	}
	if e.IDHeader == "" {
		e.IDHeader = DefaultIDHeader
	}
	timestamped := e.TimestampHeader != ""
	if e.SignedContent == "" {
		e.SignedContent = "{body}"
		if timestamped {
			e.SignedContent = "{timestamp}{body}"
		}
	}
	e.enc = Encoding(e.Encoding)
	if !e.enc.Valid() {
		return fmt.Errorf("unknown encoding %q (want hex or base64)", e.Encoding)
	}
	var err error
	if e.signed, err = compileSigned(e.SignedContent, e.TimestampFormat, &e.ToleranceConfig, timestamped, "timestamp_header"); err != nil {
		return err
	}
	raw, err := e.resolve()
	if err != nil {
		return err
	}
	e.keys = make([]ed25519.PublicKey, 0, len(raw))
	for i, k := range raw {
		key, ok := decodePublicKey(string(k))
		if !ok {
			return fmt.Errorf("public key %d is not the hex or base64 of %d bytes", e.secretNumber(i), ed25519.PublicKeySize)
		}
		if !strongPublicKey(key) {
			return fmt.Errorf("public key %d is not a usable Ed25519 public key (not a curve point, or one of small order, which any signature could match)", e.secretNumber(i))
		}
		e.keys = append(e.keys, key)
	}
	return nil
}

// strongPublicKey reports whether key is a point of the curve outside the
// small-order subgroup: crypto/ed25519 verifies against any 32 bytes, and
// with the identity or another point of small order (a placeholder left
// in a config, all zeros) a forged signature verifies for any message.
func strongPublicKey(key ed25519.PublicKey) bool {
	p, err := new(edwards25519.Point).SetBytes(key)
	if err != nil {
		return false
	}
	return new(edwards25519.Point).MultByCofactor(p).Equal(edwards25519.NewIdentityPoint()) != 1
}

// decodePublicKey reads an Ed25519 public key: hex (either case) or
// standard base64 (padded or not) of its 32 bytes.
func decodePublicKey(s string) (ed25519.PublicKey, bool) {
	if b, err := hex.DecodeString(s); err == nil && len(b) == ed25519.PublicKeySize {
		return b, true
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == ed25519.PublicKeySize {
			return b, true
		}
	}
	return nil, false
}

// Verify checks the request's signature and, if configured, its
// timestamp.
func (e *Ed25519) Verify(r *http.Request, body []byte, now time.Time) error {
	_, err := e.VerifyKey(r, body, now)
	return err
}

// VerifyKey is Verify, returning the position among the configured
// secrets of the one that matched (KeyVerifier).
func (e *Ed25519) VerifyKey(r *http.Request, body []byte, now time.Time) (int, error) {
	k, err := e.verifyKey(r, body, now)
	return e.keyPosition(k), err
}

// verifyKey checks the request, returning the position of the matching
// key among those in effect.
func (e *Ed25519) verifyKey(r *http.Request, body []byte, now time.Time) (int, error) {
	raw := r.Header.Get(e.Header)
	if raw == "" {
		return 0, errHeaderMissing(e.Header)
	}
	if !e.enc.WellFormed(raw, ed25519.SignatureSize) {
		return 0, fmt.Errorf("%w: header %s is not %d bytes of %s", ErrFormat, e.Header, ed25519.SignatureSize, e.enc)
	}
	var ts, id string
	if e.TimestampHeader != "" {
		if ts = r.Header.Get(e.TimestampHeader); ts == "" {
			return 0, errHeaderMissing(e.TimestampHeader)
		}
		t, err := e.parseTime(ts)
		if err != nil {
			return 0, fmt.Errorf("header %s: %w", e.TimestampHeader, err)
		}
		if err := CheckTimestamp(t, now, e.tolerance); err != nil {
			return 0, err
		}
	}
	if e.usesID {
		if id = r.Header.Get(e.IDHeader); id == "" {
			return 0, errHeaderMissing(e.IDHeader)
		}
	}
	// only the canonical text form is accepted, as for the HMAC schemes
	var sig []byte
	if e.enc == EncodingBase64 {
		b, ok := decodeCanonicalBase64(raw)
		if !ok {
			return 0, fmt.Errorf("%w: no configured public key verifies the signature", ErrMismatch)
		}
		sig = b
	} else {
		b, err := hex.DecodeString(raw)
		if err != nil || hex.EncodeToString(b) != raw {
			return 0, fmt.Errorf("%w: no configured public key verifies the signature", ErrMismatch)
		}
		sig = b
	}
	msg := make([]byte, 0, len(body)+len(ts)+len(id)+32)
	for _, p := range e.tmpl {
		switch p.field {
		case fieldBody:
			msg = append(msg, body...)
		case fieldTimestamp:
			msg = append(msg, ts...)
		case fieldID:
			msg = append(msg, id...)
		default:
			msg = append(msg, p.lit...)
		}
	}
	for i, k := range e.keys {
		if ed25519.Verify(k, msg, sig) {
			return i, nil
		}
	}
	return 0, fmt.Errorf("%w: no configured public key verifies the signature", ErrMismatch)
}

// DefaultIDFrom returns the id header: id_header when set, otherwise
// Idempotency-Key.
func (e *Ed25519) DefaultIDFrom() []IDRule {
	if e.IDHeader != "" {
		return []IDRule{idHeader(e.IDHeader)}
	}
	return []IDRule{idHeader(DefaultIDHeader)}
}

// UnmarshalCaddyfile sets up the scheme from the Caddyfile tokens after
// `verify`. Syntax:
//
//	ed25519 [<public_key>...] {
//		secret           <public_key>...
//		header           <name>
//		encoding         hex|base64
//		timestamp_header <name>
//		timestamp_format unix|unix_ms|rfc3339
//		id_header        <name>
//		signed_content   <template>
//		tolerance        <duration>
//	}
//
// Every option but secret takes exactly one argument; see the fields of
// Ed25519 for what each means and its default.
func (e *Ed25519) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return parseSecretsBlock(d, &e.Secrets, func(d *caddyfile.Dispenser, name string) (bool, error) {
		if name == "header" {
			return true, oneArg(d, &e.Header)
		}
		return signedOptions{&e.Encoding, &e.TimestampHeader, &e.TimestampFormat, &e.IDHeader, &e.SignedContent, &e.ToleranceConfig}.parse(d, name)
	})
}

// Interface guards
var _ scheme = (*Ed25519)(nil)
