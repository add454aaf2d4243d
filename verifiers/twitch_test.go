package verifiers

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A community library's test case (twitch-rs/twitch_api src/eventsub/mod.rs
// verify_request @6f98d0a3; Twitch publishes no vector and no server SDK):
// its secret, headers and 458-byte body, the signature recomputed
// independently (Python hmac) and matching.
const (
	twitchSecret = "secretabcd"
	twitchID     = "ae2ff348-e102-16be-a3eb-6830c1bf38d2"
	twitchTS     = "2021-02-19T23:47:00.8091512Z"
	twitchSig    = "sha256=d10f5bd9474b7ac7bd7105eb79c2d52768b4d0cd2a135982c3bf5a1d59a78823"
	twitchBody   = `{"subscription":{"id":"ae2ff348-e102-16be-a3eb-6830c1bf38d2","status":"enabled","type":"channel.follow","version":"1","condition":{"broadcaster_user_id":"44429626"},"transport":{"method":"webhook","callback":"null"},"created_at":"2021-02-19T23:47:00.7621315Z"},"event":{"user_id":"28408015","user_login":"testFromUser","user_name":"testFromUser","broadcaster_user_id":"44429626","broadcaster_user_login":"44429626","broadcaster_user_name":"testBroadcaster"}}`
)

func TestTwitchVerify(t *testing.T) {
	one := Twitch{TimestampedConfig: timestamped(0, twitchSecret)}
	at, _ := time.Parse(time.RFC3339Nano, twitchTS)
	hdr := func(sig, ts string) []string {
		return []string{TwitchIDHeader, twitchID, TwitchTimestampHeader, ts, TwitchSignatureHeader, sig}
	}
	runVerifyCases(t, newRequest, []verifyCase[Twitch]{
		{name: "community vector", cfg: one, headers: hdr(twitchSig, twitchTS), body: twitchBody, now: at},
		{name: "9 minutes later", cfg: one, headers: hdr(twitchSig, twitchTS), body: twitchBody, now: at.Add(9 * time.Minute)},
		{name: "11 minutes later", cfg: one, headers: hdr(twitchSig, twitchTS), body: twitchBody, now: at.Add(11 * time.Minute), want: ErrTimestamp},
		{name: "another message id", cfg: one, headers: []string{TwitchIDHeader, "ae2ff348-e102-16be-a3eb-6830c1bf38d3", TwitchTimestampHeader, twitchTS, TwitchSignatureHeader, twitchSig}, body: twitchBody, now: at, want: ErrMismatch},
		{name: "timestamp in Unix seconds", cfg: one, headers: hdr(twitchSig, "1613778420"), body: twitchBody, now: at, want: ErrFormat},
		{name: "no message id", cfg: one, headers: []string{TwitchTimestampHeader, twitchTS, TwitchSignatureHeader, twitchSig}, body: twitchBody, now: at, want: ErrFormat},
	}, twitchSecret)
}

// TestTwitchHandshake: a verified webhook_callback_verification is
// answered with its challenge as text/plain, a malformed challenge is
// refused, and any other message type is left to the ingress.
func TestTwitchHandshake(t *testing.T) {
	tw := provision(t, Twitch{TimestampedConfig: timestamped(0, twitchSecret)})
	call := func(msgType, challenge string) (*httptest.ResponseRecorder, bool) {
		b, _ := json.Marshal(map[string]any{"challenge": challenge, "subscription": map[string]string{"type": "channel.follow"}})
		r := newRequest(TwitchTypeHeader, msgType)
		w := httptest.NewRecorder()
		return w, tw.HandshakePOST(w, r, b)
	}
	w, handled := call("webhook_callback_verification", "pogchamp-kappa-360noscope-vohiyo")
	body, _ := io.ReadAll(w.Result().Body)
	if !handled || w.Code != http.StatusOK || string(body) != "pogchamp-kappa-360noscope-vohiyo" ||
		!strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") || w.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("verification: handled %v, %d %q %v", handled, w.Code, body, w.Header())
	}
	for _, bad := range []string{"", "<script>alert(1)</script>", strings.Repeat("a", maxTwitchChallenge+1), "two words"} {
		if w, handled := call("webhook_callback_verification", bad); !handled || w.Code != http.StatusUnauthorized || strings.Contains(w.Body.String(), bad+"\"") && bad != "" {
			t.Errorf("challenge %q: handled %v, %d %s", bad, handled, w.Code, w.Body.String())
		}
	}
	for _, typ := range []string{"notification", "revocation", ""} {
		if _, handled := call(typ, "x"); handled {
			t.Errorf("message type %q handled as a verification", typ)
		}
	}
	// a verification whose (unsigned) type header was stripped: its body
	// says so, and it is answered, not queued
	pending := []byte(`{"challenge":"abc-123","subscription":{"status":"webhook_callback_verification_pending","type":"channel.follow"}}`)
	w = httptest.NewRecorder()
	if !tw.HandshakePOST(w, newRequest(TwitchTypeHeader, "notification"), pending) || w.Code != http.StatusOK || w.Body.String() != "abc-123" {
		t.Errorf("a pending subscription's verification under another type: %d %q", w.Code, w.Body.String())
	}
	// a notification that merely mentions the status is an event
	mention := []byte(`{"subscription":{"status":"enabled"},"event":{"note":"webhook_callback_verification_pending"}}`)
	if tw.HandshakePOST(httptest.NewRecorder(), newRequest(TwitchTypeHeader, "notification"), mention) {
		t.Error("a notification mentioning the status handled as a verification")
	}
}
