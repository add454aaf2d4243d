package verifiers

import (
	"crypto/sha256"
	"net/http"
	"strings"
	"testing"
	"time"
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

func TestShopifyVerify(t *testing.T) {
	one := Shopify{SecretsConfig: keyed(shopifySecret)}

	// each request carries X-Shopify-Webhook-Id (shopifyRequest)
	runVerifyCases(t, shopifyRequest, []verifyCase[Shopify]{
		{name: "official vector", cfg: one, headers: []string{"X-Shopify-Hmac-Sha256", shopifySig}, body: shopifyBody},
		{name: "official: hmac fake", cfg: one, headers: []string{"X-Shopify-Hmac-Sha256", "fake"}, body: shopifyBody, want: ErrFormat},
		{name: "official: empty hmac", cfg: one, headers: []string{"X-Shopify-Hmac-Sha256", ""}, body: shopifyBody, want: ErrFormat},
		{name: "events header shopify-hmac-sha256", cfg: one, headers: []string{"shopify-hmac-sha256", shopifySig, "shopify-event-id", shopifyID}, body: shopifyBody},
		{name: "both headers, X-Shopify wins", cfg: one, headers: []string{"X-Shopify-Hmac-Sha256", shopifySig, "shopify-hmac-sha256", "AAAA"}, body: shopifyBody},
		{name: "both headers, bad X-Shopify one", cfg: one, headers: []string{"X-Shopify-Hmac-Sha256", strings.Repeat("A", 43) + "=", "shopify-hmac-sha256", shopifySig}, body: shopifyBody, want: ErrMismatch},
		{name: "secret with one letter changed", cfg: Shopify{SecretsConfig: keyed("test_secret_keY")}, headers: []string{"X-Shopify-Hmac-Sha256", shopifySig}, body: shopifyBody, want: ErrMismatch},
		{name: "re-serialized JSON", cfg: one, headers: []string{"X-Shopify-Hmac-Sha256", shopifySig}, body: `{"foo":"bar"}`, want: ErrMismatch},
		{name: "empty body", cfg: one, headers: []string{"X-Shopify-Hmac-Sha256", shopifySig}, body: "", want: ErrFormat},
		{name: "sha256= prefix", cfg: one, headers: []string{"X-Shopify-Hmac-Sha256", "sha256=" + shopifySig}, body: shopifyBody, want: ErrFormat},
		{name: "only the webhook id", cfg: one, headers: []string{"X-Shopify-Webhook-Id", "123456789"}, body: shopifyBody, want: ErrFormat},
	}, shopifySecret, shopifySig)
}

// TestShopifyRequiresBodyAndID: like shopify-api-js, an empty body or a
// request without a delivery id (X-Shopify-Webhook-Id; for Events
// shopify-event-id, or X-Shopify-Event-Id) is malformed (ErrFormat), even
// with a correct HMAC. Header names match in any letter case.
func TestShopifyRequiresBodyAndID(t *testing.T) {
	one := Shopify{SecretsConfig: keyed(shopifySecret)}
	emptySig := EncodingBase64.Encode(hmacOf(sha256.New, []byte(shopifySecret), nil))
	runVerifyCases(t, newRequest, []verifyCase[Shopify]{
		{name: "webhook id", cfg: one, headers: []string{"X-Shopify-Hmac-Sha256", shopifySig, "X-Shopify-Webhook-Id", shopifyID}, body: shopifyBody},
		{name: "webhook id, lowercase name", cfg: one, headers: []string{"X-Shopify-Hmac-Sha256", shopifySig, "x-shopify-webhook-id", shopifyID}, body: shopifyBody},
		{name: "events: shopify-event-id", cfg: one, headers: []string{"shopify-hmac-sha256", shopifySig, "shopify-event-id", shopifyID}, body: shopifyBody},
		// what shopify-api-js 15 requires of an Event (TestOfficialSDKs
		// runs it)
		{name: "events: shopify-webhook-id", cfg: one, headers: []string{"shopify-hmac-sha256", shopifySig, "shopify-webhook-id", shopifyID}, body: shopifyBody},
		{name: "events: Shopify-Event-Id", cfg: one, headers: []string{"Shopify-Hmac-Sha256", shopifySig, "Shopify-Event-Id", shopifyID}, body: shopifyBody},
		{name: "events: X-Shopify-Event-Id", cfg: one, headers: []string{"shopify-hmac-sha256", shopifySig, "X-Shopify-Event-Id", shopifyID}, body: shopifyBody},
		// a classic webhook needs its webhook id, as shopify-api-js does
		// (MissingHeaders): the event id, which every subscription's
		// webhook of one event shares, does not stand in for it
		{name: "classic: X-Shopify-Event-Id only", cfg: one, headers: []string{"X-Shopify-Hmac-Sha256", shopifySig, "X-Shopify-Event-Id", shopifyID}, body: shopifyBody, want: ErrFormat},
		{name: "classic: shopify-event-id only", cfg: one, headers: []string{"X-Shopify-Hmac-Sha256", shopifySig, "shopify-event-id", shopifyID}, body: shopifyBody, want: ErrFormat},
		{name: "events: X-Shopify-Webhook-Id only", cfg: one, headers: []string{"shopify-hmac-sha256", shopifySig, "X-Shopify-Webhook-Id", shopifyID}, body: shopifyBody, want: ErrFormat},
		{name: "no id header", cfg: one, headers: []string{"X-Shopify-Hmac-Sha256", shopifySig}, body: shopifyBody, want: ErrFormat},
		{name: "events: no id header", cfg: one, headers: []string{"shopify-hmac-sha256", shopifySig}, body: shopifyBody, want: ErrFormat},
		{name: "empty webhook id", cfg: one, headers: []string{"X-Shopify-Hmac-Sha256", shopifySig, "X-Shopify-Webhook-Id", ""}, body: shopifyBody, want: ErrFormat},
		{name: "id in another header only", cfg: one, headers: []string{"X-Shopify-Hmac-Sha256", shopifySig, "X-Shopify-Topic", "orders/create", "Webhook-Id", shopifyID}, body: shopifyBody, want: ErrFormat},
		{name: "empty body, its correct HMAC", cfg: one, headers: []string{"X-Shopify-Hmac-Sha256", emptySig, "X-Shopify-Webhook-Id", shopifyID}, body: "", want: ErrFormat},
		{name: "events: empty body, its correct HMAC", cfg: one, headers: []string{"shopify-hmac-sha256", emptySig, "shopify-event-id", shopifyID}, body: "", want: ErrFormat},
		{name: "empty body and no id", cfg: one, headers: []string{"X-Shopify-Hmac-Sha256", emptySig}, body: "", want: ErrFormat},
	}, shopifySecret, shopifySig, emptySig)
}

func TestShopifyURLAlphabetRefused(t *testing.T) {
	// A signature whose standard form holds '+' or '/': its base64url
	// spelling must be refused. Body chosen so that the MAC has both.
	s := provision(t, Shopify{SecretsConfig: keyed(shopifySecret)})
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
	s := provision(f, Shopify{SecretsConfig: keyed(secrets...)})
	now := time.Unix(1700000000, 0)

	fuzzHeader(f, s, shopifyRequest, "X-Shopify-Hmac-Sha256", now, false, func(t *testing.T, body []byte, sig string) {
		if len(body) == 0 {
			t.Fatal("accepted an empty body")
		}
		for _, key := range secrets {
			if sig == EncodingBase64.Encode(hmacOf(sha256.New, []byte(key), body)) {
				return
			}
		}
		t.Fatalf("accepted %q, which is not the HMAC of the body", sig)
	}, shopifySecret)
}
