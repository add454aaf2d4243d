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

// Zoom publishes no signature vector with its secret. The values below
// follow Zoom's "Verify webhook events" docs
// (https://developers.zoom.us/docs/api/webhooks/#verify-webhook-events:
// "v0:" + x-zm-request-timestamp + ":" + the raw body, HMAC-SHA256 with the
// Secret Token, hex, "v0=" prefix), over the meeting.started body of
// zoom/webhook-sample README.md @e4d48a7 written compactly (that sample
// verifies JSON.stringify of the parsed body, so Zoom's body is compact),
// computed independently in Python (hmac, hashlib) and checked here.
//
// The url_validation vector is the one of elastic/beats
// x-pack/filebeat/input/http_endpoint/handler_test.go (validate_CRC_request:
// secret "secretValueTest", plainToken "qgg8vlvZRS6UYooatFL8Aw" from Zoom's
// "Validate your webhook endpoint" docs example, encryptedToken
// 70c1f2e2...), checked again in Python.
const (
	zoomSecret = "secretValueTest"
	zoomBody   = `{"event":"meeting.started","payload":{"account_id":"{ACCOUNT_ID}","object":{"duration":0,"start_time":"2021-11-02T20:43:19Z","timezone":"America/Denver","topic":"{TOPIC}","id":"{MEETING_ID}","type":4,"uuid":"{MEETING_UUID}","host_id":"{HOST_ID}"}},"event_ts":1635885799302}`
	zoomTS     = "1635885800"
	zoomNow    = 1635885800
	zoomHex    = "e952c3007f2260874a50d9417d8c1752c839bddf7edfb1b195e2333aded33363"

	zoomValidationBody = `{"payload":{"plainToken":"qgg8vlvZRS6UYooatFL8Aw"},"event_ts":1654503849680,"event":"endpoint.url_validation"}`
	zoomValidationTS   = "1654503850"
	zoomValidationHex  = "f5919686e6aa295e87e8213e7bb6ba5a58d875168327422f06f14af15a0a2022"
	zoomEncrypted      = "70c1f2e2e6ca2d39297490d1f9142c7d701415ea8e6151f6562a08fa657a40ff"
)

// zoomSign returns the x-zm-signature of body at ts, computed
// independently of the module.
func zoomSign(secret, ts, body string) string {
	return "v0=" + EncodingHex.Encode(hmacOf(sha256.New, []byte(secret), []byte("v0:"+ts+":"+body)))
}

func TestZoomVerify(t *testing.T) {
	one := Zoom{TimestampedConfig: timestamped(0, zoomSecret)}
	at := time.Unix(zoomNow, 0)
	hdr := func(ts, sig string) []string {
		return []string{ZoomTimestampHeader, ts, ZoomSignatureHeader, sig}
	}
	if got := zoomSign(zoomSecret, zoomTS, zoomBody); got != "v0="+zoomHex {
		t.Fatalf("independent signer: %s", got)
	}
	runVerifyCases(t, newRequest, []verifyCase[Zoom]{
		{name: "docs recipe over the sample app's payload", cfg: one, headers: hdr(zoomTS, "v0="+zoomHex), body: zoomBody, now: at},
		{name: "url_validation request is signed too", cfg: one, headers: hdr(zoomValidationTS, "v0="+zoomValidationHex), body: zoomValidationBody, now: time.Unix(1654503850, 0)},
		{name: "re-serialized body", cfg: one, headers: hdr(zoomTS, "v0="+zoomHex), body: strings.Replace(zoomBody, `,"event_ts"`, `, "event_ts"`, 1), now: at, want: ErrMismatch},
		{name: "stale (real clock)", cfg: one, headers: hdr(zoomTS, "v0="+zoomHex), body: zoomBody, now: time.Now(), want: ErrTimestamp},
		{name: "other secret", cfg: Zoom{TimestampedConfig: timestamped(0, "secretValueTesu")}, headers: hdr(zoomTS, "v0="+zoomHex), body: zoomBody, now: at, want: ErrMismatch},
		{name: "signed timestamp differs", cfg: one, headers: hdr(strconv.Itoa(zoomNow+1), "v0="+zoomHex), body: zoomBody, now: at, want: ErrMismatch},
		{name: "tolerance 1m, 61s old", cfg: Zoom{TimestampedConfig: timestamped(time.Minute, zoomSecret)}, headers: hdr(zoomTS, "v0="+zoomHex), body: zoomBody, now: at.Add(61 * time.Second), want: ErrTimestamp},
		{name: "tolerance 1m, 60s old", cfg: Zoom{TimestampedConfig: timestamped(time.Minute, zoomSecret)}, headers: hdr(zoomTS, "v0="+zoomHex), body: zoomBody, now: at.Add(60 * time.Second)},
		{name: "v1 label", cfg: one, headers: hdr(zoomTS, "v1="+zoomHex), body: zoomBody, now: at, want: ErrFormat},
		{name: "missing timestamp", cfg: one, headers: []string{ZoomSignatureHeader, "v0=" + zoomHex}, body: zoomBody, now: at, want: ErrFormat},
		{name: "millisecond timestamp", cfg: one, headers: hdr(zoomTS+"000", "v0="+zoomHex), body: zoomBody, now: at, want: ErrTimestamp},
	}, zoomSecret, zoomHex)
}

