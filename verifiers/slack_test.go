package verifiers

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
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

func provisionSlack(t testing.TB, s Slack) *Slack {
	t.Helper()
	if err := s.Provision(testContext(t)); err != nil {
		t.Fatalf("provision: %v", err)
	}
	return &s
}

// slackSign returns the X-Slack-Signature of body at ts, computed
// independently of the module.
func slackSign(secret, ts, body string) string {
	return "v0=" + EncodingHex.Encode(hmacOf(sha256.New, []byte(secret), []byte("v0:"+ts+":"+body)))
}

func TestSlackVerify(t *testing.T) {
	one := Slack{Secrets: []string{slackVecSecret}}
	at := time.Unix(slackVecNow, 0)
	hdr := func(ts, sig string) []string {
		return []string{"X-Slack-Request-Timestamp", ts, "X-Slack-Signature", sig}
	}
	tsPlus := func(d int64) string { return strconv.FormatInt(slackVecNow+d, 10) }
	signedAt := func(d int64) []string { return hdr(tsPlus(d), slackSign(slackVecSecret, tsPlus(d), slackVecBody)) }

	for _, tc := range []struct {
		name    string
		cfg     Slack
		headers []string
		body    string
		now     time.Time
		want    error
	}{
		{name: "official docs vector", cfg: one, headers: hdr(slackVecTS, slackVecSig), body: slackVecBody, now: at},
		{name: "sdk: invalid body", cfg: one, headers: hdr(slackVecTS, slackVecSig), body: slackVecBody + "------", now: at, want: ErrMismatch},
		{name: "sdk: expiration (real clock)", cfg: one, headers: hdr(slackVecTS, slackVecSig), body: slackVecBody, now: time.Now(), want: ErrTimestamp},
		{name: "sdk: missing headers", cfg: one, body: slackVecBody, now: at, want: ErrFormat},
		{name: "header names in any case", cfg: one, headers: []string{"x-slack-request-timestamp", slackVecTS, "x-slack-signature", slackVecSig}, body: slackVecBody, now: at},
		{name: "wrong secret", cfg: Slack{Secrets: []string{"8f742231b10e8888abcd99yyyzzz85a6"}}, headers: hdr(slackVecTS, slackVecSig), body: slackVecBody, now: at, want: ErrMismatch},
		{name: "one body byte changed", cfg: one, headers: hdr(slackVecTS, slackVecSig), body: strings.Replace(slackVecBody, "foobar", "foobaz", 1), now: at, want: ErrMismatch},
		{name: "signed timestamp differs", cfg: one, headers: hdr(tsPlus(1), slackVecSig), body: slackVecBody, now: at, want: ErrMismatch},
		{name: "one signature digit changed", cfg: one, headers: hdr(slackVecTS, "v0=b"+slackVecHex[1:]), body: slackVecBody, now: at, want: ErrMismatch},
		{name: "uppercase hex", cfg: one, headers: hdr(slackVecTS, "v0="+strings.ToUpper(slackVecHex)), body: slackVecBody, now: at, want: ErrMismatch},
		{name: "truncated by one digit", cfg: one, headers: hdr(slackVecTS, slackVecSig[:len(slackVecSig)-1]), body: slackVecBody, now: at, want: ErrFormat},
		{name: "truncated by one byte", cfg: one, headers: hdr(slackVecTS, slackVecSig[:len(slackVecSig)-2]), body: slackVecBody, now: at, want: ErrFormat},
		{name: "extra digits", cfg: one, headers: hdr(slackVecTS, slackVecSig+"00"), body: slackVecBody, now: at, want: ErrFormat},
		{name: "wrong version v1=", cfg: one, headers: hdr(slackVecTS, "v1="+slackVecHex), body: slackVecBody, now: at, want: ErrFormat},
		{name: "uppercase version V0=", cfg: one, headers: hdr(slackVecTS, "V0="+slackVecHex), body: slackVecBody, now: at, want: ErrFormat},
		{name: "bare hex", cfg: one, headers: hdr(slackVecTS, slackVecHex), body: slackVecBody, now: at, want: ErrFormat},
		{name: "prefix only", cfg: one, headers: hdr(slackVecTS, "v0="), body: slackVecBody, now: at, want: ErrFormat},
		{name: "missing signature", cfg: one, headers: []string{"X-Slack-Request-Timestamp", slackVecTS}, body: slackVecBody, now: at, want: ErrFormat},
		{name: "missing timestamp", cfg: one, headers: []string{"X-Slack-Signature", slackVecSig}, body: slackVecBody, now: at, want: ErrFormat},
		{name: "non-numeric timestamp", cfg: one, headers: hdr("1531420618.0", slackVecSig), body: slackVecBody, now: at, want: ErrFormat},
		{name: "negative timestamp", cfg: one, headers: hdr("-1531420618", slackVecSig), body: slackVecBody, now: at, want: ErrFormat},
		{name: "rotation: second secret matches", cfg: Slack{Secrets: []string{"new secret", slackVecSecret}}, headers: hdr(slackVecTS, slackVecSig), body: slackVecBody, now: at},
		{name: "rotation: no secret matches", cfg: Slack{Secrets: []string{"new secret", "old secret"}}, headers: hdr(slackVecTS, slackVecSig), body: slackVecBody, now: at, want: ErrMismatch},
		{name: "exactly 300s old", cfg: one, headers: signedAt(-300), body: slackVecBody, now: at},
		{name: "301s old", cfg: one, headers: signedAt(-301), body: slackVecBody, now: at, want: ErrTimestamp},
		{name: "exactly 300s ahead", cfg: one, headers: signedAt(300), body: slackVecBody, now: at},
		{name: "301s ahead", cfg: one, headers: signedAt(301), body: slackVecBody, now: at, want: ErrTimestamp},
		{name: "stale and malformed is a format error", cfg: one, headers: hdr("1", "v0=abc"), body: slackVecBody, now: at, want: ErrFormat},
		{name: "tolerance 10m", cfg: Slack{Secrets: []string{slackVecSecret}, Tolerance: caddy.Duration(10 * time.Minute)}, headers: signedAt(-600), body: slackVecBody, now: at},
		{name: "events API JSON", cfg: one, headers: hdr(slackVecTS, slackSign(slackVecSecret, slackVecTS, `{"type":"event_callback","event_id":"Ev1"}`)), body: `{"type":"event_callback","event_id":"Ev1"}`, now: at},
		{name: "events API JSON re-serialized", cfg: one, headers: hdr(slackVecTS, slackSign(slackVecSecret, slackVecTS, `{"type":"event_callback","event_id":"Ev1"}`)), body: `{"type": "event_callback", "event_id": "Ev1"}`, now: at, want: ErrMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := provisionSlack(t, tc.cfg)
			err := s.Verify(newRequest(tc.headers...), []byte(tc.body), tc.now)
			checkErr(t, err, tc.want, slackVecSecret, slackVecHex)
		})
	}
}

