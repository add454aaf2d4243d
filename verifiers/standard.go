package verifiers

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// Standard verifies Standard Webhooks (https://www.standardwebhooks.com),
// the scheme Svix and its customers use. Three headers carry the message:
// webhook-id, webhook-timestamp (integer Unix seconds) and
// webhook-signature; each one falls back to its Svix name (svix-id,
// svix-timestamp, svix-signature) when absent. The signed content is
// id + "." + timestamp + "." + the raw body.
//
// webhook-signature is a list of "<version>,<signature>" entries separated
// by single spaces, any of which may match: "v1,<base64 HMAC-SHA256>" is
// checked against the symmetric secrets, "v1a,<base64 ed25519 signature>"
// against the public keys. Signatures must be standard, padded base64.
// Other versions are ignored, so a list without any well-formed v1 or v1a
// signature is refused; an entry without exactly one comma makes the whole
// header malformed. The timestamp must be within tolerance of the current
// time in either direction (default 5m; a difference exactly equal to it is
// accepted).
//
// Each secret is routed by its prefix: "whsec_<base64>" (or the bare
// base64, as the reference libraries accept) is an HMAC secret, decoded
// before use as the Python reference library decodes it (padding optional,
// non-zero trailing bits dropped: decodeWhsec); "whpk_<base64>" is a
// 32-byte ed25519 public key in canonical standard base64. Anything else
// fails provisioning. A "whsk_"
// private key is refused: configure its public key instead. Several
// secrets mean rotation: any one may match.
//
// The reference libraries (standard-webhooks at b2fa7b87, svix-webhooks)
// do not verify v1a signatures; this implementation follows the spec, and
// its tests use the sign vector of the Go asymmetric implementation found
// in another version of the standard-webhooks repository.
//
// The module is also registered as webhooks.verifiers.svix (see Svix).
type Standard struct {
	// TimestampedConfig holds the secrets ("whsec_..." HMAC secrets and
	// "whpk_..." ed25519 public keys, in any mix) and the tolerance
	// (default 5m).
	TimestampedConfig

	hmacKeys   [][]byte
	publicKeys []ed25519.PublicKey
	// hmacPos and publicPos are the position of each key among the
	// secrets in effect (for VerifyKey)
	hmacPos, publicPos []int
	tolerance          time.Duration
}

// The Standard Webhooks headers, and the Svix names they fall back to.
const (
	StandardIDHeader        = "webhook-id"
	StandardTimestampHeader = "webhook-timestamp"
	StandardSignatureHeader = "webhook-signature"
	SvixIDHeader            = "svix-id"
	SvixTimestampHeader     = "svix-timestamp"
	SvixSignatureHeader     = "svix-signature"
)

// The prefixes of Standard Webhooks keys: HMAC secret, ed25519 public key,
// ed25519 private key.
const (
	standardSecretPrefix     = "whsec_"
	standardPublicKeyPrefix  = "whpk_"
	standardPrivateKeyPrefix = "whsk_"
)

// CaddyModule returns the Caddy module information.
func (Standard) CaddyModule() caddy.ModuleInfo {
	return moduleInfo[Standard]("webhooks.verifiers.standard")
}

// Provision resolves the secrets, decodes them by their prefix and fills
// in the default tolerance. Errors name a secret by its position among the
// configured secrets, never by its value.
func (s *Standard) Provision(ctx caddy.Context) error {
	secrets, tol, err := s.compile(DefaultTolerance)
	if err != nil {
		return err
	}
	s.hmacKeys, s.publicKeys, s.hmacPos, s.publicPos, s.tolerance = nil, nil, nil, nil, tol
	for i, sec := range secrets {
		n := s.secretNumber(i)
		switch {
		case bytes.HasPrefix(sec, []byte(standardPublicKeyPrefix)):
			key, ok := decodeCanonicalBase64(string(sec[len(standardPublicKeyPrefix):]))
			if !ok || len(key) != ed25519.PublicKeySize {
				return fmt.Errorf("secret %d: a whpk_ key must be the padded standard base64 of a %d-byte ed25519 public key", n, ed25519.PublicKeySize)
			}
			if !strongPublicKey(key) {
				return fmt.Errorf("secret %d: a whpk_ key must be a usable ed25519 public key (not one of small order, which any signature could match)", n)
			}
			s.publicKeys = append(s.publicKeys, ed25519.PublicKey(key))
			s.publicPos = append(s.publicPos, i)
		case bytes.HasPrefix(sec, []byte(standardPrivateKeyPrefix)):
			return fmt.Errorf("secret %d is a whsk_ ed25519 private key: configure its whpk_ public key instead", n)
		default:
			key, ok := decodeWhsec(string(bytes.TrimPrefix(sec, []byte(standardSecretPrefix))))
			if !ok {
				return fmt.Errorf("secret %d: a whsec_ secret must be standard base64 after the prefix, padded or not (URL-alphabet secrets are refused)", n)
			}
			if len(key) == 0 {
				return fmt.Errorf("secret %d: empty whsec_ secret", n)
			}
			s.hmacKeys = append(s.hmacKeys, key)
			s.hmacPos = append(s.hmacPos, i)
		}
	}
	return nil
}

