package verifiers

import (
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The official Slack vector: the example of Slack's "Verifying requests
// from Slack" docs, as used by slackapi/python-slack-sdk
// tests/slack_sdk/signature/test_signature_verifier.py @ae87985e (text
// checked at 0756c47d): signing_secret, body, timestamp and
// valid_signature; the test's MockClock returns the same timestamp, and
// test_is_valid_request_invalid_body appends "------" to the body.
const (
	slackVecSecret = "8f742231b10e8888abcd99yyyzzz85a5"
	slackVecTS     = "1531420618"
	slackVecNow    = 1531420618
	slackVecBody   = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
	slackVecSig    = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
	slackVecHex    = "a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
)

// slackSign returns the X-Slack-Signature of body at ts, computed
// independently of the module.
func slackSign(secret, ts, body string) string {
	return "v0=" + EncodingHex.Encode(hmacOf(sha256.New, []byte(secret), []byte("v0:"+ts+":"+body)))
}

func TestSlackVerify(t *testing.T) {
	one := Slack{TimestampedConfig: timestamped(0, slackVecSecret)}
	at := time.Unix(slackVecNow, 0)
	hdr := func(ts, sig string) []string {
		return []string{"X-Slack-Request-Timestamp", ts, "X-Slack-Signature", sig}
	}
	tsPlus := func(d int64) string { return strconv.FormatInt(slackVecNow+d, 10) }

	runVerifyCases(t, newRequest, []verifyCase[Slack]{
		{name: "official docs vector", cfg: one, headers: hdr(slackVecTS, slackVecSig), body: slackVecBody, now: at},
		{name: "sdk: invalid body", cfg: one, headers: hdr(slackVecTS, slackVecSig), body: slackVecBody + "------", now: at, want: ErrMismatch},
		{name: "sdk: expiration (real clock)", cfg: one, headers: hdr(slackVecTS, slackVecSig), body: slackVecBody, now: time.Now(), want: ErrTimestamp},
		{name: "sdk: missing headers", cfg: one, body: slackVecBody, now: at, want: ErrFormat},
		{name: "secret with one letter changed", cfg: Slack{TimestampedConfig: timestamped(0, "8f742231b10e8888abcd99yyyzzz85a6")}, headers: hdr(slackVecTS, slackVecSig), body: slackVecBody, now: at, want: ErrMismatch},
		{name: "signed timestamp differs", cfg: one, headers: hdr(tsPlus(1), slackVecSig), body: slackVecBody, now: at, want: ErrMismatch},
		{name: "wrong version v1=", cfg: one, headers: hdr(slackVecTS, "v1="+slackVecHex), body: slackVecBody, now: at, want: ErrFormat},
		{name: "missing signature", cfg: one, headers: []string{"X-Slack-Request-Timestamp", slackVecTS}, body: slackVecBody, now: at, want: ErrFormat},
		{name: "missing timestamp", cfg: one, headers: []string{"X-Slack-Signature", slackVecSig}, body: slackVecBody, now: at, want: ErrFormat},
		{name: "non-numeric timestamp", cfg: one, headers: hdr("1531420618.0", slackVecSig), body: slackVecBody, now: at, want: ErrFormat},
		{name: "negative timestamp", cfg: one, headers: hdr("-1531420618", slackVecSig), body: slackVecBody, now: at, want: ErrFormat},
		{name: "stale and malformed is a format error", cfg: one, headers: hdr("1", "v0=abc"), body: slackVecBody, now: at, want: ErrFormat},
		{name: "events API JSON", cfg: one, headers: hdr(slackVecTS, slackSign(slackVecSecret, slackVecTS, `{"type":"event_callback","event_id":"Ev1"}`)), body: `{"type":"event_callback","event_id":"Ev1"}`, now: at},
		{name: "events API JSON re-serialized", cfg: one, headers: hdr(slackVecTS, slackSign(slackVecSecret, slackVecTS, `{"type":"event_callback","event_id":"Ev1"}`)), body: `{"type": "event_callback", "event_id": "Ev1"}`, now: at, want: ErrMismatch},
	}, slackVecSecret, slackVecHex)
}

func TestSlackHandshake(t *testing.T) {
	s := provision(t, Slack{TimestampedConfig: timestamped(0, slackVecSecret)})
	for _, tc := range []struct {
		name string
		body string
		want string // the answer body; "" means not a handshake
	}{
		{name: "url_verification", body: `{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`, want: `{"challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}`},
		{name: "spaced JSON", body: "{\n  \"type\": \"url_verification\",\n  \"challenge\": \"abc\"\n}", want: `{"challenge":"abc"}`},
		{name: "challenge with quotes is re-encoded", body: `{"type":"url_verification","challenge":"a\"b\\c"}`, want: `{"challenge":"a\"b\\c"}`},
		{name: "empty challenge", body: `{"type":"url_verification","challenge":""}`, want: `{"challenge":""}`},
		{name: "no challenge", body: `{"type":"url_verification"}`},
		{name: "challenge not a string", body: `{"type":"url_verification","challenge":42}`},
		{name: "event callback", body: `{"type":"event_callback","event_id":"Ev1","event":{"type":"message","text":"url_verification"}}`},
		{name: "top-level challenge, other type", body: `{"type":"event_callback","challenge":"x","event":{"text":"url_verification"}}`},
		{name: "nested url_verification type", body: `{"type":"event_callback","event":{"type":"url_verification","challenge":"x"}}`},
		{name: "form body", body: "type=url_verification&challenge=x"},
		{name: "invalid JSON", body: `{"type":"url_verification","challenge":"x"`},
		{name: "empty body", body: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			got := s.HandshakePOST(w, newRequest(), []byte(tc.body))
			if got != (tc.want != "") {
				t.Fatalf("HandshakePOST = %v, want %v", got, tc.want != "")
			}
			if !got {
				if w.Code != http.StatusOK || w.Body.Len() != 0 || len(w.Header()) != 0 {
					t.Fatalf("wrote an answer for a non-handshake: %d %q", w.Code, w.Body.String())
				}
				return
			}
			if w.Code != http.StatusOK {
				t.Fatalf("status %d", w.Code)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type %q", ct)
			}
			var answer, want map[string]any
			if err := json.Unmarshal(w.Body.Bytes(), &answer); err != nil {
				t.Fatalf("answer %q is not JSON: %v", w.Body.String(), err)
			}
			if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(answer, want) {
				t.Fatalf("answer %s, want %s", w.Body.String(), tc.want)
			}
		})
	}

	// Slack's handshake is a POST only
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, "/hook?challenge=x&type=url_verification", nil)
	if s.HandshakeGET(w, r) || w.Body.Len() != 0 {
		t.Fatal("HandshakeGET answered")
	}
}

