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

// Slack verifies Slack requests (Events API, interactivity, slash
// commands): the X-Slack-Signature header holds "v0=" and the lowercase hex
// HMAC-SHA256 of "v0:" + X-Slack-Request-Timestamp + ":" + the raw body,
// keyed with the app's signing secret as a plain string. The timestamp
// (integer Unix seconds) must be within tolerance of the current time in
// either direction (default 5m; a difference exactly equal to it is
// accepted), as python-slack-sdk checks it. Several secrets mean rotation:
// any one may match, so a regenerated signing secret can be rolled out
// without downtime.
//
// Slack's url_verification handshake (the JSON body
// {"type":"url_verification","challenge":...} sent when an Events API
// request URL is saved) is signed like any request; once the signature is
// verified, HandshakePOST answers it with {"challenge": ...} and it is
// never queued.
type Slack struct {
	// TimestampedConfig holds the app's signing secrets (plain strings)
	// and the tolerance (default 5m).
	TimestampedConfig

	keys      [][]byte
	tolerance time.Duration
}

// The headers Slack signs its requests with.
const (
	SlackSignatureHeader = "X-Slack-Signature"
	SlackTimestampHeader = "X-Slack-Request-Timestamp"
)

// CaddyModule returns the Caddy module information.
func (Slack) CaddyModule() caddy.ModuleInfo {
	return moduleInfo[Slack]("webhooks.verifiers.slack")
}

// Provision resolves the secrets and fills in the default tolerance.
func (s *Slack) Provision(ctx caddy.Context) (err error) {
	s.keys, s.tolerance, err = s.compile(DefaultTolerance)
	return err
}

// Verify checks the request's signature and timestamp.
func (s *Slack) Verify(r *http.Request, body []byte, now time.Time) error {
	_, err := s.VerifyKey(r, body, now)
	return err
}

// VerifyKey is Verify, returning the position among the configured
// secrets of the one that matched (KeyVerifier).
func (s *Slack) VerifyKey(r *http.Request, body []byte, now time.Time) (int, error) {
	k, err := s.verifyKey(r, body, now)
	return s.keyPosition(k), err
}

// verifyKey checks the request, returning the position of the matching
// key among those in effect.
func (s *Slack) verifyKey(r *http.Request, body []byte, now time.Time) (int, error) {
	return verifyV0(r, body, now, SlackSignatureHeader, SlackTimestampHeader, s.keys, s.tolerance)
}

// DefaultIDFrom returns the Events API event id in the body.
func (*Slack) DefaultIDFrom() []IDRule {
	return []IDRule{idJSON("event_id")}
}

// HandshakeGET returns false: Slack has no GET handshake.
func (*Slack) HandshakeGET(w http.ResponseWriter, r *http.Request) bool { return false }

// HandshakePOST answers Slack's url_verification request, which the
// ingress passes here only after its signature was verified: a JSON body
// whose top-level "type" is "url_verification" and whose "challenge" is a
// string gets 200 with {"challenge": <the same string>}. Any other body
// returns false and is handled as an event.
func (*Slack) HandshakePOST(w http.ResponseWriter, r *http.Request, body []byte) bool {
	// cheap test first: this runs for every verified Slack request
	if !bytes.Contains(body, []byte("url_verification")) {
		return false
	}
	var msg struct {
		Type      string  `json:"type"`
		Challenge *string `json:"challenge"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Type != "url_verification" || msg.Challenge == nil {
		return false
	}
	handshakeJSON(w, http.StatusOK, struct {
		Challenge string `json:"challenge"`
	}{*msg.Challenge})
	return true
}

// UnmarshalCaddyfile sets up the scheme from the Caddyfile tokens after
// `verify`. Syntax:
//
//	slack [<secret>...] {
//		secret    <secret>...
//		tolerance <duration>
//	}
func (s *Slack) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return s.parseCaddyfile(d)
}

// Interface guards
var _ handshakingScheme = (*Slack)(nil)

// verifyV0 checks the "v0" signature Slack and Zoom share: header sigHeader
// holds "v0=" and the hex HMAC-SHA256 of "v0:<timestamp>:<body>" under one
// of keys, the timestamp (Unix seconds) in header tsHeader, within
// tolerance of now.
func verifyV0(r *http.Request, body []byte, now time.Time, sigHeader, tsHeader string, keys [][]byte, tolerance time.Duration) (int, error) {
	raw := r.Header.Get(sigHeader)
	if raw == "" {
		return 0, errHeaderMissing(sigHeader)
	}
	sig, ok := strings.CutPrefix(raw, "v0=")
	if !ok {
		return 0, fmt.Errorf("%w: header %s does not start with v0=", ErrFormat, sigHeader)
	}
	if !EncodingHex.WellFormed(sig, sha256.Size) {
		return 0, fmt.Errorf("%w: header %s is not %d hex bytes", ErrFormat, sigHeader, sha256.Size)
	}
	ts, t, err := timestampHeader(r, tsHeader)
	if err != nil {
		return 0, err
	}
	if err := CheckTimestamp(t, now, tolerance); err != nil {
		return 0, err
	}
	return MatchHMAC(sha256.New, keys, EncodingHex, []string{sig}, []byte("v0:"), []byte(ts), []byte(":"), body)
}
