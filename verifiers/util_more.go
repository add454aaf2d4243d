package verifiers

import (
	"crypto/hmac"
	"crypto/sha256"
	"net/http"
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/hookline/hookline/internal/httpjson"
)

// This file holds small helpers shared by the meta, twilio, gitlab, paddle,
// sendgrid and twitter schemes: answering edge handshakes, comparing
// plain tokens, and reading a tolerance option.

// handshakeErrorCode is the code of a refused handshake, the same as a
// signature mismatch (DESIGN.md: UNAUTHORIZED).
const handshakeErrorCode = "UNAUTHORIZED"

// handshakeMalformedCode is the code of a handshake whose challenge is
// malformed: the documented code and status of a malformed signature input
// (DESIGN.md: 401 INVALID_SIGNATURE_FORMAT), since the challenge is what
// the scheme would sign.
const handshakeMalformedCode = "INVALID_SIGNATURE_FORMAT"

// handshakeJSON writes v as a JSON handshake answer with the given status,
// in the same form as the ingress's own answers.
func handshakeJSON(w http.ResponseWriter, status int, v any) { httpjson.Write(w, status, v) }

// handshakeRefuse answers a handshake that failed its check with 403 and
// the ingress's JSON error body. msg must not contain a secret or token.
func handshakeRefuse(w http.ResponseWriter, msg string) {
	handshakeJSON(w, http.StatusForbidden, struct {
		Error string `json:"error"`
		Code  string `json:"code"`
	}{msg, handshakeErrorCode})
}

// handshakeMalformed answers a handshake whose challenge is malformed with
// 401 and the ingress's JSON error body. msg must not contain a secret or
// the received challenge.
func handshakeMalformed(w http.ResponseWriter, msg string) {
	handshakeJSON(w, http.StatusUnauthorized, struct {
		Error string `json:"error"`
		Code  string `json:"code"`
	}{msg, handshakeMalformedCode})
}

// handshakeText writes body as a 200 text/plain handshake answer.
func handshakeText(w http.ResponseWriter, body string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(body))
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

// resolvePlaceholders replaces placeholders such as {env.NAME} and
// {file./path} in s, unknown ones becoming empty, like ResolveSecrets does
// for a single value.
func resolvePlaceholders(s string) string {
	return caddy.NewReplacer().ReplaceAll(s, "")
}

// parseToleranceOption reads the single duration argument of a
// `tolerance` line; it must not be negative.
func parseToleranceOption(d *caddyfile.Dispenser) (caddy.Duration, error) {
	var s string
	if err := oneArg(d, &s); err != nil {
		return 0, err
	}
	dur, err := caddy.ParseDuration(s)
	if err != nil {
		return 0, d.Errf("bad tolerance %q: %v", s, err)
	}
	if dur < 0 {
		return 0, d.Err("tolerance must not be negative")
	}
	return caddy.Duration(dur), nil
}
