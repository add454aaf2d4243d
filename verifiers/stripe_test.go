package verifiers

import (
	"crypto/sha256"
	"strconv"
	"strings"
	"testing"
	"time"
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

// stripeSig is the v1 signature of body at ts with secret, computed
// independently of the module.
func stripeSig(secret string, ts int64, body string) string {
	return EncodingHex.Encode(hmacOf(sha256.New, []byte(secret), []byte(strconv.FormatInt(ts, 10)+"."), []byte(body)))
}

func TestStripeVerify(t *testing.T) {
	one := Stripe{TimestampedConfig: timestamped(0, stripeSecret)}
	tol10 := Stripe{TimestampedConfig: timestamped(10*time.Second, stripeSecret)}
	const ts = 1700000000
	now := time.Unix(ts, 0)
	valid := "t=1700000000,v1=" + stripeSig(stripeSecret, ts, stripePayload)
	rolled := stripeSig(stripeSecret+"_rolled_key", ts, stripePayload)
	sigAt := func(at int64) string {
		return "t=" + strconv.FormatInt(at, 10) + ",v1=" + stripeSig(stripeSecret, at, stripePayload)
	}

	runVerifyCases(t, newRequest, []verifyCase[Stripe]{
		// stripe-node fixed-time cases. Where the SDKs report "no valid
		// signature" for a v1 that is not 32 bytes of hex (bad_signature,
		// deadbeef) or for a header without v1, we report a format error,
		// like every scheme here (see CheckHMAC).
		{name: "node: t-9, tolerance 10", cfg: tol10, headers: []string{"Stripe-Signature", "t=19991,v1=" + stripeSig19991}, body: stripePayload, now: time.Unix(stripeNow, 0)},
		{name: "node: t-15, tolerance 10", cfg: tol10, headers: []string{"Stripe-Signature", "t=19985,v1=" + stripeSig19985}, body: stripePayload, now: time.Unix(stripeNow, 0), want: ErrTimestamp},
		{name: "node: t-15, default tolerance", cfg: one, headers: []string{"Stripe-Signature", "t=19985,v1=" + stripeSig19985}, body: stripePayload, now: time.Unix(stripeNow, 0)},
		{name: "node: extra v1=potato ignored", cfg: tol10, headers: []string{"Stripe-Signature", "t=19991,v1=" + stripeSig19991 + ",v1=potato"}, body: stripePayload, now: time.Unix(stripeNow, 0)},
		{name: "node: bad_header", cfg: one, headers: []string{"Stripe-Signature", "bad_header"}, body: stripePayload, now: now, want: ErrFormat},
		{name: "node: not a signature header", cfg: one, headers: []string{"Stripe-Signature", "I'm not even a real signature header"}, body: stripePayload, now: now, want: ErrFormat},
		{name: "node: signature bad_signature", cfg: one, headers: []string{"Stripe-Signature", "t=1700000000,v1=bad_signature"}, body: stripePayload, now: now, want: ErrFormat},
		{name: "node: whitespace in header value is not trimmed", cfg: one, headers: []string{"Stripe-Signature", "t=1700000000, v1=" + stripeSig(stripeSecret, ts, stripePayload)}, body: stripePayload, now: now, want: ErrFormat},

		// stripe-go cases
		{name: "go: valid", cfg: one, headers: []string{"Stripe-Signature", valid}, body: stripePayload, now: now},
		{name: "go: v1,t=1", cfg: one, headers: []string{"Stripe-Signature", "v1,t=1"}, body: stripePayload, now: now, want: ErrFormat},
		{name: "go: t=", cfg: one, headers: []string{"Stripe-Signature", "t="}, body: stripePayload, now: now, want: ErrFormat},
		{name: "go: extra v1=bad_signature ignored", cfg: one, headers: []string{"Stripe-Signature", valid + ",v1=bad_signature"}, body: stripePayload, now: now},
		{name: "go: only a v0 signature", cfg: one, headers: []string{"Stripe-Signature", "t=1700000000,v0=" + stripeSig(stripeSecret, ts, stripePayload)}, body: stripePayload, now: now, want: ErrFormat},
		{name: "go: fake signature deadbeef", cfg: one, headers: []string{"Stripe-Signature", "t=1700000000,v1=6465616462656566"}, body: stripePayload, now: now, want: ErrFormat},
		{name: "go: rolled key, old secret", cfg: one, headers: []string{"Stripe-Signature", valid + ",v1=" + rolled}, body: stripePayload, now: now},
		{name: "go: rolled key, new secret", cfg: Stripe{TimestampedConfig: timestamped(0, stripeSecret+"_rolled_key")}, headers: []string{"Stripe-Signature", valid + ",v1=" + rolled}, body: stripePayload, now: now},
		{name: "go: t-15, tolerance 10", cfg: tol10, headers: []string{"Stripe-Signature", sigAt(ts - 15)}, body: stripePayload, now: now, want: ErrTimestamp},
		{name: "go: t-15, tolerance 20", cfg: Stripe{TimestampedConfig: timestamped(20*time.Second, stripeSecret)}, headers: []string{"Stripe-Signature", sigAt(ts - 15)}, body: stripePayload, now: now},

		// our own
		{name: "secret must not be base64-decoded", cfg: Stripe{TimestampedConfig: timestamped(0, "test_secret")}, headers: []string{"Stripe-Signature", valid}, body: stripePayload, now: now, want: ErrMismatch},
		{name: "re-serialized JSON", cfg: one, headers: []string{"Stripe-Signature", valid}, body: `{"id":"evt_test_webhook","object":"event"}`, now: now, want: ErrMismatch},
		{name: "signed t differs from header t", cfg: one, headers: []string{"Stripe-Signature", "t=1700000001,v1=" + stripeSig(stripeSecret, ts, stripePayload)}, body: stripePayload, now: now, want: ErrMismatch},
		{name: "uppercase hex", cfg: one, headers: []string{"Stripe-Signature", "t=1700000000,v1=" + strings.ToUpper(stripeSig(stripeSecret, ts, stripePayload))}, body: stripePayload, now: now, want: ErrMismatch},
		{name: "truncated signature", cfg: one, headers: []string{"Stripe-Signature", valid[:len(valid)-1]}, body: stripePayload, now: now, want: ErrFormat},
		{name: "truncated by one byte", cfg: one, headers: []string{"Stripe-Signature", valid[:len(valid)-2]}, body: stripePayload, now: now, want: ErrFormat},
		{name: "wrong version v2", cfg: one, headers: []string{"Stripe-Signature", "t=1700000000,v2=" + stripeSig(stripeSecret, ts, stripePayload)}, body: stripePayload, now: now, want: ErrFormat},
		{name: "uppercase version V1", cfg: one, headers: []string{"Stripe-Signature", "t=1700000000,V1=" + stripeSig(stripeSecret, ts, stripePayload)}, body: stripePayload, now: now, want: ErrFormat},
		{name: "v0 and v2 around a valid v1", cfg: one, headers: []string{"Stripe-Signature", "t=1700000000,v0=00,v1=" + stripeSig(stripeSecret, ts, stripePayload) + ",v2=ab"}, body: stripePayload, now: now},
		{name: "elements in any order", cfg: one, headers: []string{"Stripe-Signature", "v1=" + stripeSig(stripeSecret, ts, stripePayload) + ",t=1700000000"}, body: stripePayload, now: now},
		{name: "several v1, none matching", cfg: one, headers: []string{"Stripe-Signature", "t=1700000000,v1=" + strings.Repeat("0", 64) + ",v1=" + rolled}, body: stripePayload, now: now, want: ErrMismatch},
		{name: "no t", cfg: one, headers: []string{"Stripe-Signature", "v1=" + stripeSig(stripeSecret, ts, stripePayload)}, body: stripePayload, now: now, want: ErrFormat},
		{name: "two t", cfg: one, headers: []string{"Stripe-Signature", "t=1700000000,t=1700000000,v1=" + stripeSig(stripeSecret, ts, stripePayload)}, body: stripePayload, now: now, want: ErrFormat},
		{name: "non-numeric t", cfg: one, headers: []string{"Stripe-Signature", "t=17e8,v1=" + stripeSig(stripeSecret, ts, stripePayload)}, body: stripePayload, now: now, want: ErrFormat},
		{name: "negative t", cfg: one, headers: []string{"Stripe-Signature", "t=-1,v1=" + stripeSig(stripeSecret, ts, stripePayload)}, body: stripePayload, now: now, want: ErrFormat},
		{name: "no v1", cfg: one, headers: []string{"Stripe-Signature", "t=1700000000"}, body: stripePayload, now: now, want: ErrFormat},
		{name: "element with two =", cfg: one, headers: []string{"Stripe-Signature", valid + ",v0=a=b"}, body: stripePayload, now: now, want: ErrFormat},
		{name: "empty element", cfg: one, headers: []string{"Stripe-Signature", valid + ","}, body: stripePayload, now: now, want: ErrFormat},
		{name: "doubled comma", cfg: one, headers: []string{"Stripe-Signature", "t=1700000000,,v1=" + stripeSig(stripeSecret, ts, stripePayload)}, body: stripePayload, now: now, want: ErrFormat},

		// timestamps: |now - t| <= tolerance (gateway policy; the SDKs
		// check the age only, see the replay window cases of TestConformance)
		{name: "stale and malformed is a format error", cfg: one, headers: []string{"Stripe-Signature", "t=1,v1=abc"}, body: stripePayload, now: now, want: ErrFormat},
		{name: "stale with a wrong signature", cfg: one, headers: []string{"Stripe-Signature", "t=1,v1=" + rolled}, body: stripePayload, now: now, want: ErrTimestamp},
		{name: "future: a day ahead refused", cfg: one, headers: []string{"Stripe-Signature", sigAt(ts + 86400)}, body: stripePayload, now: now, want: ErrTimestamp},
		{name: "milliseconds: far in the future, refused", cfg: one, headers: []string{"Stripe-Signature", "t=1700000000000,v1=" + stripeSig(stripeSecret, 1700000000000, stripePayload)}, body: stripePayload, now: now, want: ErrTimestamp},
	}, stripeSecret, stripeSig19991, stripeSig(stripeSecret, ts, stripePayload))
}

// TestStripeProvision: as stripe-node, a secret with whitespace in it is
// refused (a copy-and-paste mistake), without the error naming it.
func TestStripeProvision(t *testing.T) {
	for _, secret := range []string{stripeSecret + " ", "whsec_a\nb"} {
		s := Stripe{TimestampedConfig: timestamped(0, secret)}
		err := s.Provision(testContext(t))
		if err == nil {
			t.Fatalf("%q provisioned", secret)
		}
		if strings.Contains(err.Error(), "whsec_") {
			t.Fatalf("error leaks the secret: %v", err)
		}
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
	s := provision(f, Stripe{TimestampedConfig: timestamped(10*time.Second, secrets...)})
	now := time.Unix(stripeNow, 0)

	fuzzHeader(f, s, newRequest, "Stripe-Signature", now, true, func(t *testing.T, body []byte, header string) {
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
	}, stripeSecret)
}
