package verifiers

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// Twitter verifies X (formerly Twitter) Account Activity API webhooks: the
// X-Twitter-Webhooks-Signature header holds "sha256=" and the base64
// (standard alphabet, padded) HMAC-SHA256 of the raw body, keyed with the
// app's consumer secret (API key secret). Several secrets mean rotation:
// any one may match. X signs no timestamp, so there is no replay window.
//
// X checks the endpoint with a challenge-response check (CRC), answered at
// the edge and never queued: `GET ?crc_token=<token>` gets 200 with the
// JSON body {"response_token":"sha256=<base64 HMAC-SHA256 of the token>"},
// keyed with the first configured secret. Since that answer is also the
// signature of a POST whose body is the token, only short opaque tokens
// are answered: one that could be an event body (JSON, a form, anything
// with quotes, braces, '=', '&' or spaces, or over 256 bytes) gets 401
// with code INVALID_SIGNATURE_FORMAT instead.
//
// X sends no delivery id, and no payload field identifies one delivery, so
// this scheme has no default id_from: without an id_from line every event
// is accepted under a generated id and never deduplicated. Set id_from to
// what your events carry (for example `id_from json
// tweet_create_events.0.id_str`) to deduplicate retries.
//
// The module is registered as twitter and, for the same scheme, as x.
type Twitter struct {
	// SecretsConfig holds the consumer secrets (API key secrets); the
	// first one that resolves to something answers the CRC.
	SecretsConfig

	keys [][]byte
}

// TwitterSignatureHeader is the header carrying X's signature.
const TwitterSignatureHeader = "X-Twitter-Webhooks-Signature"

// CaddyModule returns the Caddy module information.
func (Twitter) CaddyModule() caddy.ModuleInfo {
	return moduleInfo[Twitter]("webhooks.verifiers.twitter")
}

// Provision resolves the secrets.
func (t *Twitter) Provision(ctx caddy.Context) (err error) {
	t.keys, err = t.resolve()
	return err
}

// Verify checks the request's signature over the raw body. X posts its
// events as JSON objects; any other body is refused before its signature
// is looked at, so that no CRC answer (signed the same way, over a token
// that can never start with '{': see validCRCToken) can pass for an
// event's signature.
func (t *Twitter) Verify(r *http.Request, body []byte, now time.Time) error {
	_, err := t.VerifyKey(r, body, now)
	return err
}

// VerifyKey is Verify, returning the position among the configured
// secrets of the one that matched (KeyVerifier).
func (t *Twitter) VerifyKey(r *http.Request, body []byte, now time.Time) (int, error) {
	k, err := t.verifyKey(r, body, now)
	return t.keyPosition(k), err
}

// verifyKey checks the request, returning the position of the matching
// key among those in effect.
func (t *Twitter) verifyKey(r *http.Request, body []byte, now time.Time) (int, error) {
	if !startsJSONObject(body) {
		return 0, fmt.Errorf("%w: an X webhook body is a JSON object", ErrFormat)
	}
	return checkPrefixedHMAC(r, TwitterSignatureHeader, "sha256=", sha256.New, t.keys, EncodingBase64, body)
}

// HandshakeGET answers X's CRC. A GET without a crc_token is not a CRC
// and is left to the ingress. A crc_token that is not a plausible CRC
// token (see validCRCToken) is refused with 401, code
// INVALID_SIGNATURE_FORMAT, and is never signed.
func (t *Twitter) HandshakeGET(w http.ResponseWriter, r *http.Request) bool {
	tok := r.URL.Query().Get("crc_token")
	if tok == "" {
		return false
	}
	if !validCRCToken(tok) {
		handshakeMalformed(w, fmt.Sprintf("crc_token must be at most %d characters of A-Z a-z 0-9 - _ + / . and must not be JSON", maxCRCTokenLen))
		return true
	}
	handshakeJSON(w, http.StatusOK, struct {
		ResponseToken string `json:"response_token"`
	}{"sha256=" + signHMAC(sha256.New, t.keys[0], EncodingBase64, []byte(tok))})
	return true
}

// maxCRCTokenLen is the longest crc_token answered. The tokens X sends
// are short (48 characters: the base64 of a UUID).
const maxCRCTokenLen = 256

// validCRCToken reports whether tok may be answered as a CRC token.
//
// X keys the CRC answer and the signature of its POSTed events with the
// same consumer secret and the same encoding, so the answer to
// crc_token=<b> is exactly the X-Twitter-Webhooks-Signature of a POST whose
// body is b: answering every token would make this endpoint a signing
// oracle for forged events. Only tokens that cannot be a useful event body
// are answered: 1 to maxCRCTokenLen bytes of A-Z a-z 0-9 - _ + / . (no
// braces, brackets, quotes, '=', '&', '%', ':', spaces or control
// characters, so never a JSON object, array or string, nor a form body
// with a value), and not a valid JSON text either, which refuses the bare
// scalars this charset can spell (123, -1.5e3, true, false, null). What is
// left (an opaque word such as X's own tokens) is no JSON document and no
// name=value form; an ingress with require_json refuses it as a body.
func validCRCToken(tok string) bool {
	if len(tok) == 0 || len(tok) > maxCRCTokenLen {
		return false
	}
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '-' || c == '_' || c == '+' || c == '/' || c == '.') {
			return false
		}
	}
	return !json.Valid([]byte(tok))
}

// HandshakePOST does nothing: X has no handshake by POST.
func (*Twitter) HandshakePOST(w http.ResponseWriter, r *http.Request, body []byte) bool {
	return false
}

// DefaultIDFrom returns no rule: X sends no delivery id (see the type's
// documentation).
func (*Twitter) DefaultIDFrom() []IDRule {
	return nil
}

// UnmarshalCaddyfile sets up the scheme from the Caddyfile tokens after
// `verify` (the scheme name is twitter or x). Syntax:
//
//	twitter [<consumer_secret>...] {
//		secret <consumer_secret>...
//	}
func (t *Twitter) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return parseSecretsBlock(d, &t.Secrets, nil)
}

// X is the twitter scheme registered under the name x (module ID
// webhooks.verifiers.x): the same JSON fields, Caddyfile syntax (with x as
// the scheme name) and behaviour as Twitter.
type X struct{ Twitter }

// CaddyModule returns the Caddy module information.
func (X) CaddyModule() caddy.ModuleInfo { return moduleInfo[X]("webhooks.verifiers.x") }

// Interface guards
var (
	_ handshakingScheme = (*Twitter)(nil)
	_ handshakingScheme = (*X)(nil)
)

// startsJSONObject reports whether body, after leading JSON whitespace,
// starts with '{'.
func startsJSONObject(body []byte) bool {
	for _, c := range body {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c == '{'
	}
	return false
}
