package verifiers

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
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
)

func provisionHMAC(t testing.TB, h HMAC) *HMAC {
	t.Helper()
	if err := h.Provision(testContext(t)); err != nil {
		t.Fatalf("provision: %v", err)
	}
	return &h
}

func TestHMACVerify(t *testing.T) {
	plain := HMAC{Secrets: []string{rfcKey}}
	sha1Hex := HMAC{Secrets: []string{rfcKey}, Algorithm: "sha1", Header: "X-Sig"}
	sha1B64 := HMAC{Secrets: []string{rfcKey}, Algorithm: "sha1", Encoding: "base64"}
	sha512B64 := HMAC{Secrets: []string{rfcKey}, Algorithm: "sha512", Encoding: "base64", Prefix: "sha512="}
	rotated := HMAC{Secrets: []string{"new-secret", rfcKey}}
	timed := HMAC{Secrets: []string{rfcKey}, Prefix: "sha256=", TimestampHeader: "X-Timestamp"}
	withID := HMAC{Secrets: []string{rfcKey}, Encoding: "base64", TimestampHeader: "webhook-timestamp",
		IDHeader: "webhook-id", SignedContent: "{id}.{timestamp}.{body}", Tolerance: caddy.Duration(time.Minute)}
	slack := HMAC{Secrets: []string{slackSecret}, Header: "X-Slack-Signature", Prefix: "v0=",
		TimestampHeader: "X-Slack-Request-Timestamp", SignedContent: "v0:{timestamp}:{body}"}

	now := time.Unix(1700000000, 0)
	slackNow := time.Unix(1531420618, 0)

	for _, tc := range []struct {
		name    string
		cfg     HMAC
		headers []string
		body    string
		now     time.Time
		want    error
	}{
		// plain body, default header, sha256, hex
		{name: "rfc4231 sha256 hex", cfg: plain, headers: []string{"X-Signature", rfcSHA256}, body: rfcMsg},
		{name: "empty body", cfg: HMAC{Secrets: []string{"k"}}, headers: []string{"X-Signature", "8bb990c40a7d61cb97597a942125025be50ac8beb74436e3735b98893a7f6620"}, body: ""},
		{name: "uppercase hex", cfg: plain, headers: []string{"X-Signature", strings.ToUpper(rfcSHA256)}, body: rfcMsg, want: ErrMismatch},
		{name: "one body byte changed", cfg: plain, headers: []string{"X-Signature", rfcSHA256}, body: "what do ya want for nothing!", want: ErrMismatch},
		{name: "one signature digit changed", cfg: plain, headers: []string{"X-Signature", "6" + rfcSHA256[1:]}, body: rfcMsg, want: ErrMismatch},
		{name: "wrong secret", cfg: HMAC{Secrets: []string{"jefe"}}, headers: []string{"X-Signature", rfcSHA256}, body: rfcMsg, want: ErrMismatch},
		{name: "truncated", cfg: plain, headers: []string{"X-Signature", rfcSHA256[:63]}, body: rfcMsg, want: ErrFormat},
		{name: "truncated to whole bytes", cfg: plain, headers: []string{"X-Signature", rfcSHA256[:62]}, body: rfcMsg, want: ErrFormat},
		{name: "sha1 length for sha256", cfg: plain, headers: []string{"X-Signature", rfcSHA1}, body: rfcMsg, want: ErrFormat},
		{name: "not hex", cfg: plain, headers: []string{"X-Signature", "z" + rfcSHA256[1:]}, body: rfcMsg, want: ErrFormat},
		{name: "unexpected prefix", cfg: plain, headers: []string{"X-Signature", "sha256=" + rfcSHA256}, body: rfcMsg, want: ErrFormat},
		{name: "missing header", cfg: plain, headers: []string{"X-Other", rfcSHA256}, body: rfcMsg, want: ErrFormat},
		{name: "empty header", cfg: plain, headers: []string{"X-Signature", ""}, body: rfcMsg, want: ErrFormat},
		{name: "two signatures in one header", cfg: plain, headers: []string{"X-Signature", rfcSHA256 + "," + rfcSHA256}, body: rfcMsg, want: ErrFormat},
		{name: "rotation: second secret matches", cfg: rotated, headers: []string{"X-Signature", rfcSHA256}, body: rfcMsg},

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
		{name: "timestamp exactly 5m old", cfg: timed, headers: []string{"X-Signature", "sha256=" + tsSig, "X-Timestamp", tsTS}, body: tsBody, now: now.Add(5 * time.Minute)},
		{name: "timestamp exactly 5m ahead", cfg: timed, headers: []string{"X-Signature", "sha256=" + tsSig, "X-Timestamp", tsTS}, body: tsBody, now: now.Add(-5 * time.Minute)},
		{name: "timestamp 5m1s old", cfg: timed, headers: []string{"X-Signature", "sha256=" + tsSig, "X-Timestamp", tsTS}, body: tsBody, now: now.Add(5*time.Minute + time.Second), want: ErrTimestamp},
		{name: "timestamp 5m1s ahead", cfg: timed, headers: []string{"X-Signature", "sha256=" + tsSig, "X-Timestamp", tsTS}, body: tsBody, now: now.Add(-5*time.Minute - time.Second), want: ErrTimestamp},
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

		// Slack's documented example, expressed with the generic scheme
		{name: "slack docs vector", cfg: slack, headers: []string{"X-Slack-Signature", slackSig, "X-Slack-Request-Timestamp", slackTS}, body: slackBody, now: slackNow},
		{name: "slack docs vector, body changed", cfg: slack, headers: []string{"X-Slack-Signature", slackSig, "X-Slack-Request-Timestamp", slackTS}, body: slackBody + "x", now: slackNow, want: ErrMismatch},
		{name: "slack docs vector, replayed later", cfg: slack, headers: []string{"X-Slack-Signature", slackSig, "X-Slack-Request-Timestamp", slackTS}, body: slackBody, now: slackNow.Add(time.Hour), want: ErrTimestamp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := provisionHMAC(t, tc.cfg)
			err := h.Verify(newRequest(tc.headers...), []byte(tc.body), tc.now)
			checkErr(t, err, tc.want, rfcKey, slackSecret, rfcSHA256, rfcSHA1, tsSig, idSig, slackSig[3:])
		})
	}
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
			cfg:  HMAC{Secrets: []string{"k"}},
			want: HMAC{Secrets: []string{"k"}, Header: "X-Signature", Algorithm: "sha256", Encoding: "hex",
				IDHeader: "Idempotency-Key", SignedContent: "{body}"},
		},
		{
			name: "timestamp defaults",
			cfg:  HMAC{Secrets: []string{"k"}, TimestampHeader: "X-Ts"},
			want: HMAC{Secrets: []string{"k"}, Header: "X-Signature", Algorithm: "sha256", Encoding: "hex",
				IDHeader: "Idempotency-Key", TimestampHeader: "X-Ts", SignedContent: "{timestamp}.{body}",
				Tolerance: caddy.Duration(5 * time.Minute)},
		},
		{
			name: "placeholder stays in the config",
			cfg:  HMAC{Secrets: []string{"{env.HOOKLINE_TEST_HMAC}"}},
			want: HMAC{Secrets: []string{"{env.HOOKLINE_TEST_HMAC}"}, Header: "X-Signature", Algorithm: "sha256",
				Encoding: "hex", IDHeader: "Idempotency-Key", SignedContent: "{body}"},
		},
		{name: "no secret", cfg: HMAC{}, wantErr: "no secret"},
		{name: "secrets resolve to empty", cfg: HMAC{Secrets: []string{"{env.HOOKLINE_TEST_UNSET_XYZ}"}}, wantErr: "non-empty"},
		{name: "bad algorithm", cfg: HMAC{Secrets: []string{"k"}, Algorithm: "md5"}, wantErr: "algorithm"},
		{name: "algorithm is lowercase", cfg: HMAC{Secrets: []string{"k"}, Algorithm: "SHA256"}, wantErr: "algorithm"},
		{name: "bad encoding", cfg: HMAC{Secrets: []string{"k"}, Encoding: "base64url"}, wantErr: "encoding"},
		{name: "negative tolerance", cfg: HMAC{Secrets: []string{"k"}, TimestampHeader: "X-Ts", Tolerance: -1}, wantErr: "negative"},
		{name: "tolerance without timestamp", cfg: HMAC{Secrets: []string{"k"}, Tolerance: caddy.Duration(time.Minute)}, wantErr: "timestamp_header"},
		{name: "template without body", cfg: HMAC{Secrets: []string{"k"}, SignedContent: "{id}"}, wantErr: "{body}"},
		{name: "template with unknown field", cfg: HMAC{Secrets: []string{"k"}, SignedContent: "{body}{method}"}, wantErr: "unknown placeholder"},
		{name: "template unclosed", cfg: HMAC{Secrets: []string{"k"}, SignedContent: "{body"}, wantErr: "unclosed"},
		{name: "timestamp field without header", cfg: HMAC{Secrets: []string{"k"}, SignedContent: "{timestamp}.{body}"}, wantErr: "timestamp_header"},
		{name: "timestamp header not signed", cfg: HMAC{Secrets: []string{"k"}, TimestampHeader: "X-Ts", SignedContent: "{body}"}, wantErr: "{timestamp}"},
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
			got := HMAC{Secrets: h.Secrets, Header: h.Header, Algorithm: h.Algorithm, Encoding: h.Encoding,
				Prefix: h.Prefix, TimestampHeader: h.TimestampHeader, IDHeader: h.IDHeader,
				SignedContent: h.SignedContent, Tolerance: h.Tolerance}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("after Provision:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestHMACResolvedSecret(t *testing.T) {
	t.Setenv("HOOKLINE_TEST_HMAC", rfcKey)
	h := provisionHMAC(t, HMAC{Secrets: []string{"{env.HOOKLINE_TEST_UNSET_XYZ}", "{env.HOOKLINE_TEST_HMAC}"}})
	checkErr(t, h.Verify(newRequest("X-Signature", rfcSHA256), []byte(rfcMsg), time.Now()), nil)
	// the resolved secret never lands in the JSON form of the module
	out, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), rfcKey) {
		t.Fatalf("JSON %s contains the resolved secret", out)
	}
}

