package verifiers

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// SendGrid verifies SendGrid (Twilio SendGrid) Event Webhook requests,
// which are signed with ECDSA P-256 over SHA-256. The
// X-Twilio-Email-Event-Webhook-Timestamp header holds the timestamp and
// X-Twilio-Email-Event-Webhook-Signature the base64 (standard alphabet,
// padded) DER signature of the timestamp followed directly by the raw body,
// with no separator; the body's bytes count exactly, its trailing "\r\n"
// included. The keys are the verification keys from SendGrid's settings:
// base64 DER SubjectPublicKeyInfo of a P-256 key (PEM is accepted too).
// Several keys mean rotation: any one may verify.
//
// SendGrid's SDKs check no timestamp, so by default there is no replay
// window (the timestamp must still be integer Unix seconds); with
// tolerance set, a timestamp more than tolerance from the current time, in
// either direction, is refused. ECDSA signatures are malleable: (r, n-s)
// verifies as well as (r, s), so the signature must never serve as a
// deduplication key; the default id is each event's sg_event_id.
type SendGrid struct {
	// PublicKeys are the verification keys: base64 DER
	// SubjectPublicKeyInfo (or PEM) of P-256 public keys; several mean
	// rotation. Placeholders such as {env.NAME} and {file./path} are
	// resolved when the module is provisioned; keys that resolve to
	// nothing are ignored, but at least one must remain.
	PublicKeys []string `json:"public_keys,omitempty"`

	// ToleranceConfig holds the replay window (default: none).
	ToleranceConfig

	keys      []*ecdsa.PublicKey
	positions keyPositions // the place in PublicKeys of each of keys
	tolerance time.Duration
}

// The headers SendGrid signs an Event Webhook request with.
const (
	SendGridSignatureHeader = "X-Twilio-Email-Event-Webhook-Signature"
	SendGridTimestampHeader = "X-Twilio-Email-Event-Webhook-Timestamp"
)

// sendGridMaxSignature bounds the signature header: a DER ECDSA P-256
// signature is at most 72 bytes, 96 characters of base64.
const sendGridMaxSignature = 96

// CaddyModule returns the Caddy module information.
func (SendGrid) CaddyModule() caddy.ModuleInfo {
	return moduleInfo[SendGrid]("webhooks.verifiers.sendgrid")
}

// Provision resolves and parses the public keys, and checks the tolerance.
func (s *SendGrid) Provision(ctx caddy.Context) error {
	var err error
	if s.tolerance, err = s.ToleranceConfig.compile(0); err != nil {
		return err
	}
	raw, positions, err := resolvePositions(s.PublicKeys)
	if err != nil {
		return fmt.Errorf("public keys: %w", err)
	}
	s.keys = make([]*ecdsa.PublicKey, 0, len(raw))
	for i, k := range raw {
		pub, err := parseSendGridKey(string(k))
		if err != nil {
			return fmt.Errorf("public key %d: %w", positions.of(i)+1, err)
		}
		s.keys = append(s.keys, pub)
	}
	s.positions = positions
	return nil
}

// parseSendGridKey reads a P-256 public key given as base64 DER
// SubjectPublicKeyInfo, or as a PEM "PUBLIC KEY" block.
func parseSendGridKey(k string) (*ecdsa.PublicKey, error) {
	k = strings.TrimSpace(k)
	var der []byte
	if strings.HasPrefix(k, "-----BEGIN") {
		block, rest := pem.Decode([]byte(k))
		if block == nil || block.Type != "PUBLIC KEY" || len(strings.TrimSpace(string(rest))) != 0 {
			return nil, errors.New("not a single PEM PUBLIC KEY block")
		}
		der = block.Bytes
	} else {
		var err error
		if der, err = base64.StdEncoding.DecodeString(k); err != nil {
			return nil, errors.New("not base64 (standard alphabet, padded)")
		}
	}
	pub, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, errors.New("not a DER SubjectPublicKeyInfo")
	}
	ec, ok := pub.(*ecdsa.PublicKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, errors.New("not an ECDSA P-256 public key")
	}
	return ec, nil
}

// Verify checks the request's timestamp and signature.
func (s *SendGrid) Verify(r *http.Request, body []byte, now time.Time) error {
	_, err := s.VerifyKey(r, body, now)
	return err
}

