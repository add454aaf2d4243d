package verifiers

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
)

// X publishes no test vector for its webhooks. The values below were
// computed independently of this package (Python:
// "sha256=" + base64.b64encode(hmac.new(secret, msg, hashlib.sha256).digest()))
// following X's docs ("Securing webhooks": the CRC response_token and the
// X-Twitter-Webhooks-Signature header are both "sha256=" + the base64
// HMAC-SHA256 keyed with the consumer secret), and are checked again
// against crypto/hmac in TestTwitterVectorsAreIndependent.
const (
	xSecret   = "x-consumer-secret"
	xBody     = `{"for_user_id":"2244994945","tweet_create_events":[{"id_str":"1"}]}`
	xB64      = "1XqU5TrD8UefLqQEtDYxwe/XSekgaKEDeIxr14luF8k="
	xSig      = "sha256=" + xB64
	xCRCToken = "crc-challenge-1700000000"
	xCRCResp  = "sha256=PUmCyTSJnT1GMTBqCKQi9MAVy4jB9aPhf9h+G4trhDE="
)

func TestTwitterVectorsAreIndependent(t *testing.T) {
	m := hmac.New(sha256.New, []byte(xSecret))
	m.Write([]byte(xBody))
	if got := "sha256=" + base64.StdEncoding.EncodeToString(m.Sum(nil)); got != xSig {
		t.Fatalf("signature %s, want %s", got, xSig)
	}
	m = hmac.New(sha256.New, []byte(xSecret))
	m.Write([]byte(xCRCToken))
	if got := "sha256=" + base64.StdEncoding.EncodeToString(m.Sum(nil)); got != xCRCResp {
		t.Fatalf("response_token %s, want %s", got, xCRCResp)
	}
}

func TestTwitterVerify(t *testing.T) {
	one := Twitter{SecretsConfig: keyed(xSecret)}
	runVerifyCases(t, newRequest, []verifyCase[Twitter]{
		{name: "valid", cfg: one, headers: []string{"X-Twitter-Webhooks-Signature", xSig}, body: xBody},
		{name: "secret with one letter changed", cfg: Twitter{SecretsConfig: keyed("x-consumer-secreT")}, headers: []string{"X-Twitter-Webhooks-Signature", xSig}, body: xBody, want: ErrMismatch},
		{name: "re-serialized JSON", cfg: one, headers: []string{"X-Twitter-Webhooks-Signature", xSig}, body: `{"for_user_id": "2244994945", "tweet_create_events": [{"id_str": "1"}]}`, want: ErrMismatch},
		{name: "wrong version label sha1=", cfg: one, headers: []string{"X-Twitter-Webhooks-Signature", "sha1=" + xB64}, body: xBody, want: ErrFormat},
	}, xSecret, xB64)
}

func TestTwitterHandshakeGET(t *testing.T) {
	// the expected token is computed here independently for the escaped case
	m := hmac.New(sha256.New, []byte(xSecret))
	m.Write([]byte("a+b.c"))
	escapedResp := "sha256=" + base64.StdEncoding.EncodeToString(m.Sum(nil))

	for _, tc := range []struct {
		name      string
		cfg       Twitter
		query     string
		handshake bool
		wantToken string
	}{
		{name: "crc", cfg: Twitter{SecretsConfig: keyed(xSecret)}, query: "?crc_token=" + xCRCToken, handshake: true, wantToken: xCRCResp},
		{name: "crc with other parameters", cfg: Twitter{SecretsConfig: keyed(xSecret)}, query: "?nonce=1&crc_token=" + xCRCToken, handshake: true, wantToken: xCRCResp},
		{name: "crc answered with the first secret", cfg: Twitter{SecretsConfig: keyed(xSecret, "older-secret")}, query: "?crc_token=" + xCRCToken, handshake: true, wantToken: xCRCResp},
		{name: "crc token escaped in the query", cfg: Twitter{SecretsConfig: keyed(xSecret)}, query: "?crc_token=a%2Bb.c", handshake: true, wantToken: escapedResp},
		{name: "not a crc: no query", cfg: Twitter{SecretsConfig: keyed(xSecret)}, query: ""},
		{name: "not a crc: empty crc_token", cfg: Twitter{SecretsConfig: keyed(xSecret)}, query: "?crc_token="},
		{name: "not a crc: Meta handshake", cfg: Twitter{SecretsConfig: keyed(xSecret)}, query: "?hub.mode=subscribe&hub.challenge=1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tw := provision(t, tc.cfg)
			rec := httptest.NewRecorder()
			got := tw.HandshakeGET(rec, httptest.NewRequest(http.MethodGet, "/hooks/x"+tc.query, nil))
			if got != tc.handshake {
				t.Fatalf("HandshakeGET = %v, want %v", got, tc.handshake)
			}
			if !tc.handshake {
				if rec.Body.Len() != 0 || len(rec.Header()) != 0 {
					t.Fatalf("not a CRC, but something was written: %d %q", rec.Code, rec.Body)
				}
				return
			}
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d, want 200", rec.Code)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type %q, want application/json", ct)
			}
			var body map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatalf("body %q: %v", rec.Body, err)
			}
			if want := map[string]any{"response_token": tc.wantToken}; !reflect.DeepEqual(body, want) {
				t.Fatalf("body %v, want %v", body, want)
			}
		})
	}
}