// FuzzSlackHeader feeds arbitrary X-Slack-Signature and
// X-Slack-Request-Timestamp values and bodies. Verify must never panic,
// must never report anything but the documented errors, and must accept
// only "v0=" + the lowercase hex HMAC of the exact timestamp and body, with
// the timestamp within tolerance.
func FuzzSlackHeader(f *testing.F) {
	f.Add([]byte(slackVecBody), slackVecTS, slackVecSig)
	f.Add([]byte(slackVecBody), slackVecTS, "v0="+strings.ToUpper(slackVecHex))
	f.Add([]byte(slackVecBody), slackVecTS, slackVecSig[:66])
	f.Add([]byte(slackVecBody), "1531420919", slackVecSig)
	f.Add([]byte(slackVecBody+"------"), slackVecTS, slackVecSig)
	f.Add([]byte(""), "", "v0=")
	f.Add([]byte("x"), "-1", "v1=00")

	secrets := []string{"new secret", slackVecSecret}
	s := provision(f, Slack{TimestampedConfig: timestamped(0, secrets...)})
	now := time.Unix(slackVecNow, 0)

	f.Fuzz(func(t *testing.T, body []byte, ts, sig string) {
		r := newRequest()
		r.Header["X-Slack-Request-Timestamp"] = []string{ts}
		r.Header["X-Slack-Signature"] = []string{sig}
		if fuzzRefused(t, s.Verify(r, body, now), true, slackVecSecret) {
			return
		}
		if sec, err := ParseUnixSeconds(ts); err != nil || sec < slackVecNow-300 || sec > slackVecNow+300 {
			t.Fatalf("accepted timestamp %q", ts)
		}
		for _, key := range secrets {
			if sig == "v0="+EncodingHex.Encode(hmacOf(sha256.New, []byte(key), []byte("v0:"+ts+":"), body)) {
				return
			}
		}
		t.Fatalf("accepted %q, which is not the signature of the content", sig)
	})
}
