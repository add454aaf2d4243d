package verifiers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// Twitch verifies Twitch EventSub webhooks: Twitch-Eventsub-Message-
// Signature is "sha256=" and the hex HMAC-SHA256, keyed with the
// subscription's secret, of Twitch-Eventsub-Message-Id,
// Twitch-Eventsub-Message-Timestamp (RFC 3339, as received) and the raw
// body, joined without separators (what Twitch's CLI signs). The timestamp
// must be within tolerance (default 10 minutes, the age Twitch's docs tell
// receivers to refuse), either way. Several secrets mean rotation.
//
// A subscription starts with a webhook_callback_verification message
// (Twitch-Eventsub-Message-Type), signed like the others: once verified,
// HandshakePOST answers it with its challenge as 200 text/plain, as
// Twitch wants, and it is never queued. A revocation message is an event.
type Twitch struct {
	TimestampedConfig

	hmac HMAC
}

// The headers Twitch sends with an EventSub message.
const (
	TwitchIDHeader        = "Twitch-Eventsub-Message-Id"
	TwitchTimestampHeader = "Twitch-Eventsub-Message-Timestamp"
	TwitchSignatureHeader = "Twitch-Eventsub-Message-Signature"
	TwitchTypeHeader      = "Twitch-Eventsub-Message-Type"
	TwitchSubTypeHeader   = "Twitch-Eventsub-Subscription-Type"
)

// DefaultTwitchTolerance is the replay window of Twitch messages.
const DefaultTwitchTolerance = 10 * time.Minute

// maxTwitchChallenge bounds the challenge echoed to a verification.
const maxTwitchChallenge = 256

// twitchPending is the status of a subscription Twitch is verifying.
const twitchPending = "webhook_callback_verification_pending"

// CaddyModule returns the Caddy module information.
func (Twitch) CaddyModule() caddy.ModuleInfo {
	return moduleInfo[Twitch]("webhooks.verifiers.twitch")
}

// Provision sets up the HMAC check Twitch's signature is.
func (tw *Twitch) Provision(ctx caddy.Context) error {
	tol, err := tw.ToleranceConfig.compile(DefaultTwitchTolerance)
	if err != nil {
		return err
	}
	tw.hmac = HMAC{SecretsConfig: SecretsConfig{Secrets: tw.Secrets}, Header: TwitchSignatureHeader, Prefix: "sha256=",
		TimestampHeader: TwitchTimestampHeader, TimestampFormat: "rfc3339", IDHeader: TwitchIDHeader,
		SignedContent: "{id}{timestamp}{body}", ToleranceConfig: ToleranceConfig{Tolerance: caddy.Duration(tol)}}
	return tw.hmac.Provision(ctx)
}

// Verify checks the message's signature and timestamp.
func (tw *Twitch) Verify(r *http.Request, body []byte, now time.Time) error {
	_, err := tw.VerifyKey(r, body, now)
	return err
}

// VerifyKey is Verify, returning the position among the configured
// secrets of the one that matched (KeyVerifier).
func (tw *Twitch) VerifyKey(r *http.Request, body []byte, now time.Time) (int, error) {
	return tw.hmac.VerifyKey(r, body, now)
}

// HandshakePOST answers a verified webhook_callback_verification message
// with its challenge (200 text/plain); a challenge that is not 1 to 256
// printable ASCII characters gets 401 INVALID_SIGNATURE_FORMAT. The
// message type header is not signed, so a body of a subscription pending
// its verification is one too, whatever that header says: a captured
// verification resent without it is answered, never queued. Any other
// message returns false and is handled as an event.
func (*Twitch) HandshakePOST(w http.ResponseWriter, r *http.Request, body []byte) bool {
	byHeader := r.Header.Get(TwitchTypeHeader) == "webhook_callback_verification"
	if !byHeader && !bytes.Contains(body, []byte(twitchPending)) {
		return false
	}
	var msg struct {
		Challenge    *string `json:"challenge"`
		Subscription struct {
			Status string `json:"status"`
		} `json:"subscription"`
	}
	err := json.Unmarshal(body, &msg)
	if !byHeader && (err != nil || msg.Subscription.Status != twitchPending) {
		return false
	}
	if err != nil || msg.Challenge == nil || !validTwitchChallenge(*msg.Challenge) {
		handshakeMalformed(w, fmt.Sprintf("a verification's challenge must be 1 to %d printable ASCII characters", maxTwitchChallenge))
		return true
	}
	handshakeText(w, *msg.Challenge)
	return true
}

// validTwitchChallenge reports whether c may be echoed: 1 to
// maxTwitchChallenge printable ASCII characters, none that HTML gives a
// meaning (the answer is text/plain with nosniff; this is a second fence).
func validTwitchChallenge(c string) bool {
	if len(c) == 0 || len(c) > maxTwitchChallenge {
		return false
	}
	for i := 0; i < len(c); i++ {
		if b := c[i]; b < 0x21 || b > 0x7e || bytes.IndexByte([]byte("<>&\"'`"), b) >= 0 {
			return false
		}
	}
	return true
}

// HandshakeGET does nothing: Twitch has no handshake by GET.
func (*Twitch) HandshakeGET(w http.ResponseWriter, r *http.Request) bool { return false }

// KeyCount is how many secrets are configured (KeyVerifier).
func (tw *Twitch) KeyCount() int { return len(tw.Secrets) }

// DefaultIDFrom returns the message id: the same when Twitch resends a
// message.
func (*Twitch) DefaultIDFrom() []IDRule { return []IDRule{idHeader(TwitchIDHeader)} }

// DefaultTypeFrom returns the subscription type (channel.follow, ...).
func (*Twitch) DefaultTypeFrom() []TypeRule { return types(idHeader(TwitchSubTypeHeader)) }

// UnmarshalCaddyfile sets up the scheme from the Caddyfile tokens after
// `verify`. Syntax:
//
//	twitch [<secret>...] {
//		secret    <secret>...
//		tolerance <duration>
//	}
func (tw *Twitch) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return tw.TimestampedConfig.parseCaddyfile(d)
}

// Interface guards
var (
	_ scheme        = (*Twitch)(nil)
	_ Handshaker    = (*Twitch)(nil)
	_ TypeDefaulter = (*Twitch)(nil)
)
