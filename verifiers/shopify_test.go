package verifiers

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// The official Shopify vector, from Shopify/shopify-app-js @ef2043d4:
// packages/apps/shopify-api/lib/webhooks/__tests__/validate.test.ts
// ("returns true for valid request": rawBody '{"foo": "bar"}', expected
// hmac B23tXN681gZ0qIWNRrgtzBE9XSDo5yaUu6wfmhu3a7g=; text checked at
// 01fe9dac) with apiSecretKey 'test_secret_key' from
// packages/apps/shopify-api/lib/__tests__/test-config.ts. The same test's
// utils.ts headers() sends hmac 'fake' for "returns false on invalid HMAC".
const (
	shopifySecret = "test_secret_key"
	shopifyBody   = `{"foo": "bar"}`
	shopifySig    = "B23tXN681gZ0qIWNRrgtzBE9XSDo5yaUu6wfmhu3a7g="
	// shopifyID is the X-Shopify-Webhook-Id of the test requests: Verify
	// requires a delivery id, as shopify-api-js does.
	shopifyID = "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043"
)

// shopifyRequest returns a request with the given headers and a delivery
// id (X-Shopify-Webhook-Id).
func shopifyRequest(headers ...string) *http.Request {
	return newRequest(append([]string{"X-Shopify-Webhook-Id", shopifyID}, headers...)...)
}

func provisionShopify(t testing.TB, s Shopify) *Shopify {
	t.Helper()
	if err := s.Provision(testContext(t)); err != nil {
		t.Fatalf("provision: %v", err)
	}
	return &s
}

func TestShopifyVerify(t *testing.T) {
	one := Shopify{Secrets: []string{shopifySecret}}
	now := time.Unix(1700000000, 0)
	raw := mustB64(shopifySig)

	for _, tc := range []struct {
		name    string
		cfg     Shopify
		headers []string // sent with X-Shopify-Webhook-Id
		body    string
		want    error
	}{
		{name: "official vector", cfg: one, headers: []string{"X-Shopify-Hmac-Sha256", shopifySig}, body: shopifyBody},
		{name: "official: hmac fake", cfg: one, headers: []string{"X-Shopify-Hmac-Sha256", "fake"}, body: shopifyBody, want: ErrFormat},
		{name: "official: empty hmac", cfg: one, headers: []string{"X-Shopify-Hmac-Sha256", ""}, body: shopifyBody, want: ErrFormat},
		{name: "lowercase header name", cfg: one, headers: []string{"x-shopify-hmac-sha256", shopifySig}, body: shopifyBody},
		{name: "events header shopify-hmac-sha256", cfg: one, headers: []string{"shopify-hmac-sha256", shopifySig}, body: shopifyBody},
		{name: "both headers, X-Shopify wins", cfg: one, headers: []string{"X-Shopify-Hmac-Sha256", shopifySig, "shopify-hmac-sha256", "AAAA"}, body: shopifyBody},
		{name: "both headers, bad X-Shopify one", cfg: one, headers: []string{"X-Shopify-Hmac-Sha256", strings.Repeat("A", 43) + "=", "shopify-hmac-sha256", shopifySig}, body: shopifyBody, want: ErrMismatch},
		{name: "wrong secret", cfg: Shopify{Secrets: []string{"test_secret_keY"}}, headers: []string{"X-Shopify-Hmac-Sha256", shopifySig}, body: shopifyBody, want: ErrMismatch},
		{name: "one body byte changed", cfg: one, headers: []string{"X-Shopify-Hmac-Sha256", shopifySig}, body: `{"foo": "baz"}`, want: ErrMismatch},
		{name: "re-serialized JSON", cfg: one, headers: []string{"X-Shopify-Hmac-Sha256", shopifySig}, body: `{"foo":"bar"}`, want: ErrMismatch},
		{name: "empty body", cfg: one, headers: []string{"X-Shopify-Hmac-Sha256", shopifySig}, body: "", want: ErrFormat},
		{name: "one signature digit changed", cfg: one, headers: []string{"X-Shopify-Hmac-Sha256", "C" + shopifySig[1:]}, body: shopifyBody, want: ErrMismatch},
		{name: "unpadded", cfg: one, headers: []string{"X-Shopify-Hmac-Sha256", strings.TrimRight(shopifySig, "=")}, body: shopifyBody, want: ErrMismatch},
		{name: "hex instead of base64", cfg: one, headers: []string{"X-Shopify-Hmac-Sha256", EncodingHex.Encode(raw)}, body: shopifyBody, want: ErrFormat},
		{name: "truncated", cfg: one, headers: []string{"X-Shopify-Hmac-Sha256", shopifySig[:40]}, body: shopifyBody, want: ErrFormat},
		{name: "extra characters", cfg: one, headers: []string{"X-Shopify-Hmac-Sha256", shopifySig + "AAAA"}, body: shopifyBody, want: ErrFormat},
		{name: "sha256= prefix", cfg: one, headers: []string{"X-Shopify-Hmac-Sha256", "sha256=" + shopifySig}, body: shopifyBody, want: ErrFormat},
		{name: "missing header", cfg: one, body: shopifyBody, want: ErrFormat},
		{name: "only the webhook id", cfg: one, headers: []string{"X-Shopify-Webhook-Id", "123456789"}, body: shopifyBody, want: ErrFormat},
		{name: "rotation: second secret matches", cfg: Shopify{Secrets: []string{"new_secret", shopifySecret}}, headers: []string{"X-Shopify-Hmac-Sha256", shopifySig}, body: shopifyBody},
		{name: "rotation: no secret matches", cfg: Shopify{Secrets: []string{"new_secret", "old_secret"}}, headers: []string{"X-Shopify-Hmac-Sha256", shopifySig}, body: shopifyBody, want: ErrMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := provisionShopify(t, tc.cfg)
			err := s.Verify(shopifyRequest(tc.headers...), []byte(tc.body), now)
			checkErr(t, err, tc.want, shopifySecret, shopifySig)
		})
	}
}

