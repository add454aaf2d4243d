package verifiers

import (
	"crypto/hmac"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// This file holds the pieces every HMAC scheme shares, so that a new scheme
// (stripe, slack, shopify, ...) only has to say which header it reads and
// which bytes are signed. The gateway policy they implement is in
// shared/SIGNATURES.md: signatures are compared as canonical text in
// constant time (lowercase hex; standard, padded base64), timestamps are
// integer Unix seconds checked as |now - ts| <= tolerance.

// ResolveSecrets replaces placeholders such as {env.NAME} and {file./path}
// in each configured secret (caddy.NewReplacer, unknown placeholders become
// empty) and returns the non-empty results as keys, in order. Secrets that
// resolve to nothing are dropped, so an optional {env.OLD_SECRET} may be
// left unset. It fails when no secret is left. The error never contains a
// secret. A literal brace in a secret is written \{ or \}.
func ResolveSecrets(secrets []string) ([][]byte, error) {
	repl := caddy.NewReplacer()
	keys := make([][]byte, 0, len(secrets))
	for _, s := range secrets {
		v := repl.ReplaceAll(s, "")
		if v == "" {
			continue
		}
		keys = append(keys, []byte(v))
	}
	if len(keys) == 0 {
		if len(secrets) == 0 {
			return nil, errors.New("no secret configured")
		}
		return nil, fmt.Errorf("none of the %d configured secrets is non-empty after placeholder resolution", len(secrets))
	}
	return keys, nil
}

// Encoding is how a scheme writes a signature as text.
type Encoding string

// The signature encodings. Only the canonical form of each is accepted.
const (
	// EncodingHex is lowercase hexadecimal.
	EncodingHex Encoding = "hex"
	// EncodingBase64 is base64 with the standard alphabet and padding
	// (encoding/base64.StdEncoding).
	EncodingBase64 Encoding = "base64"
)

// Valid reports whether e is a known encoding.
func (e Encoding) Valid() bool { return e == EncodingHex || e == EncodingBase64 }

// Encode returns the canonical text form of mac.
func (e Encoding) Encode(mac []byte) string {
	if e == EncodingBase64 {
		return base64.StdEncoding.EncodeToString(mac)
	}
	return hex.EncodeToString(mac)
}

// WellFormed reports whether sig can be read, leniently, as exactly size
// bytes in e: hex in either letter case; base64 with the standard or URL
// alphabet, padded or not. A signature that is not well formed is a format
// error (ErrFormat). A well-formed signature that is not canonical
// (uppercase hex, base64url, unpadded, non-zero trailing bits) is still
// refused, by the canonical comparison, as a mismatch (ErrMismatch).
func (e Encoding) WellFormed(sig string, size int) bool {
	switch e {
	case EncodingHex:
		if len(sig) != 2*size {
			return false
		}
		for i := 0; i < len(sig); i++ {
			c := sig[i]
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
		return true
	case EncodingBase64:
		// the longest form is padded: reject anything longer before
		// decoding, and anything with bytes the decoders skip (\r, \n)
		if len(sig) > base64.StdEncoding.EncodedLen(size) {
			return false
		}
		for i := 0; i < len(sig); i++ {
			if sig[i] == '\r' || sig[i] == '\n' {
				return false
			}
		}
		for _, enc := range []*base64.Encoding{
			base64.StdEncoding, base64.RawStdEncoding,
			base64.URLEncoding, base64.RawURLEncoding,
		} {
			if b, err := enc.DecodeString(sig); err == nil && len(b) == size {
				return true
			}
		}
		return false
	}
	return false
}

// EqualSignature compares two signature texts in constant time (the time
// depends only on their lengths, which are public).
func EqualSignature(got, want string) bool {
	return hmac.Equal([]byte(got), []byte(want))
}

// CheckHMAC verifies that at least one of sigs is the canonical encoding
// (enc) of HMAC(key, msg...) for at least one of keys, with the hash newHash.
// The message parts are hashed in order without being joined, so the body
// is never copied. It returns nil on a match; an error wrapping ErrFormat
// when no signature in sigs is well formed (see Encoding.WellFormed); and
// an error wrapping ErrMismatch otherwise. Errors never contain a key, a
// received signature or a computed one.
func CheckHMAC(newHash func() hash.Hash, keys [][]byte, enc Encoding, sigs []string, msg ...[]byte) error {
	size := newHash().Size()
	wellFormed := make([]string, 0, len(sigs))
	for _, s := range sigs {
		if enc.WellFormed(s, size) {
			wellFormed = append(wellFormed, s)
		}
	}
	if len(wellFormed) == 0 {
		return fmt.Errorf("%w: signature is not %d bytes of %s", ErrFormat, size, enc)
	}
	for _, key := range keys {
		m := hmac.New(newHash, key)
		for _, p := range msg {
			m.Write(p)
		}
		want := enc.Encode(m.Sum(nil))
		for _, s := range wellFormed {
			if EqualSignature(s, want) {
				return nil
			}
		}
	}
	return fmt.Errorf("%w: no configured secret produces the signature", ErrMismatch)
}

// ParseUnixSeconds reads a signed timestamp: 1 to 18 ASCII digits, the
// integer number of seconds since the Unix epoch. Anything else (a sign,
// spaces, a fraction, milliseconds beyond 18 digits) is an error wrapping
// ErrFormat.
func ParseUnixSeconds(s string) (int64, error) {
	if len(s) == 0 || len(s) > 18 {
		return 0, fmt.Errorf("%w: timestamp is not integer Unix seconds", ErrFormat)
	}
	var ts int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%w: timestamp is not integer Unix seconds", ErrFormat)
		}
		ts = ts*10 + int64(c-'0')
	}
	return ts, nil
}

// CheckTimestamp returns an error wrapping ErrTimestamp when ts (Unix
// seconds) is more than tolerance before or after now. The difference is
// taken in whole seconds (now is truncated to its Unix second), and a
// difference exactly equal to the tolerance is accepted.
func CheckTimestamp(ts int64, now time.Time, tolerance time.Duration) error {
	diff := now.Unix() - ts
	if diff < 0 {
		diff = -diff
	}
	if diff > int64(tolerance/time.Second) {
		return fmt.Errorf("%w: timestamp is %ds from now, tolerance is %s", ErrTimestamp, diff, tolerance)
	}
	return nil
}

// oneArg reads exactly one argument of the current option into dst.
func oneArg(d *caddyfile.Dispenser, dst *string) error {
	if !d.NextArg() {
		return d.ArgErr()
	}
	*dst = d.Val()
	if d.NextArg() {
		return d.ArgErr()
	}
	return nil
}

// parseSecrets reads the arguments of a `secret` line (one or more).
func parseSecrets(d *caddyfile.Dispenser) ([]string, error) {
	args := d.RemainingArgs()
	if len(args) == 0 {
		return nil, d.ArgErr()
	}
	return args, nil
}
