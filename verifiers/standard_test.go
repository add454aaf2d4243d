package verifiers

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// The official Standard Webhooks vector, from standard-webhooks/standard-webhooks
// @b2fa7b87: libraries/go/webhook_test.go TestWebhookSign and
// libraries/python/tests/test_webhooks.py test_sign_function (text checked
// at 449485ca and 33d368b2). The other fixed signatures come from the same
// tests: stdInvalid is test_invalid_signature_raises_error's (the last
// base64 digit changed), stdOther the "invalid signature" / multi-sig
// filler of both test files.
const (
	stdSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	stdBareKey   = "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	stdID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	stdTS        = "1614265330"
	stdTSInt     = 1614265330
	stdPayload   = `{"test": 2432232314}`
	stdSig       = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	stdSigB64    = "g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	stdInvalid   = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OA="
	stdOther     = "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="
	stdOtherV2   = "v2,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="
	stdSigBase64 = "g0hM9SsE-OTPJTGt_tmIKtSyZlE3uFJELVlNIOLJ1OE=" // base64url spelling of stdSigB64
)

// v1a (ed25519) vectors. The released reference libraries do not
// implement v1a (SIGNATURES.md); these are:
//
//   - stdEdPub / stdEdSig: TestAsymmetricWebhookSign of
//     libraries/go/webhook_asymmetric_test.go in a version of the
//     standard-webhooks repo that has an asymmetric Go implementation (file
//     stored at 5fb2ce93, not in the b2fa7b87 tree): private key seed
//     "VEVTVFNJR05JTkdLRVlET05PVFVTRVRISVNGT1JBTlk=", the same id,
//     timestamp and payload as above, expected signature stdEdSig. The
//     public key was derived from the seed (Go crypto/ed25519 and Python
//     cryptography agree).
//   - ownEdPub / ownEdSig: our own key pair (seed "hookline v1a vector, do
//     not use!"), signed with Python cryptography over the spec's example
//     message (spec/standard-webhooks.md: id msg_2KWPBgLlAfxdpx2AI54pPJ85f4W,
//     timestamp 1674087231, the minified contact.created body).
const (
	stdEdPub   = "whpk_ZlN4eg7dSSqi0moX9hQUk3orrOouK3QVQSlJa248c/g="
	stdEdSig   = "v1a,tQ9V2XOqn7jL/DQenEFpqIugdBVtiMmER5mhSkXBNwM0mkATuDe6KYYUuxqtaiHeYGb7KaaBRdM5WqyeFiL8Ag=="
	ownEdPub   = "whpk_xUcY5PGVux/sn32bQTTXzzRgo2vc8Uc+ge+INEfEPDY="
	ownEdSig   = "v1a,GGpIqsrLE+ngxeOjNBkyBuQmquL1YT54twyQHtCOe/2r6hXx2K3wvHt63QVjLL+2teCV4CQo4tnrN3FCYawWBg=="
	ownEdID    = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"
	ownEdTS    = "1674087231"
	ownEdTSInt = 1674087231
	ownEdBody  = `{"type":"contact.created","timestamp":"2022-11-03T20:26:10.344522Z","data":{"id":"1f81eb52-5198-4599-803e-771906343485"}}`
)

func provisionStandard(t testing.TB, s Standard) *Standard {
	t.Helper()
	if err := s.Provision(testContext(t)); err != nil {
		t.Fatalf("provision: %v", err)
	}
	return &s
}

// stdHeaders returns webhook-id, webhook-timestamp and webhook-signature
// name/value pairs for newRequest.
func stdHeaders(id, ts, sig string) []string {
	return []string{"webhook-id", id, "webhook-timestamp", ts, "webhook-signature", sig}
}

// stdSign is the v1 signature of id.ts.body with the base64 secret key,
// computed independently of the module.
func stdSign(b64key, id, ts, body string) string {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(b64key, "whsec_"))
	if err != nil {
		panic(err)
	}
	return "v1," + EncodingBase64.Encode(hmacOf(sha256.New, key, []byte(id+"."+ts+"."+body)))
}

// stdTestKey returns an ed25519 key pair made from a seed phrase, and its
// whpk_ form.
func stdTestKey(seed string) (ed25519.PrivateKey, string) {
	s := sha256.Sum256([]byte(seed))
	priv := ed25519.NewKeyFromSeed(s[:])
	return priv, "whpk_" + base64.StdEncoding.EncodeToString(priv.Public().(ed25519.PublicKey))
}