// KeyCount is how many public keys are configured, those left unset
// included (KeyVerifier).
func (s *SendGrid) KeyCount() int { return len(s.PublicKeys) }

// keyPosition is the place in PublicKeys of the key at k.
func (s *SendGrid) keyPosition(k int) int { return s.positions.of(k) }

// VerifyKey is Verify, returning the position among the configured
// secrets of the one that matched (KeyVerifier).
func (s *SendGrid) VerifyKey(r *http.Request, body []byte, now time.Time) (int, error) {
	k, err := s.verifyKey(r, body, now)
	return s.keyPosition(k), err
}

// verifyKey checks the request, returning the position of the matching
// key among those in effect.
func (s *SendGrid) verifyKey(r *http.Request, body []byte, now time.Time) (int, error) {
	sig64 := r.Header.Get(SendGridSignatureHeader)
	if sig64 == "" {
		return 0, errHeaderMissing(SendGridSignatureHeader)
	}
	ts, t, err := timestampHeader(r, SendGridTimestampHeader)
	if err != nil {
		return 0, err
	}
	sig, err := decodeSendGridSignature(sig64)
	if err != nil {
		return 0, err
	}
	if s.tolerance > 0 {
		if err := CheckTimestamp(t, now, s.tolerance); err != nil {
			return 0, err
		}
	}

	h := sha256.New()
	h.Write([]byte(ts))
	h.Write(body)
	digest := h.Sum(nil)
	for i, k := range s.keys {
		if ecdsa.VerifyASN1(k, digest, sig) {
			return i, nil
		}
	}
	return 0, fmt.Errorf("%w: no configured public key verifies the signature", ErrMismatch)
}

// decodeSendGridSignature reads the signature header: the canonical
// base64 (standard alphabet, padded) of a DER ECDSA signature. Text that
// is not base64 at all, or does not hold a DER signature, is malformed
// (ErrFormat); base64 that is readable but not canonical (URL alphabet,
// unpadded, non-zero trailing bits) is refused as a mismatch (ErrMismatch),
// as for the HMAC schemes.
func decodeSendGridSignature(sig64 string) ([]byte, error) {
	if len(sig64) > sendGridMaxSignature || strings.ContainsAny(sig64, "\r\n") {
		return nil, fmt.Errorf("%w: header %s is not a base64 DER signature", ErrFormat, SendGridSignatureHeader)
	}
	sig, err := base64.StdEncoding.Strict().DecodeString(sig64)
	canonical := err == nil
	if !canonical {
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding, base64.StdEncoding} {
			if sig, err = enc.DecodeString(sig64); err == nil {
				break
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%w: header %s is not base64", ErrFormat, SendGridSignatureHeader)
		}
	}
	var rs struct{ R, S *big.Int }
	if rest, err := asn1.Unmarshal(sig, &rs); err != nil || len(rest) != 0 {
		return nil, fmt.Errorf("%w: header %s is not a DER ECDSA signature", ErrFormat, SendGridSignatureHeader)
	}
	if !canonical {
		return nil, fmt.Errorf("%w: header %s is not canonical base64", ErrMismatch, SendGridSignatureHeader)
	}
	return sig, nil
}

// DefaultIDFrom returns the sg_event_id of a batch of one event (the body
// is a JSON array of events), otherwise a hash of the exact received
// bytes. The first event's id is not a default for a batch of several:
// SendGrid delivers an event more than once (sendgrid/docs#2933), so a
// batch could start with an event already received and carry new ones
// after it, which would be answered "already processed" and lost.
func (*SendGrid) DefaultIDFrom() []IDRule {
	return []IDRule{idJSON("0.sg_event_id").Unless("1"), idRawHash()}
}

// UnmarshalCaddyfile sets up the scheme from the Caddyfile tokens after
// `verify`. Syntax:
//
//	sendgrid [<public_key>...] {
//		public_key <public_key>...
//		secret     <public_key>...
//		tolerance  <duration>
//	}
//
// public_key and secret lines are the same: both add verification keys.
func (s *SendGrid) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	tolerance := s.option()
	return parseSecretsBlock(d, &s.PublicKeys, func(d *caddyfile.Dispenser, name string) (bool, error) {
		if name == "public_key" {
			return true, appendSecrets(d, &s.PublicKeys)
		}
		return tolerance(d, name)
	})
}

// Interface guards
var _ scheme = (*SendGrid)(nil)