func TestHMACDefaultIDFrom(t *testing.T) {
	for _, tc := range []struct {
		cfg  HMAC
		want string
	}{
		{HMAC{Secrets: []string{"k"}}, "Idempotency-Key"},
		{HMAC{Secrets: []string{"k"}, IDHeader: "webhook-id", SignedContent: "{id}.{body}"}, "webhook-id"},
	} {
		for _, h := range []*HMAC{&tc.cfg, provisionHMAC(t, tc.cfg)} {
			got := ruleStrings(h.DefaultIDFrom())
			if len(got) != 1 || got[0] != "header "+tc.want {
				t.Errorf("DefaultIDFrom() = %v, want [[header %s]]", got, tc.want)
			}
		}
	}
}

func TestHMACUnmarshalCaddyfile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		input   string
		want    HMAC
		wantErr bool
	}{
		{name: "secrets on the line", input: `hmac a {env.B}`, want: HMAC{Secrets: []string{"a", "{env.B}"}}},
		{
			name: "full block",
			input: `hmac a {
				secret b c
				secret {file./run/secrets/hook}
				header X-Hook-Signature
				algorithm sha512
				encoding base64
				prefix sha512=
				timestamp_header X-Hook-Timestamp
				id_header X-Hook-Id
				signed_content "{id}.{timestamp}.{body}"
				tolerance 90s
			}`,
			want: HMAC{
				Secrets: []string{"a", "b", "c", "{file./run/secrets/hook}"}, Header: "X-Hook-Signature",
				Algorithm: "sha512", Encoding: "base64", Prefix: "sha512=", TimestampHeader: "X-Hook-Timestamp",
				IDHeader: "X-Hook-Id", SignedContent: "{id}.{timestamp}.{body}", Tolerance: caddy.Duration(90 * time.Second),
			},
		},
		{name: "secret only in block", input: "hmac {\n secret s\n}", want: HMAC{Secrets: []string{"s"}}},
		{name: "unquoted template", input: "hmac s {\n signed_content v0:{timestamp}:{body}\n timestamp_header T\n}",
			want: HMAC{Secrets: []string{"s"}, SignedContent: "v0:{timestamp}:{body}", TimestampHeader: "T"}},
		{name: "tolerance in days", input: "hmac s {\n tolerance 1d\n}", want: HMAC{Secrets: []string{"s"}, Tolerance: caddy.Duration(24 * time.Hour)}},
		{name: "no secret is a provision error, not a parse error", input: `hmac`, want: HMAC{}},
		{name: "secret without value", input: "hmac {\n secret\n}", wantErr: true},
		{name: "header without value", input: "hmac s {\n header\n}", wantErr: true},
		{name: "header with two values", input: "hmac s {\n header A B\n}", wantErr: true},
		{name: "bad algorithm", input: "hmac s {\n algorithm md5\n}", wantErr: true},
		{name: "bad encoding", input: "hmac s {\n encoding base32\n}", wantErr: true},
		{name: "bad tolerance", input: "hmac s {\n tolerance soon\n}", wantErr: true},
		{name: "negative tolerance", input: "hmac s {\n tolerance -1s\n}", wantErr: true},
		{name: "bad template", input: "hmac s {\n signed_content {method}\n}", wantErr: true},
		{name: "unknown option", input: "hmac s {\n algo sha1\n}", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h HMAC
			err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got %+v, want error", h)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(h, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", h, tc.want)
			}
		})
	}
}