// TestTwitterCRCSigningOracle reproduces the attack on X's CRC: its answer
// to crc_token=<b> is the HMAC X puts in X-Twitter-Webhooks-Signature for
// the body b, so an endpoint answering any token signs forged events. Each
// forged body is requested as a CRC token: a token that could be an event
// body (JSON, a form) is refused with 401 INVALID_SIGNATURE_FORMAT; a short
// opaque token is answered, and its answer never verifies as the signature
// of a POST with that body (X's events are JSON objects: Verify refuses any
// other body).
func TestTwitterCRCSigningOracle(t *testing.T) {
	tw := provision(t, Twitter{SecretsConfig: keyed(xSecret)})
	now := time.Unix(1700000000, 0)
	long := strings.Repeat("a", maxCRCTokenLen)
	for _, tc := range []struct {
		name   string
		token  string // the forged body, sent as the crc_token
		answer bool   // true: a CRC token that must be answered
	}{
		{name: "forged JSON event", token: `{"for_user_id":"2244994945","tweet_create_events":[{"id_str":"666","text":"forged"}]}`},
		{name: "forged minimal JSON object", token: `{}`},
		{name: "forged JSON array", token: `[{"id":"1"}]`},
		{name: "JSON string", token: `"abc"`},
		{name: "JSON object with leading space", token: ` {"a":1}`},
		{name: "JSON with trailing newline", token: "{\"a\":1}\n"},
		{name: "form body", token: "a=b&c=d"},
		{name: "form body without &", token: "payload=x"},
		{name: "bare JSON true", token: "true"},
		{name: "bare JSON false", token: "false"},
		{name: "bare JSON null", token: "null"},
		{name: "bare JSON integer", token: "123"},
		{name: "bare JSON negative number", token: "-1.5e3"},
		{name: "bare JSON exponent with +", token: "1E+2"},
		{name: "colon", token: "a:b"},
		{name: "space", token: "a b"},
		{name: "tab", token: "a\tb"},
		{name: "NUL", token: "a\x00b"},
		{name: "DEL", token: "a\x7fb"},
		{name: "percent", token: "a%41"},
		{name: "semicolon", token: "a;b"},
		{name: "non-ASCII", token: "caf\u00e9"},
		{name: "one byte too long", token: long + "a"},

		{name: "X's token format (base64 of a UUID)", token: "M2RkODJkZmMtYjlkYi00NmQ4LTk0MGUtM2JjYzkwM2Q4MjQ0", answer: true},
		{name: "our fixture token", token: xCRCToken, answer: true},
		{name: "base64 characters + / . _", token: "ab+/cd._-Z9", answer: true},
		{name: "word that is not a JSON literal", token: "True", answer: true},
		{name: "digits then a letter", token: "123a", answer: true},
		{name: "longest token", token: long, answer: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte(tc.token)
			// the premise: the CRC answer is the body's HMAC, as X signs events
			forged := "sha256=" + base64.StdEncoding.EncodeToString(hmacOf(sha256.New, []byte(xSecret), body))

			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodGet, "/hooks/x?crc_token="+url.QueryEscape(tc.token), nil)
			if !tw.HandshakeGET(rec, req) {
				t.Fatal("a GET with a crc_token was left to the ingress")
			}
			var got struct {
				ResponseToken string `json:"response_token"`
				Error         string `json:"error"`
				Code          string `json:"code"`
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type %q, want application/json", ct)
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatalf("body %q: %v", rec.Body, err)
			}
			if tc.answer {
				if rec.Code != http.StatusOK || got.ResponseToken != forged {
					t.Fatalf("CRC token refused: %d %q", rec.Code, rec.Body)
				}
				// the answer is no signature for a POST of the token
				err := tw.Verify(newRequest("X-Twitter-Webhooks-Signature", got.ResponseToken), body, now)
				checkErr(t, err, ErrFormat)
				return
			}
			// the attack: the CRC answer used as the POST's signature
			if got.ResponseToken != "" {
				err := tw.Verify(newRequest("X-Twitter-Webhooks-Signature", got.ResponseToken), body, now)
				t.Fatalf("CRC signed a forged body (status %d; Verify with the answer: %v)", rec.Code, err)
			}
			if rec.Code != http.StatusUnauthorized || got.Code != "INVALID_SIGNATURE_FORMAT" || got.Error == "" {
				t.Fatalf("refusal %d %q, want 401 with code INVALID_SIGNATURE_FORMAT", rec.Code, rec.Body)
			}
			if strings.Contains(rec.Body.String(), xSecret) || strings.Contains(rec.Body.String(), forged[len("sha256="):]) {
				t.Fatalf("refusal leaks the secret or a MAC: %q", rec.Body)
			}
		})
	}
}

