package verifiers

import (
	"crypto/sha256"
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

// The official Stripe fixtures. The SDK tests sign at the current time, so
// they have no static expected signature; their secret, payload and fixed
// times are reproduced here and the signatures were computed independently
// (Python hmac module).
//
//   - stripe/stripe-node test/Webhook.spec.ts @66394216 (text checked at
//     0584b27f): SECRET "whsec_test_secret", EVENT_PAYLOAD_STRING =
//     JSON.stringify({id: 'evt_test_webhook', object: 'event'}, null, 2), and
//     "within the tolerance of the provided timestamp": receivedAt 20000000
//     ms, timestamp receivedAt/1000 - 9, tolerance 10 (accepted), and - 15
//     (refused: "Timestamp outside the tolerance zone").
//   - stripe/stripe-go webhook/client_test.go @a1e3932f (text checked at
//     009c0ac1): the same secret, the malformed headers "v1,t=1" and "t=",
//     an extra ",v1=bad_signature" that must be ignored, a header with only
//     a v0 signature, the fake signature []byte("deadbeef"), and the rolled
//     secret testSecret + "_rolled_key" sent as a second v1.
const (
	stripeSecret  = "whsec_test_secret"
	stripePayload = "{\n  \"id\": \"evt_test_webhook\",\n  \"object\": \"event\"\n}"
	stripeNow     = 20000 // receivedAt 20000000 ms
	// HMAC-SHA256(stripeSecret, "19991." + stripePayload)
	stripeSig19991 = "005ec3d9ed97031e44c771ed3a6fdd7e6e5a2ebe43d1c23e407cb00074ff60aa"
	// HMAC-SHA256(stripeSecret, "19985." + stripePayload)
	stripeSig19985 = "934adb23c2f58f64deab2c89db028b0af45bad688e46d3e88bd2d21cbb83ab21"
)

func provisionStripe(t testing.TB, s Stripe) *Stripe {
	t.Helper()
	if err := s.Provision(testContext(t)); err != nil {
		t.Fatalf("provision: %v", err)
	}
	return &s
}

// stripeSig is the v1 signature of body at ts with secret, computed
// independently of the module.
func stripeSig(secret string, ts int64, body string) string {
	return EncodingHex.Encode(hmacOf(sha256.New, []byte(secret), []byte(strconv.FormatInt(ts, 10)+"."), []byte(body)))
}

func TestStripeVerify(t *testing.T) {
	one := Stripe{Secrets: []string{stripeSecret}}
	tol10 := Stripe{Secrets: []string{stripeSecret}, Tolerance: caddy.Duration(10 * time.Second)}
	const ts = 1700000000
	now := time.Unix(ts, 0)
	valid := "t=1700000000,v1=" + stripeSig(stripeSecret, ts, stripePayload)
	rolled := stripeSig(stripeSecret+"_rolled_key", ts, stripePayload)
	sigAt := func(at int64) string {
		return "t=" + strconv.FormatInt(at, 10) + ",v1=" + stripeSig(stripeSecret, at, stripePayload)
	}

	for _, tc := range []struct {
		name   string
		cfg    Stripe
		header *string // nil: no Stripe-Signature header
		body   string
		now    time.Time
		want   error
	}{
		// stripe-node fixed-time cases. Where the SDKs report "no valid
		// signature" for a v1 that is not 32 bytes of hex (bad_signature,
		// deadbeef) or for a header without v1, we report a format error,
		// like every scheme here (see CheckHMAC).
		{name: "node: t-9, tolerance 10", cfg: tol10, header: stripeHdr("t=19991,v1=" + stripeSig19991), body: stripePayload, now: time.Unix(stripeNow, 0)},
		{name: "node: t-15, tolerance 10", cfg: tol10, header: stripeHdr("t=19985,v1=" + stripeSig19985), body: stripePayload, now: time.Unix(stripeNow, 0), want: ErrTimestamp},
		{name: "node: t-15, default tolerance", cfg: one, header: stripeHdr("t=19985,v1=" + stripeSig19985), body: stripePayload, now: time.Unix(stripeNow, 0)},
		{name: "node: extra v1=potato ignored", cfg: tol10, header: stripeHdr("t=19991,v1=" + stripeSig19991 + ",v1=potato"), body: stripePayload, now: time.Unix(stripeNow, 0)},
		{name: "node: bad_header", cfg: one, header: stripeHdr("bad_header"), body: stripePayload, now: now, want: ErrFormat},
		{name: "node: not a signature header", cfg: one, header: stripeHdr("I'm not even a real signature header"), body: stripePayload, now: now, want: ErrFormat},
		{name: "node: signature bad_signature", cfg: one, header: stripeHdr("t=1700000000,v1=bad_signature"), body: stripePayload, now: now, want: ErrFormat},
		{name: "node: whitespace in header value is not trimmed", cfg: one, header: stripeHdr("t=1700000000, v1=" + stripeSig(stripeSecret, ts, stripePayload)), body: stripePayload, now: now, want: ErrFormat},

		// stripe-go cases
		{name: "go: valid", cfg: one, header: &valid, body: stripePayload, now: now},
		{name: "go: v1,t=1", cfg: one, header: stripeHdr("v1,t=1"), body: stripePayload, now: now, want: ErrFormat},
		{name: "go: t=", cfg: one, header: stripeHdr("t="), body: stripePayload, now: now, want: ErrFormat},
		{name: "go: extra v1=bad_signature ignored", cfg: one, header: stripeHdr(valid + ",v1=bad_signature"), body: stripePayload, now: now},
		{name: "go: only a v0 signature", cfg: one, header: stripeHdr("t=1700000000,v0=" + stripeSig(stripeSecret, ts, stripePayload)), body: stripePayload, now: now, want: ErrFormat},
		{name: "go: fake signature deadbeef", cfg: one, header: stripeHdr("t=1700000000,v1=6465616462656566"), body: stripePayload, now: now, want: ErrFormat},
		{name: "go: rolled key, old secret", cfg: one, header: stripeHdr(valid + ",v1=" + rolled), body: stripePayload, now: now},
		{name: "go: rolled key, new secret", cfg: Stripe{Secrets: []string{stripeSecret + "_rolled_key"}}, header: stripeHdr(valid + ",v1=" + rolled), body: stripePayload, now: now},
		{name: "go: t-15, tolerance 10", cfg: tol10, header: stripeHdr(sigAt(ts - 15)), body: stripePayload, now: now, want: ErrTimestamp},
		{name: "go: t-15, tolerance 20", cfg: Stripe{Secrets: []string{stripeSecret}, Tolerance: caddy.Duration(20 * time.Second)}, header: stripeHdr(sigAt(ts - 15)), body: stripePayload, now: now},

		// our own
		{name: "wrong secret", cfg: Stripe{Secrets: []string{"whsec_test_secreT"}}, header: &valid, body: stripePayload, now: now, want: ErrMismatch},
		{name: "secret must not be base64-decoded", cfg: Stripe{Secrets: []string{"test_secret"}}, header: &valid, body: stripePayload, now: now, want: ErrMismatch},
		{name: "one body byte changed", cfg: one, header: &valid, body: strings.Replace(stripePayload, "evt_test", "evt_tesT", 1), now: now, want: ErrMismatch},
		{name: "re-serialized JSON", cfg: one, header: &valid, body: `{"id":"evt_test_webhook","object":"event"}`, now: now, want: ErrMismatch},
		{name: "signed t differs from header t", cfg: one, header: stripeHdr("t=1700000001,v1=" + stripeSig(stripeSecret, ts, stripePayload)), body: stripePayload, now: now, want: ErrMismatch},
		{name: "uppercase hex", cfg: one, header: stripeHdr("t=1700000000,v1=" + strings.ToUpper(stripeSig(stripeSecret, ts, stripePayload))), body: stripePayload, now: now, want: ErrMismatch},
		{name: "truncated signature", cfg: one, header: stripeHdr(valid[:len(valid)-1]), body: stripePayload, now: now, want: ErrFormat},
		{name: "truncated by one byte", cfg: one, header: stripeHdr(valid[:len(valid)-2]), body: stripePayload, now: now, want: ErrFormat},
		{name: "wrong version v2", cfg: one, header: stripeHdr("t=1700000000,v2=" + stripeSig(stripeSecret, ts, stripePayload)), body: stripePayload, now: now, want: ErrFormat},
		{name: "uppercase version V1", cfg: one, header: stripeHdr("t=1700000000,V1=" + stripeSig(stripeSecret, ts, stripePayload)), body: stripePayload, now: now, want: ErrFormat},
		{name: "v0 and v2 around a valid v1", cfg: one, header: stripeHdr("t=1700000000,v0=00,v1=" + stripeSig(stripeSecret, ts, stripePayload) + ",v2=ab"), body: stripePayload, now: now},
		{name: "elements in any order", cfg: one, header: stripeHdr("v1=" + stripeSig(stripeSecret, ts, stripePayload) + ",t=1700000000"), body: stripePayload, now: now},
		{name: "several v1, none matching", cfg: one, header: stripeHdr("t=1700000000,v1=" + strings.Repeat("0", 64) + ",v1=" + rolled), body: stripePayload, now: now, want: ErrMismatch},
		{name: "rotation: second secret matches", cfg: Stripe{Secrets: []string{"whsec_new", stripeSecret}}, header: &valid, body: stripePayload, now: now},
		{name: "rotation: no secret matches", cfg: Stripe{Secrets: []string{"whsec_new", "whsec_old"}}, header: &valid, body: stripePayload, now: now, want: ErrMismatch},
		{name: "missing header", cfg: one, body: stripePayload, now: now, want: ErrFormat},
		{name: "empty header", cfg: one, header: stripeHdr(""), body: stripePayload, now: now, want: ErrFormat},
		{name: "no t", cfg: one, header: stripeHdr("v1=" + stripeSig(stripeSecret, ts, stripePayload)), body: stripePayload, now: now, want: ErrFormat},
		{name: "two t", cfg: one, header: stripeHdr("t=1700000000,t=1700000000,v1=" + stripeSig(stripeSecret, ts, stripePayload)), body: stripePayload, now: now, want: ErrFormat},
		{name: "non-numeric t", cfg: one, header: stripeHdr("t=17e8,v1=" + stripeSig(stripeSecret, ts, stripePayload)), body: stripePayload, now: now, want: ErrFormat},
		{name: "negative t", cfg: one, header: stripeHdr("t=-1,v1=" + stripeSig(stripeSecret, ts, stripePayload)), body: stripePayload, now: now, want: ErrFormat},
		{name: "no v1", cfg: one, header: stripeHdr("t=1700000000"), body: stripePayload, now: now, want: ErrFormat},
		{name: "element with two =", cfg: one, header: stripeHdr(valid + ",v0=a=b"), body: stripePayload, now: now, want: ErrFormat},
		{name: "empty element", cfg: one, header: stripeHdr(valid + ","), body: stripePayload, now: now, want: ErrFormat},
		{name: "doubled comma", cfg: one, header: stripeHdr("t=1700000000,,v1=" + stripeSig(stripeSecret, ts, stripePayload)), body: stripePayload, now: now, want: ErrFormat},

		// timestamps: |now - t| <= tolerance (gateway policy; the SDKs
		// check the age only, see TestStripeFutureTimestamp)
		{name: "exactly 300s old", cfg: one, header: stripeHdr(sigAt(ts - 300)), body: stripePayload, now: now},
		{name: "301s old", cfg: one, header: stripeHdr(sigAt(ts - 301)), body: stripePayload, now: now, want: ErrTimestamp},
		{name: "stale and malformed is a format error", cfg: one, header: stripeHdr("t=1,v1=abc"), body: stripePayload, now: now, want: ErrFormat},
		{name: "stale with a wrong signature", cfg: one, header: stripeHdr("t=1,v1=" + rolled), body: stripePayload, now: now, want: ErrTimestamp},
		{name: "future: exactly 300s ahead accepted", cfg: one, header: stripeHdr(sigAt(ts + 300)), body: stripePayload, now: now},
		{name: "future: 301s ahead refused", cfg: one, header: stripeHdr(sigAt(ts + 301)), body: stripePayload, now: now, want: ErrTimestamp},
		{name: "future: a day ahead refused", cfg: one, header: stripeHdr(sigAt(ts + 86400)), body: stripePayload, now: now, want: ErrTimestamp},
		{name: "milliseconds: far in the future, refused", cfg: one, header: stripeHdr("t=1700000000000,v1=" + stripeSig(stripeSecret, 1700000000000, stripePayload)), body: stripePayload, now: now, want: ErrTimestamp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := provisionStripe(t, tc.cfg)
			r := newRequest()
			if tc.header != nil {
				r.Header.Set("Stripe-Signature", *tc.header)
			}
			err := s.Verify(r, []byte(tc.body), tc.now)
			checkErr(t, err, tc.want, stripeSecret, stripeSig19991, stripeSig(stripeSecret, ts, stripePayload))
		})
	}
}

