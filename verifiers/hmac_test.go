package verifiers

import (
	"crypto/sha256"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Fixed vectors. "Jefe" / "what do ya want for nothing?" is test case 2
// of RFC 2202 (HMAC-SHA1) and RFC 4231 (HMAC-SHA256, HMAC-SHA512). The
// Slack vector is the example of Slack's "Verifying requests from Slack"
// docs, as used by slackapi/python-slack-sdk
// tests/slack_sdk/signature/test_signature_verifier.py @ae87985e. The
// timestamped ones were computed independently (Python hmac module).
const (
	rfcKey    = "Jefe"
	rfcMsg    = "what do ya want for nothing?"
	rfcSHA1   = "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79"
	rfcSHA256 = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
	rfcSHA1B  = "7/zfauXrL6LSdBbV8YTfnCWafHk="
	rfcSHA512 = "Fkt6e/z4GeLjlfvnO1bgo4e9ZCIugx/WECcM1+olBVSXWL91wFqZSm0DT2X48Ob9yuqxo01Ka0tjbgcKOLznNw=="

	tsBody = `{"a":1}`
	tsTS   = "1700000000"
	// HMAC-SHA256("Jefe", "1700000000." + tsBody), hex
	tsSig = "fa5f6481efc59da48b19c9dc10196c9953e5651f8304b3a318b6b87d70272e0a"
	// HMAC-SHA256("Jefe", "msg_1.1700000000." + tsBody), base64
	idSig = "d0RJKx1I1gWj34NuiszgvZNnbDFFnv95Rn8tyEgvdd8="

	slackSecret = "8f742231b10e8888abcd99yyyzzz85a5"
	slackTS     = "1531420618"
	slackBody   = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
	slackSig    = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"

	// RFC 2202 test case 2, HMAC-MD5
	rfcMD5 = "750c783e6ab0b503eaa86e310a5db738"
	// HMAC-SHA256("Jefe", "1700000000123." + tsBody), hex: milliseconds
	msTS  = "1700000000123"
	msSig = "d5918de0eafb570952a039dff845b0d89c971fdebee4d5e8891319c2540e7193"
	// HMAC-SHA256("Jefe", "2023-11-14T22:13:20.5Z." + tsBody), hex:
	// RFC 3339, half a second after tsTS
	rfcTS  = "2023-11-14T22:13:20.5Z"
	rfcSig = "5fe50e7ff9aa2a36babb1f31368cef5c74b643fc7facf64564ff1edd42521183"
)

func TestHMACVerify(t *testing.T) {
	plain := HMAC{SecretsConfig: keyed(rfcKey)}
	sha1Hex := HMAC{SecretsConfig: keyed(rfcKey), Algorithm: "sha1", Header: "X-Sig"}
	sha1B64 := HMAC{SecretsConfig: keyed(rfcKey), Algorithm: "sha1", Encoding: "base64"}
	sha512B64 := HMAC{SecretsConfig: keyed(rfcKey), Algorithm: "sha512", Encoding: "base64", Prefix: "sha512="}
	timed := HMAC{SecretsConfig: keyed(rfcKey), Prefix: "sha256=", TimestampHeader: "X-Timestamp"}
	withID := HMAC{SecretsConfig: keyed(rfcKey), Encoding: "base64", TimestampHeader: "webhook-timestamp",
		IDHeader: "webhook-id", SignedContent: "{id}.{timestamp}.{body}", ToleranceConfig: tolerance(time.Minute)}
	slack := HMAC{SecretsConfig: keyed(slackSecret), Header: "X-Slack-Signature", Prefix: "v0=",
		TimestampHeader: "X-Slack-Request-Timestamp", SignedContent: "v0:{timestamp}:{body}"}
	params := HMAC{SecretsConfig: keyed(rfcKey), SignatureParam: "v1", TimestampParam: "t"}
	sigOnly := HMAC{SecretsConfig: keyed(rfcKey), SignatureParam: "v1"}
	millis := HMAC{SecretsConfig: keyed(rfcKey), TimestampHeader: "X-Ts", TimestampFormat: "unix_ms"}
	rfc3339 := HMAC{SecretsConfig: keyed(rfcKey), TimestampHeader: "X-Ts", TimestampFormat: "rfc3339"}
	md5Hex := HMAC{SecretsConfig: keyed(rfcKey), Algorithm: "md5"}
	b64Key := HMAC{SecretsConfig: keyed("SmVmZQ=="), SecretEncoding: "base64"}
	hexKey := HMAC{SecretsConfig: keyed("4a656665"), SecretEncoding: "hex"}

	now := time.Unix(1700000000, 0)
	slackNow := time.Unix(1531420618, 0)

	runVerifyCases(t, newRequest, []verifyCase[HMAC]{
		// plain body, default header, sha256, hex
		{name: "rfc4231 sha256 hex", cfg: plain, headers: []string{"X-Signature", rfcSHA256}, body: rfcMsg},
		{name: "empty body", cfg: HMAC{SecretsConfig: keyed("k")}, headers: []string{"X-Signature", "8bb990c40a7d61cb97597a942125025be50ac8beb74436e3735b98893a7f6620"}, body: ""},
		{name: "secret in another letter case", cfg: HMAC{SecretsConfig: keyed("jefe")}, headers: []string{"X-Signature", rfcSHA256}, body: rfcMsg, want: ErrMismatch},
		{name: "sha1 length for sha256", cfg: plain, headers: []string{"X-Signature", rfcSHA1}, body: rfcMsg, want: ErrFormat},
		{name: "unexpected prefix", cfg: plain, headers: []string{"X-Signature", "sha256=" + rfcSHA256}, body: rfcMsg, want: ErrFormat},
		{name: "two signatures in one header", cfg: plain, headers: []string{"X-Signature", rfcSHA256 + "," + rfcSHA256}, body: rfcMsg, want: ErrFormat},

		// sha1, custom header name (matched case-insensitively, as HTTP does)
		{name: "rfc2202 sha1 hex", cfg: sha1Hex, headers: []string{"x-sig", rfcSHA1}, body: rfcMsg},
		{name: "sha1 on default header", cfg: sha1Hex, headers: []string{"X-Signature", rfcSHA1}, body: rfcMsg, want: ErrFormat},

		// base64
		{name: "sha1 base64", cfg: sha1B64, headers: []string{"X-Signature", rfcSHA1B}, body: rfcMsg},
		{name: "base64 unpadded", cfg: sha1B64, headers: []string{"X-Signature", strings.TrimSuffix(rfcSHA1B, "=")}, body: rfcMsg, want: ErrMismatch},
		{name: "base64url", cfg: sha1B64, headers: []string{"X-Signature", strings.ReplaceAll(rfcSHA1B, "/", "_")}, body: rfcMsg, want: ErrMismatch},
		{name: "base64 non-zero trailing bits", cfg: sha1B64, headers: []string{"X-Signature", strings.Replace(rfcSHA1B, "k=", "l=", 1)}, body: rfcMsg, want: ErrMismatch},
		{name: "hex where base64 expected", cfg: sha1B64, headers: []string{"X-Signature", rfcSHA1}, body: rfcMsg, want: ErrFormat},
		{name: "base64 garbage", cfg: sha1B64, headers: []string{"X-Signature", "!!!!" + rfcSHA1B[4:]}, body: rfcMsg, want: ErrFormat},
		{name: "rfc4231 sha512 base64 with prefix", cfg: sha512B64, headers: []string{"X-Signature", "sha512=" + rfcSHA512}, body: rfcMsg},
		{name: "sha512 base64 without prefix", cfg: sha512B64, headers: []string{"X-Signature", rfcSHA512}, body: rfcMsg, want: ErrFormat},
		{name: "prefix is case-sensitive", cfg: sha512B64, headers: []string{"X-Signature", "SHA512=" + rfcSHA512}, body: rfcMsg, want: ErrFormat},

		// timestamp: default template "{timestamp}.{body}", tolerance 5m
		{name: "timestamped", cfg: timed, headers: []string{"X-Signature", "sha256=" + tsSig, "X-Timestamp", tsTS}, body: tsBody, now: now},
		{name: "timestamp is signed", cfg: timed, headers: []string{"X-Signature", "sha256=" + tsSig, "X-Timestamp", "1700000001"}, body: tsBody, now: now, want: ErrMismatch},
		{name: "timestamp missing", cfg: timed, headers: []string{"X-Signature", "sha256=" + tsSig}, body: tsBody, now: now, want: ErrFormat},
		{name: "timestamp not numeric", cfg: timed, headers: []string{"X-Signature", "sha256=" + tsSig, "X-Timestamp", "soon"}, body: tsBody, now: now, want: ErrFormat},
		{name: "timestamp with fraction", cfg: timed, headers: []string{"X-Signature", "sha256=" + tsSig, "X-Timestamp", tsTS + ".0"}, body: tsBody, now: now, want: ErrFormat},
		{name: "timestamp negative", cfg: timed, headers: []string{"X-Signature", "sha256=" + tsSig, "X-Timestamp", "-" + tsTS}, body: tsBody, now: now, want: ErrFormat},
		{name: "timestamp in milliseconds", cfg: timed, headers: []string{"X-Signature", "sha256=" + tsSig, "X-Timestamp", tsTS + "000"}, body: tsBody, now: now, want: ErrTimestamp},
		{name: "malformed signature beats stale timestamp", cfg: timed, headers: []string{"X-Signature", "sha256=" + tsSig[:10], "X-Timestamp", "1"}, body: tsBody, now: now, want: ErrFormat},

		// {id}.{timestamp}.{body}, base64, 1m tolerance
		{name: "id template", cfg: withID, headers: []string{"webhook-id", "msg_1", "webhook-timestamp", tsTS, "X-Signature", idSig}, body: tsBody, now: now.Add(time.Minute)},
		{name: "id template, other id", cfg: withID, headers: []string{"webhook-id", "msg_2", "webhook-timestamp", tsTS, "X-Signature", idSig}, body: tsBody, now: now, want: ErrMismatch},
		{name: "id template, id missing", cfg: withID, headers: []string{"webhook-timestamp", tsTS, "X-Signature", idSig}, body: tsBody, now: now, want: ErrFormat},
		{name: "id template, custom tolerance", cfg: withID, headers: []string{"webhook-id", "msg_1", "webhook-timestamp", tsTS, "X-Signature", idSig}, body: tsBody, now: now.Add(61 * time.Second), want: ErrTimestamp},

		// signature and timestamp as parameters of one header
		{name: "params", cfg: params, headers: []string{"X-Signature", "t=" + tsTS + ",v1=" + tsSig}, body: tsBody, now: now},
		{name: "params, spaces and another version", cfg: params, headers: []string{"X-Signature", "t=" + tsTS + ", v0=abc, v1=" + tsSig}, body: tsBody, now: now},
		{name: "params, rotation: two signatures", cfg: params, headers: []string{"X-Signature", "t=" + tsTS + ",v1=" + rfcSHA256 + " t=" + tsTS + ",v1=" + tsSig}, body: tsBody, now: now},
		{name: "params, two timestamps", cfg: params, headers: []string{"X-Signature", "t=" + tsTS + ",v1=" + tsSig + ",t=1700000001"}, body: tsBody, now: now, want: ErrFormat},
		{name: "params, no timestamp", cfg: params, headers: []string{"X-Signature", "v1=" + tsSig}, body: tsBody, now: now, want: ErrFormat},
		{name: "params, no signature", cfg: params, headers: []string{"X-Signature", "t=" + tsTS + ",v0=" + tsSig}, body: tsBody, now: now, want: ErrFormat},
		{name: "params, not key=value", cfg: params, headers: []string{"X-Signature", "t=" + tsTS + "," + tsSig}, body: tsBody, now: now, want: ErrFormat},
		{name: "params, stale", cfg: params, headers: []string{"X-Signature", "t=" + tsTS + ",v1=" + tsSig}, body: tsBody, now: now.Add(6 * time.Minute), want: ErrTimestamp},
		{name: "params, timestamp is signed", cfg: params, headers: []string{"X-Signature", "t=1700000001,v1=" + tsSig}, body: tsBody, now: now, want: ErrMismatch},
		{name: "params, signatures only", cfg: sigOnly, headers: []string{"X-Signature", "v1=" + rfcSHA1 + ",v1=" + rfcSHA256}, body: rfcMsg},
		{name: "params, signatures only, a parameter of no key", cfg: sigOnly, headers: []string{"X-Signature", "=x,v1=" + rfcSHA256 + ",=y"}, body: rfcMsg},

		// timestamp formats
		{name: "unix_ms", cfg: millis, headers: []string{"X-Signature", msSig, "X-Ts", msTS}, body: tsBody, now: now},
		{name: "unix_ms read as seconds would be stale", cfg: millis, headers: []string{"X-Signature", msSig, "X-Ts", msTS}, body: tsBody, now: now.Add(5*time.Minute + time.Second), want: ErrTimestamp},
		{name: "unix_ms not a number", cfg: millis, headers: []string{"X-Signature", msSig, "X-Ts", "1.7e12"}, body: tsBody, now: now, want: ErrFormat},
		{name: "rfc3339", cfg: rfc3339, headers: []string{"X-Signature", rfcSig, "X-Ts", rfcTS}, body: tsBody, now: now},
		{name: "rfc3339, stale", cfg: rfc3339, headers: []string{"X-Signature", rfcSig, "X-Ts", rfcTS}, body: tsBody, now: now.Add(-6 * time.Minute), want: ErrTimestamp},
		{name: "rfc3339, unix seconds", cfg: rfc3339, headers: []string{"X-Signature", tsSig, "X-Ts", tsTS}, body: tsBody, now: now, want: ErrFormat},

		// md5, and secrets written in base64 or hex
		{name: "rfc2202 md5 hex", cfg: md5Hex, headers: []string{"X-Signature", rfcMD5}, body: rfcMsg},
		{name: "base64 secret", cfg: b64Key, headers: []string{"X-Signature", rfcSHA256}, body: rfcMsg},
		{name: "hex secret", cfg: hexKey, headers: []string{"X-Signature", rfcSHA256}, body: rfcMsg},

		// Slack's documented example, expressed with the generic scheme
		{name: "slack docs vector", cfg: slack, headers: []string{"X-Slack-Signature", slackSig, "X-Slack-Request-Timestamp", slackTS}, body: slackBody, now: slackNow},
		{name: "slack docs vector, body changed", cfg: slack, headers: []string{"X-Slack-Signature", slackSig, "X-Slack-Request-Timestamp", slackTS}, body: slackBody + "x", now: slackNow, want: ErrMismatch},
		{name: "slack docs vector, replayed later", cfg: slack, headers: []string{"X-Slack-Signature", slackSig, "X-Slack-Request-Timestamp", slackTS}, body: slackBody, now: slackNow.Add(time.Hour), want: ErrTimestamp},
	}, rfcKey, slackSecret, rfcSHA256, rfcSHA1, tsSig, idSig, slackSig[3:], msSig, rfcSig)
}

func TestHMACProvision(t *testing.T) {
	t.Setenv("HOOKLINE_TEST_HMAC", "s3cret")
	for _, tc := range []struct {
		name    string
		cfg     HMAC
		want    HMAC // exported fields after Provision
		wantErr string
	}{
		{
			name: "defaults",
			cfg:  HMAC{SecretsConfig: keyed("k")},
			want: HMAC{SecretsConfig: keyed("k"), Header: "X-Signature", Algorithm: "sha256", Encoding: "hex",
				IDHeader: "Idempotency-Key", SignedContent: "{body}"},
		},
		{
			name: "timestamp defaults",
			cfg:  HMAC{SecretsConfig: keyed("k"), TimestampHeader: "X-Ts"},
			want: HMAC{SecretsConfig: keyed("k"), Header: "X-Signature", Algorithm: "sha256", Encoding: "hex",
				IDHeader: "Idempotency-Key", TimestampHeader: "X-Ts", SignedContent: "{timestamp}.{body}",
				ToleranceConfig: tolerance(5 * time.Minute)},
		},
		{
			name: "placeholder stays in the config",
			cfg:  HMAC{SecretsConfig: keyed("{env.HOOKLINE_TEST_HMAC}")},
			want: HMAC{SecretsConfig: keyed("{env.HOOKLINE_TEST_HMAC}"), Header: "X-Signature", Algorithm: "sha256",
				Encoding: "hex", IDHeader: "Idempotency-Key", SignedContent: "{body}"},
		},
		{name: "no secret", cfg: HMAC{}, wantErr: "no secret"},
		{name: "secrets resolve to empty", cfg: HMAC{SecretsConfig: keyed("{env.HOOKLINE_TEST_UNSET_XYZ}")}, wantErr: "non-empty"},
		{name: "bad algorithm", cfg: HMAC{SecretsConfig: keyed("k"), Algorithm: "sha3-256"}, wantErr: "algorithm"},
		{name: "algorithm is lowercase", cfg: HMAC{SecretsConfig: keyed("k"), Algorithm: "SHA256"}, wantErr: "algorithm"},
		{name: "bad encoding", cfg: HMAC{SecretsConfig: keyed("k"), Encoding: "base64url"}, wantErr: "encoding"},
		{name: "negative tolerance", cfg: HMAC{SecretsConfig: keyed("k"), TimestampHeader: "X-Ts", ToleranceConfig: tolerance(-1)}, wantErr: "negative"},
		{name: "tolerance without timestamp", cfg: HMAC{SecretsConfig: keyed("k"), ToleranceConfig: tolerance(time.Minute)}, wantErr: "timestamp_header"},
		{name: "template without body", cfg: HMAC{SecretsConfig: keyed("k"), SignedContent: "{id}"}, wantErr: "{body}"},
		{name: "template with unknown field", cfg: HMAC{SecretsConfig: keyed("k"), SignedContent: "{body}{method}"}, wantErr: "unknown placeholder"},
		{name: "template unclosed", cfg: HMAC{SecretsConfig: keyed("k"), SignedContent: "{body"}, wantErr: "unclosed"},
		{name: "timestamp field without header", cfg: HMAC{SecretsConfig: keyed("k"), SignedContent: "{timestamp}.{body}"}, wantErr: "timestamp_header"},
		{name: "timestamp header not signed", cfg: HMAC{SecretsConfig: keyed("k"), TimestampHeader: "X-Ts", SignedContent: "{body}"}, wantErr: "{timestamp}"},
		{name: "timestamp_param alone", cfg: HMAC{SecretsConfig: keyed("k"), TimestampParam: "t"}, wantErr: "signature_param"},
		{name: "timestamp twice", cfg: HMAC{SecretsConfig: keyed("k"), SignatureParam: "v1", TimestampParam: "t", TimestampHeader: "X-Ts"}, wantErr: "keep one"},
		{name: "prefix with params", cfg: HMAC{SecretsConfig: keyed("k"), SignatureParam: "v1", Prefix: "v1="}, wantErr: "prefix"},
		{name: "one key for both params", cfg: HMAC{SecretsConfig: keyed("k"), SignatureParam: "v1", TimestampParam: "v1"}, wantErr: "different keys"},
		{name: "bad timestamp_format", cfg: HMAC{SecretsConfig: keyed("k"), TimestampHeader: "X-Ts", TimestampFormat: "iso"}, wantErr: "timestamp_format"},
		{name: "timestamp_format without timestamp", cfg: HMAC{SecretsConfig: keyed("k"), TimestampFormat: "unix_ms"}, wantErr: "timestamp_header"},
		{name: "bad secret_encoding", cfg: HMAC{SecretsConfig: keyed("k"), SecretEncoding: "base32"}, wantErr: "secret_encoding"},
		{name: "secret not hex", cfg: HMAC{SecretsConfig: keyed("{env.HOOKLINE_TEST_HMAC}"), SecretEncoding: "hex"}, wantErr: "secret 1 is not hex"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.cfg
			err := h.Provision(testContext(t))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Fatalf("error leaks the secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := HMAC{SecretsConfig: SecretsConfig{Secrets: h.Secrets}, Header: h.Header, Algorithm: h.Algorithm, Encoding: h.Encoding,
				Prefix: h.Prefix, TimestampHeader: h.TimestampHeader, IDHeader: h.IDHeader,
				SignedContent: h.SignedContent, ToleranceConfig: h.ToleranceConfig}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("after Provision:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestHMACDefaultIDFrom(t *testing.T) {
	for _, tc := range []struct {
		cfg  HMAC
		want string
	}{
		{HMAC{SecretsConfig: keyed("k")}, "Idempotency-Key"},
		{HMAC{SecretsConfig: keyed("k"), IDHeader: "webhook-id", SignedContent: "{id}.{body}"}, "webhook-id"},
	} {
		for _, h := range []*HMAC{&tc.cfg, provision(t, tc.cfg)} {
			got := ruleStrings(h.DefaultIDFrom())
			if len(got) != 1 || got[0] != "header "+tc.want {
				t.Errorf("DefaultIDFrom() = %v, want [[header %s]]", got, tc.want)
			}
		}
	}
}

// FuzzHMACHeader feeds arbitrary signature and timestamp headers and
// bodies to a timestamped base64 configuration. Verify must never panic,
// must never report anything but the three documented errors, and must
// accept only the exact canonical signature of the exact content.
func FuzzHMACHeader(f *testing.F) {
	f.Add([]byte(tsBody), "sha256="+idSig, tsTS, "msg_1")
	f.Add([]byte(tsBody), "sha256="+strings.TrimRight(idSig, "="), tsTS, "msg_1")
	f.Add([]byte(tsBody), "sha256="+idSig, "1700000001", "msg_1")
	f.Add([]byte(""), "sha256=", "", "")
	f.Add([]byte("x"), "sha256=AAAA", "-1", "x")
	f.Add([]byte(tsBody), idSig, tsTS, "msg_1")

	h := provision(f, HMAC{SecretsConfig: keyed("other", rfcKey), Encoding: "base64", Prefix: "sha256=",
		TimestampHeader: "webhook-timestamp", IDHeader: "webhook-id", SignedContent: "{id}.{timestamp}.{body}"})
	now := time.Unix(1700000000, 0)

	f.Fuzz(func(t *testing.T, body []byte, sig, ts, id string) {
		r := newRequest()
		r.Header["X-Signature"] = []string{sig}
		r.Header["Webhook-Timestamp"] = []string{ts}
		r.Header["Webhook-Id"] = []string{id}
		if fuzzRefused(t, h.Verify(r, body, now), true) {
			return
		}
		valid := false
		for _, key := range []string{"other", rfcKey} {
			want := "sha256=" + EncodingBase64.Encode(hmacOf(sha256.New, []byte(key), []byte(id+"."+ts+"."), body))
			valid = valid || sig == want
		}
		if !valid {
			t.Fatalf("accepted signature %q, which is not the canonical signature of the content", sig)
		}
		if _, err := ParseUnixSeconds(ts); err != nil || id == "" {
			t.Fatalf("accepted timestamp %q / id %q", ts, id)
		}
	})
}
