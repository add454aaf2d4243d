package verifiers

import (
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Meta publishes no official test vector (docs/signatures.md). Its docs
// say the signature is computed "using an escaped unicode version of the
// payload, with lowercase hex digits". The vector below was computed
// independently of this package (Python: hmac.new(b"meta-app-secret",
// body, hashlib.sha256).hexdigest()) over metaBody, whose "äöå" is written
// as the six-byte escapes \u00e4\u00f6\u00e5, as Meta sends it.
// metaDecodedSig is the HMAC of the same payload with the characters as
// UTF-8 (what a re-serializer would produce), and metaUpperSig of the
// payload with uppercase escapes (\u00E4...); neither may verify metaSig's
// body, and metaSig must not verify theirs.
const (
	metaSecret     = "meta-app-secret"
	metaBody       = `{"object":"page","entry":[{"id":"1234","time":1700000000,"messaging":[{"message":{"mid":"m_1","text":"\u00e4\u00f6\u00e5"}}]}]}`
	metaHex        = "3dca53808a916b1adaa78c8a8aee621e7905be68ba9a71d730088ec8b66fdad9"
	metaSig        = "sha256=" + metaHex
	metaDecoded    = `{"object":"page","entry":[{"id":"1234","time":1700000000,"messaging":[{"message":{"mid":"m_1","text":"äöå"}}]}]}`
	metaDecodedSig = "sha256=50a3b792483f1add2bc9d42e480c8ecdaef1c1d534f254b96490edd8ba2d3c3e"
	metaUpper      = `{"object":"page","entry":[{"id":"1234","time":1700000000,"messaging":[{"message":{"mid":"m_1","text":"\u00E4\u00F6\u00E5"}}]}]}`
	metaUpperSig   = "sha256=b307cde5300b8de1b60310ce39f884ef99d6ba8711ce47950238ea0c13b0bd00"
	metaToken      = "my-verify-token"
)

// metaReserialized is metaBody decoded and encoded again by encoding/json,
// as a proxy or framework that parses the body would forward it.
func metaReserialized(t testing.TB) string {
	var v any
	if err := json.Unmarshal([]byte(metaBody), &v); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestMetaVectorIsIndependent(t *testing.T) {
	// the constants agree with an HMAC computed here, outside CheckHMAC
	for body, sig := range map[string]string{metaBody: metaSig, metaDecoded: metaDecodedSig, metaUpper: metaUpperSig} {
		if got := "sha256=" + EncodingHex.Encode(hmacOf(sha256.New, []byte(metaSecret), []byte(body))); got != sig {
			t.Fatalf("HMAC of %s = %s, want %s", body, got, sig)
		}
	}
	if !strings.Contains(metaBody, `\u00e4`) || strings.Contains(metaBody, "ä") {
		t.Fatal("metaBody must carry the escapes, not UTF-8")
	}
}

func TestMetaVerify(t *testing.T) {
	one := Meta{SecretsConfig: keyed(metaSecret)}
	reser := metaReserialized(t)

	runVerifyCases(t, newRequest, []verifyCase[Meta]{
		{name: "escaped unicode as sent", cfg: one, headers: []string{"X-Hub-Signature-256", metaSig}, body: metaBody},
		{name: "decoded UTF-8 body, signature of the escaped form", cfg: one, headers: []string{"X-Hub-Signature-256", metaSig}, body: metaDecoded, want: ErrMismatch},
		{name: "uppercase escapes, signature of the lowercase form", cfg: one, headers: []string{"X-Hub-Signature-256", metaSig}, body: metaUpper, want: ErrMismatch},
		{name: "escaped body, signature of the decoded UTF-8 form", cfg: one, headers: []string{"X-Hub-Signature-256", metaDecodedSig}, body: metaBody, want: ErrMismatch},
		{name: "decoded UTF-8 body with its own signature", cfg: one, headers: []string{"X-Hub-Signature-256", metaDecodedSig}, body: metaDecoded},
		{name: "re-serialized JSON", cfg: one, headers: []string{"X-Hub-Signature-256", metaSig}, body: reser, want: ErrMismatch},
		{name: "secret with one letter changed", cfg: Meta{SecretsConfig: keyed("meta-app-secreT")}, headers: []string{"X-Hub-Signature-256", metaSig}, body: metaBody, want: ErrMismatch},
		{name: "wrong version label sha1=", cfg: one, headers: []string{"X-Hub-Signature-256", "sha1=" + metaHex}, body: metaBody, want: ErrFormat},
		{name: "legacy sha1 header only", cfg: one, headers: []string{"X-Hub-Signature", "sha1=" + strings.Repeat("0", 40)}, body: metaBody, want: ErrFormat},
	}, metaSecret, metaHex)
}

func TestMetaHandshakeGET(t *testing.T) {
	t.Setenv("HOOKLINE_TEST_META_TOKEN", metaToken)
	withToken := Meta{SecretsConfig: keyed(metaSecret), VerifyToken: metaToken}
	for _, tc := range []struct {
		name       string
		cfg        Meta
		query      string
		handshake  bool
		wantStatus int
		wantBody   string // exact body for 200
	}{
		{name: "right token", cfg: withToken, query: "?hub.mode=subscribe&hub.verify_token=my-verify-token&hub.challenge=1158201444", handshake: true, wantStatus: 200, wantBody: "1158201444"},
		{name: "right token, escaped challenge echoed decoded", cfg: withToken, query: "?hub.mode=subscribe&hub.challenge=a%2Bb+c&hub.verify_token=my-verify-token", handshake: true, wantStatus: 200, wantBody: "a+b c"},
		{name: "token from a placeholder", cfg: Meta{SecretsConfig: keyed(metaSecret), VerifyToken: "{env.HOOKLINE_TEST_META_TOKEN}"}, query: "?hub.mode=subscribe&hub.verify_token=my-verify-token&hub.challenge=42", handshake: true, wantStatus: 200, wantBody: "42"},
		{name: "placeholder text itself is not the token", cfg: Meta{SecretsConfig: keyed(metaSecret), VerifyToken: "{env.HOOKLINE_TEST_META_TOKEN}"}, query: "?hub.mode=subscribe&hub.verify_token=%7Benv.HOOKLINE_TEST_META_TOKEN%7D&hub.challenge=42", handshake: true, wantStatus: 403},
		{name: "wrong token", cfg: withToken, query: "?hub.mode=subscribe&hub.verify_token=my-verify-tokeN&hub.challenge=42", handshake: true, wantStatus: 403},
		{name: "token prefix", cfg: withToken, query: "?hub.mode=subscribe&hub.verify_token=my-verify&hub.challenge=42", handshake: true, wantStatus: 403},
		{name: "token missing", cfg: withToken, query: "?hub.mode=subscribe&hub.challenge=42", handshake: true, wantStatus: 403},
		{name: "empty token", cfg: withToken, query: "?hub.mode=subscribe&hub.verify_token=&hub.challenge=42", handshake: true, wantStatus: 403},
		{name: "mode not subscribe", cfg: withToken, query: "?hub.mode=unsubscribe&hub.verify_token=my-verify-token&hub.challenge=42", handshake: true, wantStatus: 403},
		{name: "no challenge", cfg: withToken, query: "?hub.mode=subscribe&hub.verify_token=my-verify-token", handshake: true, wantStatus: 403},
		{name: "no verify_token configured", cfg: Meta{SecretsConfig: keyed(metaSecret)}, query: "?hub.mode=subscribe&hub.verify_token=my-verify-token&hub.challenge=42", handshake: true, wantStatus: 403},
		{name: "not a handshake: no query", cfg: withToken, query: "", handshake: false},
		{name: "not a handshake: no hub.mode", cfg: withToken, query: "?hub.verify_token=my-verify-token&hub.challenge=42", handshake: false},
		{name: "not a handshake: other parameters", cfg: withToken, query: "?crc_token=abc", handshake: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := provision(t, tc.cfg)
			rec := httptest.NewRecorder()
			r := httptest.NewRequest(http.MethodGet, "/hooks/meta"+tc.query, nil)
			got := m.HandshakeGET(rec, r)
			if got != tc.handshake {
				t.Fatalf("HandshakeGET = %v, want %v", got, tc.handshake)
			}
			if !tc.handshake {
				if rec.Body.Len() != 0 || len(rec.Header()) != 0 || rec.Flushed {
					t.Fatalf("not a handshake, but something was written: %d %q %v", rec.Code, rec.Body, rec.Header())
				}
				return
			}
			res := rec.Result()
			if res.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d (body %q)", res.StatusCode, tc.wantStatus, rec.Body)
			}
			if tc.wantStatus == 200 {
				if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
					t.Fatalf("Content-Type %q, want text/plain", ct)
				}
				if rec.Body.String() != tc.wantBody {
					t.Fatalf("body %q, want exactly %q", rec.Body, tc.wantBody)
				}
				return
			}
			if ct := res.Header.Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type %q, want application/json", ct)
			}
			var eb struct {
				Error string `json:"error"`
				Code  string `json:"code"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &eb); err != nil {
				t.Fatalf("error body %q: %v", rec.Body, err)
			}
			if eb.Code != "UNAUTHORIZED" || eb.Error == "" {
				t.Fatalf("error body %+v, want code UNAUTHORIZED and a message", eb)
			}
			for _, s := range []string{metaToken, "my-verify", "tokeN", metaSecret, "42"} {
				if strings.Contains(rec.Body.String(), s) {
					t.Fatalf("error body %q leaks %q", rec.Body, s)
				}
			}
		})
	}
}

func TestMetaHandshakePOST(t *testing.T) {
	m := provision(t, Meta{SecretsConfig: keyed(metaSecret), VerifyToken: metaToken})
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/hooks/meta?hub.mode=subscribe&hub.verify_token=my-verify-token&hub.challenge=42", strings.NewReader(metaBody))
	if m.HandshakePOST(rec, r, []byte(metaBody)) {
		t.Fatal("HandshakePOST claimed a request")
	}
	if rec.Body.Len() != 0 || len(rec.Header()) != 0 {
		t.Fatal("HandshakePOST wrote an answer")
	}
}

// TestMetaProvision: the verify_token is resolved too, and must not
// resolve to nothing; the configuration is left as it was.
func TestMetaProvision(t *testing.T) {
	runProvisionCases(t, []provisionCase[Meta]{
		{name: "with verify_token", cfg: Meta{SecretsConfig: keyed(metaSecret), VerifyToken: metaToken}},
		{name: "no secret", cfg: Meta{VerifyToken: metaToken}, wantErr: "no secret configured"},
		{name: "verify_token resolves to nothing", cfg: Meta{SecretsConfig: keyed(metaSecret), VerifyToken: "{env.HOOKLINE_TEST_UNSET_XYZ}"}, wantErr: "verify_token is empty"},
	}, func(t *testing.T, m *Meta) {
		checkErr(t, m.Verify(newRequest("X-Hub-Signature-256", metaSig), []byte(metaBody), time.Now()), nil)
	}, metaSecret, metaToken)
}

// TestMetaModuleHandshake: every name of the scheme answers the
// subscription handshake, from its JSON config.
func TestMetaModuleHandshake(t *testing.T) {
	for _, name := range []string{"meta", "facebook", "whatsapp", "instagram"} {
		v := mustLoad(t, name, `{"secrets":["meta-app-secret"],"verify_token":"my-verify-token"}`)
		rec := httptest.NewRecorder()
		if !v.(Handshaker).HandshakeGET(rec, httptest.NewRequest(http.MethodGet, "/?hub.mode=subscribe&hub.verify_token=my-verify-token&hub.challenge=ch", nil)) || rec.Code != 200 || rec.Body.String() != "ch" {
			t.Fatalf("%s: handshake %d %q", name, rec.Code, rec.Body)
		}
		checkErr(t, v.Verify(newRequest("X-Hub-Signature-256", metaDecodedSig), []byte(metaBody), time.Now()), ErrMismatch)
	}
}

// FuzzMetaHeader feeds arbitrary X-Hub-Signature-256 values and bodies.
// Verify must never panic, must never report anything but the documented
// errors, and must accept only "sha256=" + the lowercase hex HMAC of the
// exact body.
func FuzzMetaHeader(f *testing.F) {
	f.Add([]byte(metaBody), metaSig)
	f.Add([]byte(metaDecoded), metaSig)
	f.Add([]byte(metaBody), "sha256="+strings.ToUpper(metaHex))
	f.Add([]byte(metaBody), metaSig[:len(metaSig)-1])
	f.Add([]byte(""), "sha256=")
	f.Add([]byte("{}"), "sha1=0000000000000000000000000000000000000000")

	m := provision(f, Meta{SecretsConfig: keyed(metaSecret)})
	fuzzBodyHMAC(f, m, "X-Hub-Signature-256", "sha256=", EncodingHex, metaSecret)
}