// TestStripeFutureTimestamp checks the gateway policy of SIGNATURES.md
// ("reject when |now - ts| > tolerance; exactly equal is accepted") for
// timestamps ahead of the clock, which the Stripe SDKs accept: a signature
// dated more than the tolerance in the future is refused, one dated
// exactly the tolerance ahead is accepted.
func TestStripeFutureTimestamp(t *testing.T) {
	const ts = 1700000000
	now := time.Unix(ts, 0)
	sigAt := func(at int64) *string {
		return stripeHdr("t=" + strconv.FormatInt(at, 10) + ",v1=" + stripeSig(stripeSecret, at, stripePayload))
	}
	def := Stripe{Secrets: []string{stripeSecret}}
	tol10 := Stripe{Secrets: []string{stripeSecret}, Tolerance: caddy.Duration(10 * time.Second)}
	for _, tc := range []struct {
		name string
		cfg  Stripe
		at   int64 // signing time
		now  time.Time
		want error
	}{
		{name: "default: 1s ahead", cfg: def, at: ts + 1, now: now},
		{name: "default: exactly 300s ahead", cfg: def, at: ts + 300, now: now},
		{name: "default: 301s ahead", cfg: def, at: ts + 301, now: now, want: ErrTimestamp},
		{name: "default: an hour ahead", cfg: def, at: ts + 3600, now: now, want: ErrTimestamp},
		{name: "tolerance 10: exactly 10s ahead", cfg: tol10, at: ts + 10, now: now},
		{name: "tolerance 10: 11s ahead", cfg: tol10, at: ts + 11, now: now, want: ErrTimestamp},
		{name: "tolerance 10: exactly 10s old", cfg: tol10, at: ts - 10, now: now},
		{name: "tolerance 10: 11s old", cfg: tol10, at: ts - 11, now: now, want: ErrTimestamp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := provisionStripe(t, tc.cfg)
			err := s.Verify(newRequest("Stripe-Signature", *sigAt(tc.at)), []byte(stripePayload), tc.now)
			checkErr(t, err, tc.want, stripeSecret)
		})
	}
}

