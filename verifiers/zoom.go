package verifiers

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// Zoom verifies Zoom webhooks (https://developers.zoom.us/docs/api/webhooks/
// "Verify webhook events"): the x-zm-signature header holds "v0=" and the
// lowercase hex HMAC-SHA256 of "v0:" + x-zm-request-timestamp + ":" + the
// raw body, keyed with the app's Secret Token as a plain string. The
// timestamp (integer Unix seconds) must be within tolerance of the current
// time in either direction (default 5m; a difference exactly equal to it is
// accepted). Several secrets mean rotation: any one may match.
//
// Zoom validates the endpoint when it is saved and every 72 hours with a
// signed POST whose JSON body is {"event":"endpoint.url_validation",
// "payload":{"plainToken":"..."}}. Once its signature is verified,
// HandshakePOST answers it with 200 and {"plainToken": <the same>,
// "encryptedToken": <lowercase hex HMAC-SHA256 of plainToken>}, keyed with
// the secret that signed the request (so a rotation answers with the
// Secret Token Zoom holds now), and it is never queued (see HandshakePOST
// for the tokens it answers).
//
// Zoom documents no per-notification id (x-zm-trackingid is described
// only as identifying a request, with nothing said of retries), so the
// default id is a hash of the exact received bytes: every notification
// carries its event_ts in milliseconds and its payload, and a retry
// (5, 20 and 60 minutes later) resends the same body.
type Zoom struct {
	// TimestampedConfig holds the app's Secret Tokens (plain strings; the
	// one that signed a url_validation request answers it) and the
	// tolerance (default 5m).
	TimestampedConfig

	keys      [][]byte
	tolerance time.Duration
}

// The headers Zoom signs its requests with.
const (
	ZoomSignatureHeader = "x-zm-signature"
	ZoomTimestampHeader = "x-zm-request-timestamp"
)

// CaddyModule returns the Caddy module information.
func (Zoom) CaddyModule() caddy.ModuleInfo {
	return moduleInfo[Zoom]("webhooks.verifiers.zoom")
}

// Provision resolves the secrets and fills in the default tolerance.
func (z *Zoom) Provision(ctx caddy.Context) (err error) {
	z.keys, z.tolerance, err = z.compile(DefaultTolerance)
	return err
}

// Verify checks the request's signature and timestamp.
func (z *Zoom) Verify(r *http.Request, body []byte, now time.Time) error {
	_, err := z.VerifyKey(r, body, now)
	return err
}

// VerifyKey is Verify, returning the position among the configured
// secrets of the one that matched (KeyVerifier).
func (z *Zoom) VerifyKey(r *http.Request, body []byte, now time.Time) (int, error) {
	k, err := z.verifyKey(r, body, now)
	return z.keyPosition(k), err
}

// verifyKey checks the request, returning the position of the matching
// key among those in effect.
func (z *Zoom) verifyKey(r *http.Request, body []byte, now time.Time) (int, error) {
	return verifyV0(r, body, now, ZoomSignatureHeader, ZoomTimestampHeader, z.keys, z.tolerance)
}

// DefaultIDFrom returns a hash of the exact received bytes (see the type's
// documentation).
func (*Zoom) DefaultIDFrom() []IDRule {
	return []IDRule{idRawHash()}
}

// DefaultTypeFrom returns the event field (meeting.started).
func (*Zoom) DefaultTypeFrom() []TypeRule { return types(idJSON("event")) }

// HandshakeGET returns false: Zoom has no GET handshake.
func (*Zoom) HandshakeGET(w http.ResponseWriter, r *http.Request) bool { return false }

// maxZoomPlainToken is the longest plainToken answered. Zoom's tokens are
// short (22 characters of base64url in its examples); a longer one is
// refused rather than signed.
const maxZoomPlainToken = 256

// HandshakePOST answers Zoom's endpoint.url_validation request, which the
// ingress passes here only after its signature was verified: a JSON body
// whose top-level "event" is "endpoint.url_validation" and whose
// payload.plainToken is a string gets 200 with {"plainToken": <it>,
// "encryptedToken": <hex HMAC-SHA256 of it>}. Any other body returns false
// and is handled as an event.
//
// The answer is the HMAC of the token under the secret that also signs
// events, over different bytes ("v0:<ts>:<body>" for an event), so it can
// never pass for an event's signature: an event's signed bytes start with
// "v0:", and a plainToken containing ':' is refused. Only 1 to
// maxZoomPlainToken printable ASCII characters without ':' are answered;
// any other plainToken gets 401 INVALID_SIGNATURE_FORMAT.
func (z *Zoom) HandshakePOST(w http.ResponseWriter, r *http.Request, body []byte) bool {
	// cheap test first: this runs for every verified Zoom request
	if !bytes.Contains(body, []byte("endpoint.url_validation")) {
		return false
	}
	var msg struct {
		Event   string `json:"event"`
		Payload struct {
			PlainToken *string `json:"plainToken"`
		} `json:"payload"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Event != "endpoint.url_validation" || msg.Payload.PlainToken == nil {
		return false
	}
	tok := *msg.Payload.PlainToken
	if !validZoomPlainToken(tok) {
		handshakeMalformed(w, fmt.Sprintf("plainToken must be 1 to %d printable ASCII characters without ':'", maxZoomPlainToken))
		return true
	}
	handshakeJSON(w, http.StatusOK, struct {
		PlainToken     string `json:"plainToken"`
		EncryptedToken string `json:"encryptedToken"`
	}{tok, signHMAC(sha256.New, z.signingKey(r, body), EncodingHex, []byte(tok))})
	return true
}

// signingKey returns the configured secret that signed the request (the
// ingress verified that one did), or the first one.
func (z *Zoom) signingKey(r *http.Request, body []byte) []byte {
	sig := strings.TrimPrefix(r.Header.Get(ZoomSignatureHeader), "v0=")
	ts := r.Header.Get(ZoomTimestampHeader)
	for _, k := range z.keys {
		if CheckHMAC(sha256.New, [][]byte{k}, EncodingHex, []string{sig}, []byte("v0:"), []byte(ts), []byte(":"), body) == nil {
			return k
		}
	}
	return z.keys[0]
}

// validZoomPlainToken reports whether tok may be answered: 1 to
// maxZoomPlainToken bytes of printable ASCII other than ':'.
func validZoomPlainToken(tok string) bool {
	if len(tok) == 0 || len(tok) > maxZoomPlainToken {
		return false
	}
	for i := 0; i < len(tok); i++ {
		if c := tok[i]; c < 0x21 || c > 0x7e || c == ':' {
			return false
		}
	}
	return true
}

// UnmarshalCaddyfile sets up the scheme from the Caddyfile tokens after
// `verify`. Syntax:
//
//	zoom [<secret_token>...] {
//		secret    <secret_token>...
//		tolerance <duration>
//	}
func (z *Zoom) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return z.parseCaddyfile(d)
}

// Interface guards
var (
	_ handshakingScheme = (*Zoom)(nil)
	_ TypeDefaulter     = (*Zoom)(nil)
)