func TestTwitterHandshakePOST(t *testing.T) {
	tw := provision(t, Twitter{SecretsConfig: keyed(xSecret)})
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/hooks/x?crc_token="+xCRCToken, strings.NewReader(xBody))
	if tw.HandshakePOST(rec, r, []byte(xBody)) || rec.Body.Len() != 0 {
		t.Fatal("HandshakePOST claimed a request")
	}
}

// TestTwitterCRCSecret: the CRC is answered with the first configured
// secret that resolves to something, under both module names.
func TestTwitterCRCSecret(t *testing.T) {
	t.Setenv("HOOKLINE_TEST_X", xSecret)
	for _, name := range []string{"twitter", "x"} {
		v := mustLoad(t, name, `{"secrets":["{env.HOOKLINE_TEST_UNSET_XYZ}","{env.HOOKLINE_TEST_X}","older-secret"]}`)
		rec := httptest.NewRecorder()
		if !v.(Handshaker).HandshakeGET(rec, httptest.NewRequest(http.MethodGet, "/?crc_token="+xCRCToken, nil)) || !strings.Contains(rec.Body.String(), xCRCResp) {
			t.Fatalf("%s: CRC %d %q", name, rec.Code, rec.Body)
		}
	}
}

// FuzzTwitterHeader feeds arbitrary X-Twitter-Webhooks-Signature values
// and bodies. Verify must never panic, must never report anything but the
// documented errors, and must accept only "sha256=" + the canonical base64
// HMAC of the exact body.
func FuzzTwitterHeader(f *testing.F) {
	f.Add([]byte(xBody), xSig)
	f.Add([]byte(xBody), "sha256="+strings.TrimRight(xB64, "="))
	f.Add([]byte(xBody), "sha256="+strings.NewReplacer("+", "-", "/", "_").Replace(xB64))
	f.Add([]byte(xBody+" "), xSig)
	f.Add([]byte(""), "sha256=")
	f.Add([]byte("{}"), "sha256=\n"+xB64)

	tw := provision(f, Twitter{SecretsConfig: keyed(xSecret)})
	fuzzBodyHMAC(f, tw, "X-Twitter-Webhooks-Signature", "sha256=", EncodingBase64, xSecret)
}