func TestSlackHandshake(t *testing.T) {
	s := provisionSlack(t, Slack{Secrets: []string{slackVecSecret}})
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

func TestSlackProvision(t *testing.T) {
	t.Setenv("HOOKLINE_TEST_SLACK", slackVecSecret)
	for _, tc := range []struct {
		name    string
		cfg     Slack
		wantTol time.Duration
		wantErr bool
	}{
		{name: "literal", cfg: Slack{Secrets: []string{slackVecSecret}}, wantTol: 5 * time.Minute},
		{name: "env", cfg: Slack{Secrets: []string{"{env.HOOKLINE_TEST_SLACK}"}}, wantTol: 5 * time.Minute},
		{name: "unset old secret ignored", cfg: Slack{Secrets: []string{"{env.HOOKLINE_TEST_UNSET_XYZ}", "{env.HOOKLINE_TEST_SLACK}"}}, wantTol: 5 * time.Minute},
		{name: "tolerance kept", cfg: Slack{Secrets: []string{slackVecSecret}, Tolerance: caddy.Duration(time.Minute)}, wantTol: time.Minute},
		{name: "none", wantErr: true},
		{name: "all empty", cfg: Slack{Secrets: []string{""}}, wantErr: true},
		{name: "negative tolerance", cfg: Slack{Secrets: []string{slackVecSecret}, Tolerance: -1}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.cfg
			err := s.Provision(testContext(t))
			if tc.wantErr {
				if err == nil {
					t.Fatal("want error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if time.Duration(s.Tolerance) != tc.wantTol {
				t.Fatalf("tolerance %v, want %v", time.Duration(s.Tolerance), tc.wantTol)
			}
			r := newRequest("X-Slack-Request-Timestamp", slackVecTS, "X-Slack-Signature", slackVecSig)
			checkErr(t, s.Verify(r, []byte(slackVecBody), time.Unix(slackVecNow, 0)), nil)
		})
	}
}

func TestSlackDefaultIDFrom(t *testing.T) {
	got := ruleStrings((&Slack{}).DefaultIDFrom())
	if want := []string{"json event_id"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("DefaultIDFrom() = %v, want %v", got, want)
	}
}

func TestSlackUnmarshalCaddyfile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		input   string
		want    Slack
		wantErr bool
	}{
		{name: "one secret", input: `slack {env.SLACK_SIGNING_SECRET}`, want: Slack{Secrets: []string{"{env.SLACK_SIGNING_SECRET}"}}},
		{name: "rotation", input: `slack new old`, want: Slack{Secrets: []string{"new", "old"}}},
		{name: "block", input: "slack a {\n secret b\n tolerance 2m\n}", want: Slack{Secrets: []string{"a", "b"}, Tolerance: caddy.Duration(2 * time.Minute)}},
		{name: "secret without value", input: "slack {\n secret\n}", wantErr: true},
		{name: "bad tolerance", input: "slack s {\n tolerance x\n}", wantErr: true},
		{name: "unknown option", input: "slack s {\n verify_token t\n}", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s Slack
			err := s.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got %+v, want error", s)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", s, tc.want)
			}
		})
	}
}