// Verify checks the request's signatures and timestamp.
func (s *Standard) Verify(r *http.Request, body []byte, now time.Time) error {
	_, err := s.VerifyKey(r, body, now)
	return err
}

// VerifyKey is Verify, returning the position among the configured
// secrets of the one that matched (KeyVerifier).
func (s *Standard) VerifyKey(r *http.Request, body []byte, now time.Time) (int, error) {
	k, err := s.verifyKey(r, body, now)
	return s.keyPosition(k), err
}

// verifyKey checks the request, returning the position of the matching
// key among those in effect.
func (s *Standard) verifyKey(r *http.Request, body []byte, now time.Time) (int, error) {
	id, err := standardHeader(r, StandardIDHeader, SvixIDHeader)
	if err != nil {
		return 0, err
	}
	ts, err := standardHeader(r, StandardTimestampHeader, SvixTimestampHeader)
	if err != nil {
		return 0, err
	}
	list, err := standardHeader(r, StandardSignatureHeader, SvixSignatureHeader)
	if err != nil {
		return 0, err
	}
	t, err := ParseUnixSeconds(ts)
	if err != nil {
		return 0, fmt.Errorf("header %s: %w", StandardTimestampHeader, err)
	}
	v1, v1a, err := parseStandardSignatures(list)
	if err != nil {
		return 0, err
	}
	hmacOK := anyWellFormed(EncodingBase64, v1, sha256.Size)
	ed25519OK := anyWellFormed(EncodingBase64, v1a, ed25519.SignatureSize)
	if !hmacOK && !ed25519OK {
		return 0, fmt.Errorf("%w: header %s has no well-formed v1 or v1a signature", ErrFormat, StandardSignatureHeader)
	}
	if err := CheckTimestamp(t, now, s.tolerance); err != nil {
		return 0, err
	}

	if hmacOK && len(s.hmacKeys) > 0 {
		dot := []byte(".")
		if k, err := MatchHMAC(sha256.New, s.hmacKeys, EncodingBase64, v1, []byte(id), dot, []byte(ts), dot, body); err == nil {
			return s.hmacPos[k], nil
		}
	}
	if ed25519OK && len(s.publicKeys) > 0 {
		msg := make([]byte, 0, len(id)+len(ts)+2+len(body))
		msg = append(append(append(append(append(msg, id...), '.'), ts...), '.'), body...)
		for _, sig := range v1a {
			// only the canonical text form is accepted, as for v1
			raw, ok := decodeCanonicalBase64(sig)
			if !ok || len(raw) != ed25519.SignatureSize {
				continue
			}
			for k, pk := range s.publicKeys {
				if ed25519.Verify(pk, msg, raw) {
					return s.publicPos[k], nil
				}
			}
		}
	}
	return 0, fmt.Errorf("%w: no configured secret or public key produces a signature in the list", ErrMismatch)
}

// standardHeader returns the value of the Standard Webhooks header name,
// or of its Svix name when name is absent or empty. When neither is set,
// the error wraps ErrFormat.
func standardHeader(r *http.Request, name, svixName string) (string, error) {
	if v := r.Header.Get(name); v != "" {
		return v, nil
	}
	if v := r.Header.Get(svixName); v != "" {
		return v, nil
	}
	return "", errHeaderMissing(name + " (or " + svixName + ")")
}

// parseStandardSignatures splits a webhook-signature list into its v1 and
// v1a signatures. Every entry must be "<version>,<signature>" with exactly
// one comma (an empty entry, from a doubled space, is malformed too); other
// versions are ignored.
func parseStandardSignatures(list string) (v1, v1a []string, err error) {
	for rest, more := list, true; more; {
		var entry string
		entry, rest, more = strings.Cut(rest, " ")
		version, sig, ok := strings.Cut(entry, ",")
		if !ok || strings.IndexByte(sig, ',') >= 0 {
			return nil, nil, fmt.Errorf("%w: header %s has an entry that is not <version>,<signature>", ErrFormat, StandardSignatureHeader)
		}
		switch version {
		case "v1":
			v1 = append(v1, sig)
		case "v1a":
			v1a = append(v1a, sig)
		}
	}
	return v1, v1a, nil
}

// DefaultIDFrom returns the webhook-id header, then svix-id.
func (*Standard) DefaultIDFrom() []IDRule {
	return []IDRule{idHeader(StandardIDHeader), idHeader(SvixIDHeader)}
}

// UnmarshalCaddyfile sets up the scheme from the Caddyfile tokens after
// `verify` (the scheme name is standard or svix). Syntax:
//
//	standard [<secret>...] {
//		secret    <secret>...
//		tolerance <duration>
//	}
func (s *Standard) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return s.parseCaddyfile(d)
}

// Svix is the Standard scheme under the name svix (module ID
// webhooks.verifiers.svix), so that `verify svix ...` works. It has the
// same JSON fields, Caddyfile syntax (with svix as the scheme name) and
// behaviour as Standard.
type Svix struct {
	Standard
}

// CaddyModule returns the Caddy module information.
func (Svix) CaddyModule() caddy.ModuleInfo {
	return moduleInfo[Svix]("webhooks.verifiers.svix")
}

// Interface guards
var (
	_ scheme = (*Standard)(nil)
	_ scheme = (*Svix)(nil)
)