func TestStandardVerify(t *testing.T) {
	one := Standard{Secrets: []string{stdSecret}}
	at := time.Unix(stdTSInt, 0)
	tsPlus := func(d int64) string { return strconv.FormatInt(stdTSInt+d, 10) }
	rotPriv, rotPub := stdTestKey("hookline rotated key")
	edSign := func(priv ed25519.PrivateKey, id, ts, body string) string {
		return "v1a," + base64.StdEncoding.EncodeToString(ed25519.Sign(priv, []byte(id+"."+ts+"."+body)))
	}
	ownEdRaw := strings.TrimPrefix(ownEdSig, "v1a,")

	for _, tc := range []struct {
		name    string
		cfg     Standard
		headers []string
		body    string
		now     time.Time
		want    error
	}{
		// official vectors and SDK test cases
		{name: "official sign vector", cfg: one, headers: stdHeaders(stdID, stdTS, stdSig), body: stdPayload, now: at},
		{name: "secret without whsec_ prefix", cfg: Standard{Secrets: []string{stdBareKey}}, headers: stdHeaders(stdID, stdTS, stdSig), body: stdPayload, now: at},
		{name: "python: invalid signature", cfg: one, headers: stdHeaders(stdID, stdTS, stdInvalid), body: stdPayload, now: at, want: ErrMismatch},
		{name: "go: invalid signature", cfg: one, headers: stdHeaders(stdID, stdTS, stdOther), body: stdPayload, now: at, want: ErrMismatch},
		{name: "sdk: valid multi sig", cfg: one, headers: stdHeaders(stdID, stdTS, strings.Join([]string{stdOther, stdOtherV2, stdSig, stdOther}, " ")), body: stdPayload, now: at},
		{name: "sdk: missing id", cfg: one, headers: []string{"webhook-timestamp", stdTS, "webhook-signature", stdSig}, body: stdPayload, now: at, want: ErrFormat},
		{name: "sdk: missing timestamp", cfg: one, headers: []string{"webhook-id", stdID, "webhook-signature", stdSig}, body: stdPayload, now: at, want: ErrFormat},
		{name: "sdk: missing signature", cfg: one, headers: []string{"webhook-id", stdID, "webhook-timestamp", stdTS}, body: stdPayload, now: at, want: ErrFormat},
		{name: "sdk: timestamp hello", cfg: one, headers: stdHeaders(stdID, "hello", stdSig), body: stdPayload, now: at, want: ErrFormat},
		{name: "svix headers", cfg: one, headers: []string{"svix-id", stdID, "svix-timestamp", stdTS, "svix-signature", stdSig}, body: stdPayload, now: at},
		{name: "header names in any case", cfg: one, headers: []string{"Webhook-Id", stdID, "WEBHOOK-TIMESTAMP", stdTS, "Webhook-Signature", stdSig}, body: stdPayload, now: at},
		{name: "webhook-* wins over svix-*", cfg: one, headers: append(stdHeaders(stdID, stdTS, stdSig), "svix-id", "msg_other"), body: stdPayload, now: at},
		{name: "signed id is webhook-id, not svix-id", cfg: one, headers: []string{"webhook-id", "msg_other", "svix-id", stdID, "webhook-timestamp", stdTS, "webhook-signature", stdSig}, body: stdPayload, now: at, want: ErrMismatch},
		{name: "go asymmetric: v1a sign vector", cfg: Standard{Secrets: []string{stdEdPub}}, headers: stdHeaders(stdID, stdTS, stdEdSig), body: stdPayload, now: at},
		{name: "go asymmetric: v1a,Ceo5... (32 bytes) is malformed", cfg: Standard{Secrets: []string{stdEdPub}}, headers: stdHeaders(stdID, stdTS, "v1a,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="), body: stdPayload, now: at, want: ErrFormat},
		{name: "go asymmetric: partial signature v1a,", cfg: Standard{Secrets: []string{stdEdPub}}, headers: stdHeaders(stdID, stdTS, "v1a,"), body: stdPayload, now: at, want: ErrFormat},
		{name: "go asymmetric: multi sig", cfg: Standard{Secrets: []string{stdEdPub}}, headers: stdHeaders(stdID, stdTS, strings.Join([]string{stdOther, stdOtherV2, stdEdSig, stdOther}, " ")), body: stdPayload, now: at},

		// our own v1a key pair
		{name: "own v1a vector", cfg: Standard{Secrets: []string{ownEdPub}}, headers: stdHeaders(ownEdID, ownEdTS, ownEdSig), body: ownEdBody, now: time.Unix(ownEdTSInt, 0)},
		{name: "v1a: one body byte changed", cfg: Standard{Secrets: []string{ownEdPub}}, headers: stdHeaders(ownEdID, ownEdTS, ownEdSig), body: strings.Replace(ownEdBody, "created", "Created", 1), now: time.Unix(ownEdTSInt, 0), want: ErrMismatch},
		{name: "v1a: other id", cfg: Standard{Secrets: []string{ownEdPub}}, headers: stdHeaders(ownEdID+"x", ownEdTS, ownEdSig), body: ownEdBody, now: time.Unix(ownEdTSInt, 0), want: ErrMismatch},
		{name: "v1a: wrong public key", cfg: Standard{Secrets: []string{stdEdPub}}, headers: stdHeaders(ownEdID, ownEdTS, ownEdSig), body: ownEdBody, now: time.Unix(ownEdTSInt, 0), want: ErrMismatch},
		{name: "v1a: rotation, second key matches", cfg: Standard{Secrets: []string{rotPub, ownEdPub}}, headers: stdHeaders(ownEdID, ownEdTS, ownEdSig), body: ownEdBody, now: time.Unix(ownEdTSInt, 0)},
		{name: "v1a: list with an old-key signature first", cfg: Standard{Secrets: []string{rotPub}}, headers: stdHeaders(ownEdID, ownEdTS, ownEdSig+" "+edSign(rotPriv, ownEdID, ownEdTS, ownEdBody)), body: ownEdBody, now: time.Unix(ownEdTSInt, 0)},
		{name: "v1a: labelled v1", cfg: Standard{Secrets: []string{ownEdPub}}, headers: stdHeaders(ownEdID, ownEdTS, "v1,"+ownEdRaw), body: ownEdBody, now: time.Unix(ownEdTSInt, 0), want: ErrFormat},
		{name: "v1a: labelled v2a", cfg: Standard{Secrets: []string{ownEdPub}}, headers: stdHeaders(ownEdID, ownEdTS, "v2a,"+ownEdRaw), body: ownEdBody, now: time.Unix(ownEdTSInt, 0), want: ErrFormat},
		{name: "v1a: unpadded", cfg: Standard{Secrets: []string{ownEdPub}}, headers: stdHeaders(ownEdID, ownEdTS, strings.TrimRight(ownEdSig, "=")), body: ownEdBody, now: time.Unix(ownEdTSInt, 0), want: ErrMismatch},
		{name: "v1a: base64url", cfg: Standard{Secrets: []string{ownEdPub}}, headers: stdHeaders(ownEdID, ownEdTS, strings.NewReplacer("+", "-", "/", "_").Replace(ownEdSig)), body: ownEdBody, now: time.Unix(ownEdTSInt, 0), want: ErrMismatch},
		{name: "v1a: non-zero padding bits", cfg: Standard{Secrets: []string{ownEdPub}}, headers: stdHeaders(ownEdID, ownEdTS, strings.TrimSuffix(ownEdSig, "g==")+"h=="), body: ownEdBody, now: time.Unix(ownEdTSInt, 0), want: ErrMismatch},
		{name: "v1a: truncated", cfg: Standard{Secrets: []string{ownEdPub}}, headers: stdHeaders(ownEdID, ownEdTS, ownEdSig[:len(ownEdSig)-4]), body: ownEdBody, now: time.Unix(ownEdTSInt, 0), want: ErrFormat},
		{name: "v1a: against an HMAC secret only", cfg: one, headers: stdHeaders(ownEdID, ownEdTS, ownEdSig), body: ownEdBody, now: time.Unix(ownEdTSInt, 0), want: ErrMismatch},
		{name: "v1 against a public key only", cfg: Standard{Secrets: []string{ownEdPub}}, headers: stdHeaders(stdID, stdTS, stdSig), body: stdPayload, now: at, want: ErrMismatch},
		{name: "mixed secrets: v1 matches", cfg: Standard{Secrets: []string{ownEdPub, stdSecret}}, headers: stdHeaders(stdID, stdTS, stdSig), body: stdPayload, now: at},
		{name: "mixed secrets: v1a matches after a bad v1", cfg: Standard{Secrets: []string{stdSecret, stdEdPub}}, headers: stdHeaders(stdID, stdTS, stdOther+" "+stdEdSig), body: stdPayload, now: at},

		// our own v1 cases
		{name: "wrong secret", cfg: Standard{Secrets: []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSx"}}, headers: stdHeaders(stdID, stdTS, stdSig), body: stdPayload, now: at, want: ErrMismatch},
		{name: "secret used without base64-decoding", cfg: Standard{Secrets: []string{base64.StdEncoding.EncodeToString([]byte(stdSecret))}}, headers: stdHeaders(stdID, stdTS, stdSig), body: stdPayload, now: at, want: ErrMismatch},
		{name: "one body byte changed", cfg: one, headers: stdHeaders(stdID, stdTS, stdSig), body: `{"test": 2432232315}`, now: at, want: ErrMismatch},
		{name: "re-serialized JSON", cfg: one, headers: stdHeaders(stdID, stdTS, stdSig), body: `{"test":2432232314}`, now: at, want: ErrMismatch},
		{name: "other id", cfg: one, headers: stdHeaders("msg_p5jXN8AQM9LWM0D4loKWxJeK", stdTS, stdSig), body: stdPayload, now: at, want: ErrMismatch},
		{name: "timestamp with leading zero is signed as sent", cfg: one, headers: stdHeaders(stdID, "0"+stdTS, stdSig), body: stdPayload, now: at, want: ErrMismatch},
		{name: "unpadded signature", cfg: one, headers: stdHeaders(stdID, stdTS, strings.TrimRight(stdSig, "=")), body: stdPayload, now: at, want: ErrMismatch},
		{name: "base64url signature", cfg: one, headers: stdHeaders(stdID, stdTS, "v1,"+stdSigBase64), body: stdPayload, now: at, want: ErrMismatch},
		{name: "hex signature", cfg: one, headers: stdHeaders(stdID, stdTS, "v1,"+EncodingHex.Encode(mustB64(stdSigB64))), body: stdPayload, now: at, want: ErrFormat},
		{name: "truncated signature", cfg: one, headers: stdHeaders(stdID, stdTS, stdSig[:len(stdSig)-4]), body: stdPayload, now: at, want: ErrFormat},
		{name: "extra characters", cfg: one, headers: stdHeaders(stdID, stdTS, stdSig+"AAAA"), body: stdPayload, now: at, want: ErrFormat},
		{name: "wrong version v2 only", cfg: one, headers: stdHeaders(stdID, stdTS, "v2,"+stdSigB64), body: stdPayload, now: at, want: ErrFormat},
		{name: "uppercase version V1", cfg: one, headers: stdHeaders(stdID, stdTS, "V1,"+stdSigB64), body: stdPayload, now: at, want: ErrFormat},
		{name: "no version", cfg: one, headers: stdHeaders(stdID, stdTS, stdSigB64), body: stdPayload, now: at, want: ErrFormat},
		{name: "empty version", cfg: one, headers: stdHeaders(stdID, stdTS, ","+stdSigB64), body: stdPayload, now: at, want: ErrFormat},
		{name: "entry with two commas", cfg: one, headers: stdHeaders(stdID, stdTS, stdSig+",x"), body: stdPayload, now: at, want: ErrFormat},
		{name: "malformed entry next to a valid one", cfg: one, headers: stdHeaders(stdID, stdTS, stdSig+" garbage"), body: stdPayload, now: at, want: ErrFormat},
		{name: "doubled space", cfg: one, headers: stdHeaders(stdID, stdTS, stdOther+"  "+stdSig), body: stdPayload, now: at, want: ErrFormat},
		{name: "comma-separated list", cfg: one, headers: stdHeaders(stdID, stdTS, stdOther+","+stdSig), body: stdPayload, now: at, want: ErrFormat},
		{name: "rotation: second secret matches", cfg: Standard{Secrets: []string{"whsec_" + base64.StdEncoding.EncodeToString([]byte("a new secret of 24 bytes")), stdSecret}}, headers: stdHeaders(stdID, stdTS, stdSig), body: stdPayload, now: at},
		{name: "rotation: no secret matches", cfg: Standard{Secrets: []string{"whsec_" + base64.StdEncoding.EncodeToString([]byte("a new secret of 24 bytes"))}}, headers: stdHeaders(stdID, stdTS, stdSig), body: stdPayload, now: at, want: ErrMismatch},
		{name: "list: valid signature last", cfg: one, headers: stdHeaders(stdID, stdTS, stdOther+" "+ownEdSig+" "+stdSig), body: stdPayload, now: at},
		{name: "list: only wrong ones", cfg: one, headers: stdHeaders(stdID, stdTS, stdOther+" "+stdInvalid), body: stdPayload, now: at, want: ErrMismatch},

		// timestamps, both directions
		{name: "exactly 300s old", cfg: one, headers: stdHeaders(stdID, tsPlus(-300), stdSign(stdSecret, stdID, tsPlus(-300), stdPayload)), body: stdPayload, now: at},
		{name: "301s old", cfg: one, headers: stdHeaders(stdID, tsPlus(-301), stdSign(stdSecret, stdID, tsPlus(-301), stdPayload)), body: stdPayload, now: at, want: ErrTimestamp},
		{name: "exactly 300s ahead", cfg: one, headers: stdHeaders(stdID, tsPlus(300), stdSign(stdSecret, stdID, tsPlus(300), stdPayload)), body: stdPayload, now: at},
		{name: "301s ahead", cfg: one, headers: stdHeaders(stdID, tsPlus(301), stdSign(stdSecret, stdID, tsPlus(301), stdPayload)), body: stdPayload, now: at, want: ErrTimestamp},
		{name: "official vector five minutes and a second later", cfg: one, headers: stdHeaders(stdID, stdTS, stdSig), body: stdPayload, now: at.Add(301 * time.Second), want: ErrTimestamp},
		{name: "tolerance 1h", cfg: Standard{Secrets: []string{stdSecret}, Tolerance: caddy.Duration(time.Hour)}, headers: stdHeaders(stdID, stdTS, stdSig), body: stdPayload, now: at.Add(time.Hour)},
		{name: "v1a stale", cfg: Standard{Secrets: []string{ownEdPub}}, headers: stdHeaders(ownEdID, ownEdTS, ownEdSig), body: ownEdBody, now: time.Unix(ownEdTSInt+301, 0), want: ErrTimestamp},
		{name: "milliseconds timestamp", cfg: one, headers: stdHeaders(stdID, stdTS+"000", stdSign(stdSecret, stdID, stdTS+"000", stdPayload)), body: stdPayload, now: at, want: ErrTimestamp},
		{name: "negative timestamp", cfg: one, headers: stdHeaders(stdID, "-"+stdTS, stdSig), body: stdPayload, now: at, want: ErrFormat},
		{name: "fractional timestamp", cfg: one, headers: stdHeaders(stdID, stdTS+".0", stdSig), body: stdPayload, now: at, want: ErrFormat},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := provisionStandard(t, tc.cfg)
			err := s.Verify(newRequest(tc.headers...), []byte(tc.body), tc.now)
			checkErr(t, err, tc.want, stdSecret, stdBareKey, stdSigB64)
		})
	}
}