func TestZoomHandshake(t *testing.T) {
	z := provision(t, Zoom{TimestampedConfig: timestamped(0, zoomSecret, "second secret")})
	for _, tc := range []struct {
		name   string
		body   string
		status int
		want   string // the answer body; "" means not a handshake
	}{
		{name: "docs example (elastic/beats vector)", body: zoomValidationBody, status: 200, want: `{"plainToken":"qgg8vlvZRS6UYooatFL8Aw","encryptedToken":"` + zoomEncrypted + `"}`},
		{name: "spaced JSON", body: "{\n \"event\": \"endpoint.url_validation\",\n \"payload\": {\"plainToken\": \"qgg8vlvZRS6UYooatFL8Aw\"}\n}", status: 200, want: `{"plainToken":"qgg8vlvZRS6UYooatFL8Aw","encryptedToken":"` + zoomEncrypted + `"}`},
		{name: "token with ':' is never signed", body: `{"event":"endpoint.url_validation","payload":{"plainToken":"v0:1:x"}}`, status: 401, want: `{"code":"INVALID_SIGNATURE_FORMAT"}`},
		{name: "empty token", body: `{"event":"endpoint.url_validation","payload":{"plainToken":""}}`, status: 401, want: `{"code":"INVALID_SIGNATURE_FORMAT"}`},
		{name: "token with a space", body: `{"event":"endpoint.url_validation","payload":{"plainToken":"a b"}}`, status: 401, want: `{"code":"INVALID_SIGNATURE_FORMAT"}`},
		{name: "token too long", body: `{"event":"endpoint.url_validation","payload":{"plainToken":"` + strings.Repeat("a", maxZoomPlainToken+1) + `"}}`, status: 401, want: `{"code":"INVALID_SIGNATURE_FORMAT"}`},
		{name: "longest token", body: `{"event":"endpoint.url_validation","payload":{"plainToken":"` + strings.Repeat("a", maxZoomPlainToken) + `"}}`, status: 200},
		{name: "no plainToken", body: `{"event":"endpoint.url_validation","payload":{}}`},
		{name: "plainToken not a string", body: `{"event":"endpoint.url_validation","payload":{"plainToken":1}}`},
		{name: "an event mentioning it", body: `{"event":"meeting.started","payload":{"object":{"topic":"endpoint.url_validation","plainToken":"x"}}}`},
		{name: "event", body: zoomBody},
		{name: "invalid JSON", body: `{"event":"endpoint.url_validation"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			got := z.HandshakePOST(w, newRequest(), []byte(tc.body))
			if got != (tc.status != 0) {
				t.Fatalf("HandshakePOST = %v", got)
			}
			if !got {
				if w.Body.Len() != 0 || len(w.Header()) != 0 {
					t.Fatalf("wrote an answer for a non-handshake: %q", w.Body.String())
				}
				return
			}
			if w.Code != tc.status || w.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("%d %q", w.Code, w.Header().Get("Content-Type"))
			}
			var answer map[string]any
			if err := json.Unmarshal(w.Body.Bytes(), &answer); err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				return
			}
			var want map[string]any
			if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			if tc.status != 200 {
				delete(answer, "error")
			}
			if !reflect.DeepEqual(answer, want) {
				t.Fatalf("answer %s, want %s", w.Body.String(), tc.want)
			}
		})
	}
	// rotation: the secret that signed the challenge answers it
	t.Run("answered with the signing secret", func(t *testing.T) {
		for _, key := range []string{zoomSecret, "second secret"} {
			r := newRequest(ZoomTimestampHeader, zoomValidationTS, ZoomSignatureHeader, zoomSign(key, zoomValidationTS, zoomValidationBody))
			w := httptest.NewRecorder()
			if !z.HandshakePOST(w, r, []byte(zoomValidationBody)) {
				t.Fatal("not answered")
			}
			var answer map[string]string
			if err := json.Unmarshal(w.Body.Bytes(), &answer); err != nil {
				t.Fatal(err)
			}
			if want := EncodingHex.Encode(hmacOf(sha256.New, []byte(key), []byte("qgg8vlvZRS6UYooatFL8Aw"))); answer["encryptedToken"] != want {
				t.Fatalf("signed with %q: encryptedToken %s, want %s", key, answer["encryptedToken"], want)
			}
		}
	})
	// no GET handshake
	w := httptest.NewRecorder()
	if z.HandshakeGET(w, httptest.NewRequest(http.MethodGet, "/?plainToken=x", nil)) || w.Body.Len() != 0 {
		t.Fatal("HandshakeGET answered")
	}
}

// FuzzZoomHeader feeds arbitrary x-zm-signature and x-zm-request-timestamp
// values and bodies: Verify must never panic, report only the documented
// errors, and accept only "v0=" + the lowercase hex HMAC of the exact
// timestamp and body, with the timestamp within tolerance. A url_validation
// answer must never be a valid signature.
func FuzzZoomHeader(f *testing.F) {
	f.Add([]byte(zoomBody), zoomTS, "v0="+zoomHex)
	f.Add([]byte(zoomBody), zoomTS, "v0="+strings.ToUpper(zoomHex))
	f.Add([]byte(zoomBody), zoomTS, "v0="+zoomHex[:63])
	f.Add([]byte(zoomBody), "1635886101", "v0="+zoomHex)
	f.Add([]byte("qgg8vlvZRS6UYooatFL8Aw"), zoomTS, "v0="+zoomEncrypted)
	f.Add([]byte(""), "", "v0=")

	secrets := []string{"new secret", zoomSecret}
	z := provision(f, Zoom{TimestampedConfig: timestamped(0, secrets...)})
	now := time.Unix(zoomNow, 0)

	f.Fuzz(func(t *testing.T, body []byte, ts, sig string) {
		r := newRequest()
		r.Header[http.CanonicalHeaderKey(ZoomTimestampHeader)] = []string{ts}
		r.Header[http.CanonicalHeaderKey(ZoomSignatureHeader)] = []string{sig}
		if fuzzRefused(t, z.Verify(r, body, now), true, zoomSecret) {
			return
		}
		if sec, err := ParseUnixSeconds(ts); err != nil || sec < zoomNow-300 || sec > zoomNow+300 {
			t.Fatalf("accepted timestamp %q", ts)
		}
		for _, key := range secrets {
			if sig == zoomSign(key, ts, string(body)) {
				return
			}
		}
		t.Fatalf("accepted %q, which is not the signature of the content", sig)
	})
}