// ptr returns a pointer to s.
func stripeHdr(s string) *string { return &s }

func TestStripeProvision(t *testing.T) {
	t.Setenv("HOOKLINE_TEST_STRIPE", stripeSecret)
	for _, tc := range []struct {
		name    string
		cfg     Stripe
		wantTol time.Duration
		wantErr bool
	}{
		{name: "literal", cfg: Stripe{Secrets: []string{stripeSecret}}, wantTol: 5 * time.Minute},
		{name: "env", cfg: Stripe{Secrets: []string{"{env.HOOKLINE_TEST_STRIPE}"}}, wantTol: 5 * time.Minute},
		{name: "unset old secret ignored", cfg: Stripe{Secrets: []string{"{env.HOOKLINE_TEST_STRIPE}", "{env.HOOKLINE_TEST_UNSET_XYZ}"}}, wantTol: 5 * time.Minute},
		{name: "tolerance kept", cfg: Stripe{Secrets: []string{stripeSecret}, Tolerance: caddy.Duration(time.Hour)}, wantTol: time.Hour},
		{name: "none", wantErr: true},
		{name: "all empty", cfg: Stripe{Secrets: []string{"", "{env.HOOKLINE_TEST_UNSET_XYZ}"}}, wantErr: true},
		{name: "negative tolerance", cfg: Stripe{Secrets: []string{stripeSecret}, Tolerance: -1}, wantErr: true},
		{name: "trailing space in secret", cfg: Stripe{Secrets: []string{stripeSecret + " "}}, wantErr: true},
		{name: "newline inside secret", cfg: Stripe{Secrets: []string{"whsec_a\nb"}}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.cfg
			err := s.Provision(testContext(t))
			if tc.wantErr {
				if err == nil {
					t.Fatal("want error")
				}
				if strings.Contains(err.Error(), "whsec_") {
					t.Fatalf("error leaks the secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if time.Duration(s.Tolerance) != tc.wantTol {
				t.Fatalf("tolerance %v, want %v", time.Duration(s.Tolerance), tc.wantTol)
			}
			hdr := "t=19991,v1=" + stripeSig19991
			checkErr(t, s.Verify(newRequest("Stripe-Signature", hdr), []byte(stripePayload), time.Unix(stripeNow, 0)), nil)
		})
	}
}

func TestStripeDefaultIDFrom(t *testing.T) {
	got := ruleStrings((&Stripe{}).DefaultIDFrom())
	if want := []string{"json id"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("DefaultIDFrom() = %v, want %v", got, want)
	}
}

func TestStripeUnmarshalCaddyfile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		input   string
		want    Stripe
		wantErr bool
	}{
		{name: "one secret", input: `stripe {env.STRIPE_SECRET}`, want: Stripe{Secrets: []string{"{env.STRIPE_SECRET}"}}},
		{name: "rotation on the line", input: `stripe {env.STRIPE_SECRET} {env.STRIPE_SECRET_OLD}`, want: Stripe{Secrets: []string{"{env.STRIPE_SECRET}", "{env.STRIPE_SECRET_OLD}"}}},
		{name: "block", input: "stripe a {\n secret b c\n tolerance 5m\n}", want: Stripe{Secrets: []string{"a", "b", "c"}, Tolerance: caddy.Duration(5 * time.Minute)}},
		{name: "block only", input: "stripe {\n secret whsec_x\n tolerance 90s\n}", want: Stripe{Secrets: []string{"whsec_x"}, Tolerance: caddy.Duration(90 * time.Second)}},
		{name: "secret without value", input: "stripe {\n secret\n}", wantErr: true},
		{name: "tolerance without value", input: "stripe s {\n tolerance\n}", wantErr: true},
		{name: "tolerance with two values", input: "stripe s {\n tolerance 1m 2m\n}", wantErr: true},
		{name: "bad tolerance", input: "stripe s {\n tolerance soon\n}", wantErr: true},
		{name: "negative tolerance", input: "stripe s {\n tolerance -1m\n}", wantErr: true},
		{name: "unknown option", input: "stripe s {\n allow_sha1\n}", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s Stripe
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

func TestStripeModule(t *testing.T) {
	ctx := testContext(t)
	v, err := ctx.LoadModuleByID("webhooks.verifiers.stripe", json.RawMessage(`{"secrets":["whsec_test_secret"],"tolerance":10000000000}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := v.(IDDefaulter); !ok {
		t.Fatalf("%T is not an IDDefaulter", v)
	}
	r := newRequest("Stripe-Signature", "t=19985,v1="+stripeSig19985)
	checkErr(t, v.(Verifier).Verify(r, []byte(stripePayload), time.Unix(stripeNow, 0)), ErrTimestamp)
	if _, err := ctx.LoadModuleByID("webhooks.verifiers.stripe", json.RawMessage(`{}`)); err == nil {
		t.Fatal("module without secrets provisioned")
	}
	if _, err := ctx.LoadModuleByID("webhooks.verifiers.stripe", json.RawMessage(`{"secrets":["x"],"tolerence":1}`)); err == nil {
		t.Fatal("unknown JSON field accepted")
	}
}

// FuzzStripeHeader feeds arbitrary Stripe-Signature values and bodies.
// Verify must never panic, must never report anything but the documented
// errors, and must accept only a header with exactly one t, within the
// tolerance of now in either direction, and a v1 element that is the lowercase hex
// HMAC of the exact t and body under one of the secrets.
func FuzzStripeHeader(f *testing.F) {
	f.Add([]byte(stripePayload), "t=19991,v1="+stripeSig19991)
	f.Add([]byte(stripePayload), "t=19991,v1="+strings.ToUpper(stripeSig19991))
	f.Add([]byte(stripePayload), "t=19991,v1="+stripeSig19991[:63])
	f.Add([]byte(stripePayload), "t=19991,v0="+stripeSig19991+",v1=00")
	f.Add([]byte(stripePayload), "t=19985,v1="+stripeSig19985)
	f.Add([]byte(stripePayload+" "), "t=19991,v1="+stripeSig19991)
	f.Add([]byte(""), "t=,v1=")
	f.Add([]byte("x"), "v1,t=1")

	secrets := []string{"whsec_other", stripeSecret}
	s := provisionStripe(f, Stripe{Secrets: secrets, Tolerance: caddy.Duration(10 * time.Second)})
	now := time.Unix(stripeNow, 0)

	f.Fuzz(func(t *testing.T, body []byte, header string) {
		r := newRequest()
		r.Header["Stripe-Signature"] = []string{header}
		err := s.Verify(r, body, now)
		if err != nil {
			if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrMismatch) && !errors.Is(err, ErrTimestamp) {
				t.Fatalf("undocumented error %v", err)
			}
			if strings.Contains(err.Error(), stripeSecret) {
				t.Fatalf("error leaks the secret: %v", err)
			}
			return
		}
		var ts []string
		var v1 []string
		for _, elem := range strings.Split(header, ",") {
			if kv := strings.Split(elem, "="); len(kv) != 2 {
				t.Fatalf("accepted header %q with a malformed element %q", header, elem)
			} else if kv[0] == "t" {
				ts = append(ts, kv[1])
			} else if kv[0] == "v1" {
				v1 = append(v1, kv[1])
			}
		}
		if len(ts) != 1 {
			t.Fatalf("accepted header %q without exactly one t", header)
		}
		sec, err := ParseUnixSeconds(ts[0])
		if err != nil || stripeNow-sec > 10 || sec-stripeNow > 10 {
			t.Fatalf("accepted header %q with a bad, stale or future t", header)
		}
		for _, key := range secrets {
			want := EncodingHex.Encode(hmacOf(sha256.New, []byte(key), []byte(ts[0]+"."), body))
			for _, sig := range v1 {
				if sig == want {
					return
				}
			}
		}
		t.Fatalf("accepted header %q, which has no valid v1 signature", header)
	})
}

// verifierBenchBody is a 1 KiB JSON event body.
func verifierBenchBody() []byte {
	b := []byte(`{"id":"evt_1","object":"event","type":"charge.succeeded","data":{"pad":"`)
	for len(b) < 1024-3 {
		b = append(b, 'x')
	}
	return append(b, `"}}`...)
}

func BenchmarkVerifyStripe(b *testing.B) {
	s := provisionStripe(b, Stripe{Secrets: []string{stripeSecret}})
	body := verifierBenchBody()
	now := time.Unix(1700000000, 0)
	r := newRequest("Stripe-Signature", "t=1700000000,v1="+stripeSig(stripeSecret, 1700000000, string(body)))
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := s.Verify(r, body, now); err != nil {
			b.Fatal(err)
		}
	}
}