// mustB64 decodes standard base64.
func mustB64(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

func TestStandardProvision(t *testing.T) {
	t.Setenv("HOOKLINE_TEST_STD", stdSecret)
	urlAlphabet := "whsec_" + base64.URLEncoding.EncodeToString([]byte{0xfb, 0xff, 0xfe, 1, 2, 3})
	for _, tc := range []struct {
		name    string
		cfg     Standard
		wantTol time.Duration
		wantErr string // part of the error text
	}{
		{name: "whsec_", cfg: Standard{Secrets: []string{stdSecret}}, wantTol: 5 * time.Minute},
		{name: "env", cfg: Standard{Secrets: []string{"{env.HOOKLINE_TEST_STD}"}}, wantTol: 5 * time.Minute},
		{name: "unset old secret ignored", cfg: Standard{Secrets: []string{"{env.HOOKLINE_TEST_UNSET_XYZ}", "{env.HOOKLINE_TEST_STD}"}}, wantTol: 5 * time.Minute},
		{name: "whpk_ and whsec_", cfg: Standard{Secrets: []string{stdEdPub, stdSecret}, Tolerance: caddy.Duration(time.Minute)}, wantTol: time.Minute},
		{name: "none", wantErr: "no secret"},
		{name: "all empty", cfg: Standard{Secrets: []string{"{env.HOOKLINE_TEST_UNSET_XYZ}"}}, wantErr: "non-empty"},
		{name: "negative tolerance", cfg: Standard{Secrets: []string{stdSecret}, Tolerance: -1}, wantErr: "negative"},
		{name: "URL-alphabet whsec_", cfg: Standard{Secrets: []string{urlAlphabet}}, wantErr: "standard base64"},
		{name: "URL-alphabet whsec_, unpadded", cfg: Standard{Secrets: []string{strings.TrimRight(urlAlphabet, "=")}}, wantErr: "standard base64"},
		{name: "non-zero padding bits", cfg: Standard{Secrets: []string{"whsec_AB=="}}, wantErr: "standard base64"},
		{name: "non-zero padding bits, unpadded", cfg: Standard{Secrets: []string{"whsec_AB"}}, wantErr: "standard base64"},
		{name: "partial padding", cfg: Standard{Secrets: []string{"whsec_AA="}}, wantErr: "standard base64"},
		{name: "impossible length", cfg: Standard{Secrets: []string{"whsec_MfKQ9"}}, wantErr: "standard base64"},
		{name: "line break inside", cfg: Standard{Secrets: []string{"whsec_MfKQ9r8GKYqrTwjU\nPD8ILPZIo2LaLaSw"}}, wantErr: "standard base64"},
		{name: "not base64", cfg: Standard{Secrets: []string{"whsec_not base64!"}}, wantErr: "standard base64"},
		{name: "plain string", cfg: Standard{Secrets: []string{"my webhook secret"}}, wantErr: "standard base64"},
		{name: "empty whsec_", cfg: Standard{Secrets: []string{"whsec_"}}, wantErr: "empty"},
		{name: "second secret bad", cfg: Standard{Secrets: []string{stdSecret, urlAlphabet}}, wantErr: "secret 2"},
		{name: "whpk_ of 31 bytes", cfg: Standard{Secrets: []string{"whpk_" + base64.StdEncoding.EncodeToString(make([]byte, 31))}}, wantErr: "32-byte"},
		{name: "whpk_ unpadded", cfg: Standard{Secrets: []string{strings.TrimRight(stdEdPub, "=")}}, wantErr: "32-byte"},
		{name: "whsk_ private key", cfg: Standard{Secrets: []string{"whsk_VEVTVFNJR05JTkdLRVlET05PVFVTRVRISVNGT1JBTlk="}}, wantErr: "public key instead"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.cfg
			err := s.Provision(testContext(t))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
				}
				for _, sec := range append([]string{stdBareKey, "VEVTVFNJR05JTkdLRVlET05PVFVTRVRISVNGT1JBTlk", "MfKQ9r8GKYqrTwjU"}, s.Secrets...) {
					if len(sec) > 6 && strings.Contains(err.Error(), sec) {
						t.Fatalf("error leaks a secret: %v", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if time.Duration(s.Tolerance) != tc.wantTol {
				t.Fatalf("tolerance %v, want %v", time.Duration(s.Tolerance), tc.wantTol)
			}
			checkErr(t, s.Verify(newRequest(stdHeaders(stdID, stdTS, stdSig)...), []byte(stdPayload), time.Unix(stdTSInt, 0)), nil)
		})
	}
}

// TestStandardUnpaddedSecret: a whsec_ secret whose base64 leaves out the
// '=' padding provisions, as in the Python reference library (which
// appends "==" before decoding), and gives the same key as the padded
// spelling. The official secret needs no padding (24 bytes), so the padded
// pairs use keys of 25 and 26 bytes (one and two '='), and their
// signatures of the official message are computed here with crypto/hmac.
func TestStandardUnpaddedSecret(t *testing.T) {
	at := time.Unix(stdTSInt, 0)
	for _, tc := range []struct {
		name     string
		key      []byte
		official bool // the key of the official vector: sig must be stdSig
	}{
		{name: "official 24-byte key (no padding)", key: mustB64(stdBareKey), official: true},
		{name: "25-byte key (two =)", key: []byte("twenty-five bytes secret!")},
		{name: "26-byte key (one =)", key: []byte("twenty-six bytes secret!!!")},
		{name: "32-byte key (one =)", key: []byte("0123456789abcdef0123456789abcdef")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			padded := base64.StdEncoding.EncodeToString(tc.key)
			unpadded := base64.RawStdEncoding.EncodeToString(tc.key)
			sig := "v1," + base64.StdEncoding.EncodeToString(hmacOf(sha256.New, tc.key, []byte(stdID+"."+stdTS+"."+stdPayload)))
			if tc.official && sig != stdSig {
				t.Fatalf("official vector: %s, want %s", sig, stdSig)
			}
			for _, sec := range []string{
				"whsec_" + padded, "whsec_" + unpadded, padded, unpadded,
			} {
				s := provisionStandard(t, Standard{Secrets: []string{sec}})
				if len(s.hmacKeys) != 1 || string(s.hmacKeys[0]) != string(tc.key) {
					t.Fatalf("%q: decoded to another key", sec)
				}
				checkErr(t, s.Verify(newRequest(stdHeaders(stdID, stdTS, sig)...), []byte(stdPayload), at), nil, sec, padded)
				checkErr(t, s.Verify(newRequest(stdHeaders(stdID, stdTS, stdInvalid)...), []byte(stdPayload), at), ErrMismatch, sec, padded)
			}
		})
	}
	// the official vector with a padded and an unpadded secret side by side
	s := provisionStandard(t, Standard{Secrets: []string{"whsec_" + base64.RawStdEncoding.EncodeToString([]byte("twenty-five bytes secret!")), stdSecret}})
	checkErr(t, s.Verify(newRequest(stdHeaders(stdID, stdTS, stdSig)...), []byte(stdPayload), at), nil)
}

func TestStandardDefaultIDFrom(t *testing.T) {
	want := []string{"header webhook-id", "header svix-id"}
	for _, v := range []IDDefaulter{&Standard{}, &Svix{}} {
		if got := ruleStrings(v.DefaultIDFrom()); !reflect.DeepEqual(got, want) {
			t.Fatalf("%T.DefaultIDFrom() = %v, want %v", v, got, want)
		}
	}
}

func TestStandardUnmarshalCaddyfile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		input   string
		want    Standard
		wantErr bool
	}{
		{name: "one secret", input: `standard {env.WEBHOOK_SECRET}`, want: Standard{Secrets: []string{"{env.WEBHOOK_SECRET}"}}},
		{name: "svix name", input: `svix whsec_a whpk_b`, want: Standard{Secrets: []string{"whsec_a", "whpk_b"}}},
		{name: "block", input: "standard a {\n secret b c\n tolerance 1m\n}", want: Standard{Secrets: []string{"a", "b", "c"}, Tolerance: caddy.Duration(time.Minute)}},
		{name: "secret without value", input: "standard {\n secret\n}", wantErr: true},
		{name: "bad tolerance", input: "standard s {\n tolerance 5\n}", wantErr: true},
		{name: "negative tolerance", input: "standard s {\n tolerance -5m\n}", wantErr: true},
		{name: "unknown option", input: "standard s {\n header X-Sig\n}", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s Standard
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

func TestStandardModule(t *testing.T) {
	ctx := testContext(t)
	for _, id := range []string{"webhooks.verifiers.standard", "webhooks.verifiers.svix"} {
		t.Run(id, func(t *testing.T) {
			v, err := ctx.LoadModuleByID(id, json.RawMessage(`{"secrets":["`+stdSecret+`","`+stdEdPub+`"],"tolerance":60000000000}`))
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := v.(IDDefaulter); !ok {
				t.Fatalf("%T is not an IDDefaulter", v)
			}
			at := time.Unix(stdTSInt, 0)
			checkErr(t, v.(Verifier).Verify(newRequest(stdHeaders(stdID, stdTS, stdSig)...), []byte(stdPayload), at), nil)
			checkErr(t, v.(Verifier).Verify(newRequest(stdHeaders(stdID, stdTS, stdEdSig)...), []byte(stdPayload), at), nil)
			checkErr(t, v.(Verifier).Verify(newRequest(stdHeaders(stdID, stdTS, stdSig)...), []byte(stdPayload), at.Add(61*time.Second)), ErrTimestamp)
			if _, err := ctx.LoadModuleByID(id, json.RawMessage(`{"secrets":["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS"]}`)); err == nil {
				t.Fatal("bad whsec_ provisioned")
			}
			if _, err := ctx.LoadModuleByID(id, json.RawMessage(`{"secrets":["x"],"header":"X"}`)); err == nil {
				t.Fatal("unknown JSON field accepted")
			}
		})
	}
	// the alias is a distinct module with the same JSON
	var sv Svix
	if err := sv.UnmarshalCaddyfile(caddyfile.NewTestDispenser("svix a {\n tolerance 2m\n}")); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(sv)
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != `{"secrets":["a"],"tolerance":120000000000}` {
		t.Fatalf("JSON = %s", raw)
	}
	if got := (Svix{}).CaddyModule().ID; got != "webhooks.verifiers.svix" {
		t.Fatalf("Svix module ID %q", got)
	}
}

// FuzzStandardHeader feeds arbitrary id, timestamp and signature headers
// and bodies to a configuration with an HMAC secret and an ed25519 public
// key. Verify must never panic, must never report anything but the
// documented errors, and must accept only a list holding the canonical v1
// HMAC or a canonical, valid v1a signature of the exact id, timestamp and
// body, with the timestamp within tolerance.
func FuzzStandardHeader(f *testing.F) {
	f.Add([]byte(stdPayload), stdID, stdTS, stdSig)
	f.Add([]byte(stdPayload), stdID, stdTS, stdEdSig)
	f.Add([]byte(stdPayload), stdID, stdTS, stdOther+" "+stdOtherV2+" "+stdSig)
	f.Add([]byte(stdPayload), stdID, stdTS, strings.TrimRight(stdSig, "="))
	f.Add([]byte(stdPayload), stdID, stdTS, "v1a,"+strings.TrimPrefix(stdSig, "v1,"))
	f.Add([]byte(stdPayload), stdID, "1614265631", stdSig)
	f.Add([]byte(stdPayload+" "), stdID, stdTS, stdSig)
	f.Add([]byte(""), "", "", "")
	f.Add([]byte("x"), "a.b", "-1", "v1, v1a,")

	s := provisionStandard(f, Standard{Secrets: []string{stdSecret, stdEdPub}})
	hmacKey := mustB64(stdBareKey)
	pub := ed25519.PublicKey(mustB64(strings.TrimPrefix(stdEdPub, "whpk_")))
	now := time.Unix(stdTSInt, 0)

	f.Fuzz(func(t *testing.T, body []byte, id, ts, sig string) {
		r := newRequest()
		r.Header["Webhook-Id"] = []string{id}
		r.Header["Webhook-Timestamp"] = []string{ts}
		r.Header["Webhook-Signature"] = []string{sig}
		err := s.Verify(r, body, now)
		if err != nil {
			if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrMismatch) && !errors.Is(err, ErrTimestamp) {
				t.Fatalf("undocumented error %v", err)
			}
			if strings.Contains(err.Error(), stdBareKey) {
				t.Fatalf("error leaks the secret: %v", err)
			}
			return
		}
		if id == "" {
			t.Fatalf("accepted an empty id")
		}
		if sec, err := ParseUnixSeconds(ts); err != nil || sec < stdTSInt-300 || sec > stdTSInt+300 {
			t.Fatalf("accepted timestamp %q", ts)
		}
		msg := append([]byte(id+"."+ts+"."), body...)
		wantV1 := "v1," + EncodingBase64.Encode(hmacOf(sha256.New, hmacKey, msg))
		for _, entry := range strings.Split(sig, " ") {
			if entry == wantV1 {
				return
			}
			if raw, ok := strings.CutPrefix(entry, "v1a,"); ok {
				b, err := base64.StdEncoding.DecodeString(raw)
				if err == nil && base64.StdEncoding.EncodeToString(b) == raw && ed25519.Verify(pub, msg, b) {
					return
				}
			}
		}
		t.Fatalf("accepted %q, which holds no valid signature", sig)
	})
}

func BenchmarkVerifyStandard(b *testing.B) {
	s := provisionStandard(b, Standard{Secrets: []string{stdSecret}})
	body := verifierBenchBody()
	now := time.Unix(stdTSInt, 0)
	r := newRequest(stdHeaders(stdID, stdTS, stdSign(stdSecret, stdID, stdTS, string(body)))...)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := s.Verify(r, body, now); err != nil {
			b.Fatal(err)
		}
	}
}
