package verifiers

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"net/http"
	"strings"
)

// This file holds the signature pieces every HMAC scheme shares, so that a
// new scheme (stripe, slack, shopify, ...) only has to say which header it
// reads and which bytes are signed. The gateway policy they implement is
// in docs/signatures.md: signatures are compared as canonical text in
// constant time (lowercase hex; standard, padded base64).

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

// anyWellFormed reports whether at least one of sigs is well formed (see
// Encoding.WellFormed) as size bytes in enc. Schemes call it before the
// timestamp check, so that a malformed signature is reported as such
// (ErrFormat) even when the timestamp is also out of tolerance.
func anyWellFormed(enc Encoding, sigs []string, size int) bool {
	for _, s := range sigs {
		if enc.WellFormed(s, size) {
			return true
		}
	}
	return false
}

// decodeCanonicalBase64 decodes padded standard base64, and accepts it
// only in its canonical form (no line breaks, no non-zero padding bits).
func decodeCanonicalBase64(s string) ([]byte, bool) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || base64.StdEncoding.EncodeToString(b) != s {
		return nil, false
	}
	return b, true
}

// EqualSignature compares two signature texts in constant time (the time
// depends only on their lengths, which are public).
func EqualSignature(got, want string) bool {
	return hmac.Equal([]byte(got), []byte(want))
}

// tokenDigest returns the SHA-256 of a plain token, the form in which
// tokens are kept and compared (see equalTokenDigest).
func tokenDigest(tok []byte) [sha256.Size]byte {
	return sha256.Sum256(tok)
}

// equalTokenDigest compares a received plain token with the digest of a
// configured one in constant time. Comparing fixed-size digests instead of
// the tokens themselves keeps the time independent of the configured
// token's length too.
func equalTokenDigest(got []byte, want [sha256.Size]byte) bool {
	d := sha256.Sum256(got)
	return hmac.Equal(d[:], want[:])
}

// CheckHMAC verifies that at least one of sigs is the canonical encoding
// (enc) of HMAC(key, msg...) for at least one of keys, with the hash newHash.
// It is MatchHMAC without the matching key's position.
func CheckHMAC(newHash func() hash.Hash, keys [][]byte, enc Encoding, sigs []string, msg ...[]byte) error {
	_, err := MatchHMAC(newHash, keys, enc, sigs, msg...)
	return err
}

// MatchHMAC verifies that at least one of sigs is the canonical encoding
// (enc) of HMAC(key, msg...) for at least one of keys, with the hash
// newHash, and returns the position in keys of the first key that
// produces one. The message parts are hashed in order without being
// joined, so the body is never copied. It returns an error wrapping
// ErrFormat when no signature in sigs is well formed (see
// Encoding.WellFormed), and an error wrapping ErrMismatch when none
// matches. Errors never contain a key, a received signature or a computed
// one.
func MatchHMAC(newHash func() hash.Hash, keys [][]byte, enc Encoding, sigs []string, msg ...[]byte) (int, error) {
	if len(keys) == 0 {
		return 0, fmt.Errorf("%w: no configured secret produces the signature", ErrMismatch)
	}
	// the first key's MAC tells the size: no hash made only for that
	first := hmac.New(newHash, keys[0])
	size := first.Size()
	var onStack [4]string // the usual one or two signatures: no allocation
	wellFormed := onStack[:0]
	for _, s := range sigs {
		if enc.WellFormed(s, size) {
			wellFormed = append(wellFormed, s)
		}
	}
	if len(wellFormed) == 0 {
		return 0, fmt.Errorf("%w: signature is not %d bytes of %s", ErrFormat, size, enc)
	}
	for i, key := range keys {
		m := first
		if i > 0 {
			m = hmac.New(newHash, key)
		}
		for _, p := range msg {
			m.Write(p)
		}
		want := enc.Encode(m.Sum(nil))
		for _, s := range wellFormed {
			if EqualSignature(s, want) {
				return i, nil
			}
		}
	}
	return 0, fmt.Errorf("%w: no configured secret produces the signature", ErrMismatch)
}

// signHMAC returns the canonical encoding (enc) of HMAC(key, msg...) with
// the hash newHash, the message parts hashed in order without being
// joined.
func signHMAC(newHash func() hash.Hash, key []byte, enc Encoding, msg ...[]byte) string {
	m := hmac.New(newHash, key)
	for _, p := range msg {
		m.Write(p)
	}
	return enc.Encode(m.Sum(nil))
}

// checkPrefixedHMAC checks the signature of the schemes that send one MAC
// of the raw body, after a fixed prefix, in the first value of a header
// (github, meta, twitter: "sha256=<mac>"), and returns the matching
// key's position (see MatchHMAC). A header that is absent is missing; one whose first value is present but lacks the prefix (even an
// empty one) is malformed. Both errors wrap ErrFormat.
func checkPrefixedHMAC(r *http.Request, header, prefix string, newHash func() hash.Hash, keys [][]byte, enc Encoding, body []byte) (int, error) {
	vals := r.Header.Values(header)
	if len(vals) == 0 {
		return 0, errHeaderMissing(header)
	}
	sig, ok := strings.CutPrefix(vals[0], prefix)
	if !ok {
		return 0, fmt.Errorf("%w: header %s does not start with %s", ErrFormat, header, prefix)
	}
	return MatchHMAC(newHash, keys, enc, []string{sig}, body)
}