// TestShopifyRequiresBodyAndID: like shopify-api-js, an empty body or a
// request without a delivery id (X-Shopify-Webhook-Id; for Events
// shopify-event-id, or X-Shopify-Event-Id) is malformed (ErrFormat), even
// with a correct HMAC. Header names match in any letter case.
func TestShopifyRequiresBodyAndID(t *testing.T) {
	s := provisionShopify(t, Shopify{Secrets: []string{shopifySecret}})
	emptySig := EncodingBase64.Encode(hmacOf(sha256.New, []byte(shopifySecret), nil))
	for _, tc := range []struct {
		name    string
		headers []string
		body    string
		want    error
	}{
		{name: "webhook id", headers: []string{"X-Shopify-Hmac-Sha256", shopifySig, "X-Shopify-Webhook-Id", shopifyID}, body: shopifyBody},
		{name: "webhook id, lowercase name", headers: []string{"X-Shopify-Hmac-Sha256", shopifySig, "x-shopify-webhook-id", shopifyID}, body: shopifyBody},
		{name: "events: shopify-event-id", headers: []string{"shopify-hmac-sha256", shopifySig, "shopify-event-id", shopifyID}, body: shopifyBody},
		{name: "events: Shopify-Event-Id", headers: []string{"Shopify-Hmac-Sha256", shopifySig, "Shopify-Event-Id", shopifyID}, body: shopifyBody},
		{name: "X-Shopify-Event-Id", headers: []string{"X-Shopify-Hmac-Sha256", shopifySig, "X-Shopify-Event-Id", shopifyID}, body: shopifyBody},
		{name: "X-Shopify-Hmac with shopify-event-id", headers: []string{"X-Shopify-Hmac-Sha256", shopifySig, "shopify-event-id", shopifyID}, body: shopifyBody},
		{name: "no id header", headers: []string{"X-Shopify-Hmac-Sha256", shopifySig}, body: shopifyBody, want: ErrFormat},
		{name: "events: no id header", headers: []string{"shopify-hmac-sha256", shopifySig}, body: shopifyBody, want: ErrFormat},
		{name: "empty webhook id", headers: []string{"X-Shopify-Hmac-Sha256", shopifySig, "X-Shopify-Webhook-Id", ""}, body: shopifyBody, want: ErrFormat},
		{name: "id in another header only", headers: []string{"X-Shopify-Hmac-Sha256", shopifySig, "X-Shopify-Topic", "orders/create", "Webhook-Id", shopifyID}, body: shopifyBody, want: ErrFormat},
		{name: "empty body, its correct HMAC", headers: []string{"X-Shopify-Hmac-Sha256", emptySig, "X-Shopify-Webhook-Id", shopifyID}, body: "", want: ErrFormat},
		{name: "events: empty body, its correct HMAC", headers: []string{"shopify-hmac-sha256", emptySig, "shopify-event-id", shopifyID}, body: "", want: ErrFormat},
		{name: "empty body and no id", headers: []string{"X-Shopify-Hmac-Sha256", emptySig}, body: "", want: ErrFormat},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Verify(newRequest(tc.headers...), []byte(tc.body), time.Unix(1700000000, 0))
			checkErr(t, err, tc.want, shopifySecret, shopifySig, emptySig)
		})
	}
}

func TestShopifyURLAlphabetRefused(t *testing.T) {
	// A signature whose standard form holds '+' or '/': its base64url
	// spelling must be refused. Body chosen so that the MAC has both.
	s := provisionShopify(t, Shopify{Secrets: []string{shopifySecret}})
	for i := 0; ; i++ {
		body := []byte(shopifyBody + strings.Repeat(" ", i))
		std := EncodingBase64.Encode(hmacOf(sha256.New, []byte(shopifySecret), body))
		if !strings.ContainsAny(std, "+/") {
			continue
		}
		url := strings.NewReplacer("+", "-", "/", "_").Replace(std)
		checkErr(t, s.Verify(shopifyRequest("X-Shopify-Hmac-Sha256", std), body, time.Now()), nil)
		checkErr(t, s.Verify(shopifyRequest("X-Shopify-Hmac-Sha256", url), body, time.Now()), ErrMismatch, shopifySecret, std)
		return
	}
}