func TestSlackModule(t *testing.T) {
	ctx := testContext(t)
	v, err := ctx.LoadModuleByID("webhooks.verifiers.slack", json.RawMessage(`{"secrets":["`+slackVecSecret+`"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := v.(IDDefaulter); !ok {
		t.Fatalf("%T is not an IDDefaulter", v)
	}
	if _, ok := v.(Handshaker); !ok {
		t.Fatalf("%T is not a Handshaker", v)
	}
	r := newRequest("X-Slack-Request-Timestamp", slackVecTS, "X-Slack-Signature", slackVecSig)
	checkErr(t, v.(Verifier).Verify(r, []byte(slackVecBody), time.Unix(slackVecNow, 0)), nil)
	if _, err := ctx.LoadModuleByID("webhooks.verifiers.slack", json.RawMessage(`{}`)); err == nil {
		t.Fatal("module without secrets provisioned")
	}
	if _, err := ctx.LoadModuleByID("webhooks.verifiers.slack", json.RawMessage(`{"secrets":["x"],"signing_secret":"y"}`)); err == nil {
		t.Fatal("unknown JSON field accepted")
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
	s := provisionSlack(f, Slack{Secrets: secrets})
	now := time.Unix(slackVecNow, 0)

	f.Fuzz(func(t *testing.T, body []byte, ts, sig string) {
		r := newRequest()
		r.Header["X-Slack-Request-Timestamp"] = []string{ts}
		r.Header["X-Slack-Signature"] = []string{sig}
		err := s.Verify(r, body, now)
		if err != nil {
			if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrMismatch) && !errors.Is(err, ErrTimestamp) {
				t.Fatalf("undocumented error %v", err)
			}
			if strings.Contains(err.Error(), slackVecSecret) {
				t.Fatalf("error leaks the secret: %v", err)
			}
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

func BenchmarkVerifySlack(b *testing.B) {
	s := provisionSlack(b, Slack{Secrets: []string{slackVecSecret}})
	body := verifierBenchBody()
	r := newRequest("X-Slack-Request-Timestamp", slackVecTS, "X-Slack-Signature", slackSign(slackVecSecret, slackVecTS, string(body)))
	now := time.Unix(slackVecNow, 0)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := s.Verify(r, body, now); err != nil {
			b.Fatal(err)
		}
	}
}