func TestHMACModule(t *testing.T) {
	ctx := testContext(t)
	v, err := ctx.LoadModuleByID("webhooks.verifiers.hmac",
		json.RawMessage(`{"secrets":["Jefe"],"algorithm":"sha1","encoding":"base64"}`))
	if err != nil {
		t.Fatal(err)
	}
	ver, ok := v.(Verifier)
	if !ok {
		t.Fatalf("%T is not a Verifier", v)
	}
	checkErr(t, ver.Verify(newRequest("X-Signature", rfcSHA1B), []byte(rfcMsg), time.Now()), nil)

	if _, err := ctx.LoadModuleByID("webhooks.verifiers.hmac", json.RawMessage(`{"secret":"x"}`)); err == nil {
		t.Fatal("unknown JSON field accepted")
	}
	if _, err := ctx.LoadModuleByID("webhooks.verifiers.hmac", json.RawMessage(`{"secrets":["x"],"algorithm":"md5"}`)); err == nil {
		t.Fatal("bad algorithm accepted")
	}
	// round trip: Caddyfile -> JSON -> module
	var h HMAC
	if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser("hmac Jefe {\n tolerance 1m\n timestamp_header X-Ts\n}")); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != `{"secrets":["Jefe"],"timestamp_header":"X-Ts","tolerance":60000000000}` {
		t.Fatalf("JSON = %s", raw)
	}
	if _, err := ctx.LoadModuleByID("webhooks.verifiers.hmac", raw); err != nil {
		t.Fatal(err)
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

	h := provisionHMAC(f, HMAC{Secrets: []string{"other", rfcKey}, Encoding: "base64", Prefix: "sha256=",
		TimestampHeader: "webhook-timestamp", IDHeader: "webhook-id", SignedContent: "{id}.{timestamp}.{body}"})
	now := time.Unix(1700000000, 0)

	f.Fuzz(func(t *testing.T, body []byte, sig, ts, id string) {
		r := newRequest()
		r.Header["X-Signature"] = []string{sig}
		r.Header["Webhook-Timestamp"] = []string{ts}
		r.Header["Webhook-Id"] = []string{id}
		err := h.Verify(r, body, now)
		if err != nil {
			if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrMismatch) && !errors.Is(err, ErrTimestamp) {
				t.Fatalf("undocumented error %v", err)
			}
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

func BenchmarkVerifyHMAC(b *testing.B) {
	h := provisionHMAC(b, HMAC{Secrets: []string{"bench-secret"}, Prefix: "sha256="})
	body := verifierBenchBody()
	r := newRequest(DefaultHMACHeader, "sha256="+EncodingHex.Encode(hmacOf(sha256.New, []byte("bench-secret"), body)))
	now := time.Unix(1700000000, 0)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := h.Verify(r, body, now); err != nil {
			b.Fatal(err)
		}
	}
}