func TestShopifyProvision(t *testing.T) {
	t.Setenv("HOOKLINE_TEST_SHOPIFY", shopifySecret)
	for _, tc := range []struct {
		name    string
		secrets []string
		wantErr bool
	}{
		{name: "literal", secrets: []string{shopifySecret}},
		{name: "env", secrets: []string{"{env.HOOKLINE_TEST_SHOPIFY}"}},
		{name: "unset old secret ignored", secrets: []string{"{env.HOOKLINE_TEST_SHOPIFY}", "{env.HOOKLINE_TEST_UNSET_XYZ}"}},
		{name: "none", wantErr: true},
		{name: "all empty", secrets: []string{"", "{env.HOOKLINE_TEST_UNSET_XYZ}"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Shopify{Secrets: tc.secrets}
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
			checkErr(t, s.Verify(shopifyRequest("X-Shopify-Hmac-Sha256", shopifySig), []byte(shopifyBody), time.Now()), nil)
		})
	}
}

func TestShopifyDefaultIDFrom(t *testing.T) {
	got := ruleStrings((&Shopify{}).DefaultIDFrom())
	if want := []string{"header X-Shopify-Webhook-Id"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("DefaultIDFrom() = %v, want %v", got, want)
	}
}

func TestShopifyUnmarshalCaddyfile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		input   string
		want    Shopify
		wantErr bool
	}{
		{name: "one secret", input: `shopify {env.SHOPIFY_SECRET}`, want: Shopify{Secrets: []string{"{env.SHOPIFY_SECRET}"}}},
		{name: "rotation", input: `shopify new old`, want: Shopify{Secrets: []string{"new", "old"}}},
		{name: "block", input: "shopify a {\n secret b\n secret c\n}", want: Shopify{Secrets: []string{"a", "b", "c"}}},
		{name: "secret without value", input: "shopify {\n secret\n}", wantErr: true},
		{name: "no tolerance: nothing is timestamped", input: "shopify s {\n tolerance 5m\n}", wantErr: true},
		{name: "unknown option", input: "shopify s {\n header X\n}", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s Shopify
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

func TestShopifyModule(t *testing.T) {
	ctx := testContext(t)
	v, err := ctx.LoadModuleByID("webhooks.verifiers.shopify", json.RawMessage(`{"secrets":["test_secret_key"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := v.(IDDefaulter); !ok {
		t.Fatalf("%T is not an IDDefaulter", v)
	}
	checkErr(t, v.(Verifier).Verify(shopifyRequest("X-Shopify-Hmac-Sha256", shopifySig), []byte(shopifyBody), time.Now()), nil)
	if _, err := ctx.LoadModuleByID("webhooks.verifiers.shopify", json.RawMessage(`{}`)); err == nil {
		t.Fatal("module without secrets provisioned")
	}
	if _, err := ctx.LoadModuleByID("webhooks.verifiers.shopify", json.RawMessage(`{"secrets":["x"],"tolerance":1}`)); err == nil {
		t.Fatal("unknown JSON field accepted")
	}
}

// FuzzShopifyHeader feeds arbitrary X-Shopify-Hmac-Sha256 values and
// bodies. Verify must never panic, must never report anything but the
// documented errors, and must accept only the canonical base64 HMAC of
// the exact, non-empty body under one of the secrets.
func FuzzShopifyHeader(f *testing.F) {
	f.Add([]byte(shopifyBody), shopifySig)
	f.Add([]byte(shopifyBody), strings.TrimRight(shopifySig, "="))
	f.Add([]byte(shopifyBody), shopifySig[:43]+"A")
	f.Add([]byte(shopifyBody), "fake")
	f.Add([]byte(`{"foo":"bar"}`), shopifySig)
	f.Add([]byte(""), "")

	secrets := []string{"new_secret", shopifySecret}
	s := provisionShopify(f, Shopify{Secrets: secrets})
	now := time.Unix(1700000000, 0)

	f.Fuzz(func(t *testing.T, body []byte, sig string) {
		r := shopifyRequest()
		r.Header["X-Shopify-Hmac-Sha256"] = []string{sig}
		err := s.Verify(r, body, now)
		if err != nil {
			if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrMismatch) {
				t.Fatalf("undocumented error %v", err)
			}
			if strings.Contains(err.Error(), shopifySecret) {
				t.Fatalf("error leaks the secret: %v", err)
			}
			return
		}
		if len(body) == 0 {
			t.Fatal("accepted an empty body")
		}
		for _, key := range secrets {
			if sig == EncodingBase64.Encode(hmacOf(sha256.New, []byte(key), body)) {
				return
			}
		}
		t.Fatalf("accepted %q, which is not the HMAC of the body", sig)
	})
}

func BenchmarkVerifyShopify(b *testing.B) {
	s := provisionShopify(b, Shopify{Secrets: []string{shopifySecret}})
	body := verifierBenchBody()
	r := shopifyRequest("X-Shopify-Hmac-Sha256", EncodingBase64.Encode(hmacOf(sha256.New, []byte(shopifySecret), body)))
	now := time.Unix(1700000000, 0)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := s.Verify(r, body, now); err != nil {
			b.Fatal(err)
		}
	}
}
