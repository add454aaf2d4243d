package verifiers

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// Shopify verifies Shopify webhooks: the X-Shopify-Hmac-Sha256 header holds
// the base64 HMAC-SHA256 of the raw body, keyed with the app's client
// secret as a plain string. The signature must be standard, padded base64.
// Shopify's Events (shopify-* headers) send the same signature as
// shopify-hmac-sha256, which is read when X-Shopify-Hmac-Sha256 is absent.
//
// Like Shopify's own library (shopify-api-js), a request with an empty body
// or without its delivery id is refused as malformed (ErrFormat): Shopify
// always signs a body, and a classic webhook (X-Shopify-Hmac-Sha256)
// always carries X-Shopify-Webhook-Id, which the SDK requires (its
// X-Shopify-Event-Id, shared by every subscription's webhook of one event,
// does not stand in for it); an Event (shopify-hmac-sha256) carries
// shopify-webhook-id, which the SDK requires (shopify-event-id and
// X-Shopify-Event-Id are accepted there too). Header
// names are matched in any letter case.
//
// Several secrets mean rotation: after a client secret is rotated Shopify
// may keep signing with the old one for up to an hour, so configure
// [new, old] until then. Shopify signs no timestamp (X-Shopify-Triggered-At
// is not signed), so there is no replay window; deduplication on
// X-Shopify-Webhook-Id covers replays.
type Shopify struct {
	// SecretsConfig holds the app client secrets (plain strings).
	SecretsConfig

	keys [][]byte
}

// The headers Shopify sends with a webhook.
const (
	ShopifyHMACHeader       = "X-Shopify-Hmac-Sha256"
	ShopifyEventsHMACHeader = "shopify-hmac-sha256"
	ShopifyWebhookIDHeader  = "X-Shopify-Webhook-Id"
	ShopifyEventIDHeader    = "X-Shopify-Event-Id"
	// ShopifyEventsWebhookIDHeader is the delivery id of Shopify's Events
	// (shopify-* headers), the one Shopify's own library requires of them
	// (shopify-api-js 15, checkEventsHeaders), as X-Shopify-Webhook-Id of
	// a classic webhook.
	ShopifyEventsWebhookIDHeader = "shopify-webhook-id"
	// ShopifyEventsEventIDHeader is the event id of Shopify's Events.
	ShopifyEventsEventIDHeader = "shopify-event-id"
)

// shopifyEventsIDHeaders are the headers of which an Event (shopify-*
// headers) must carry one: its delivery id, or its event id.
var shopifyEventsIDHeaders = []string{ShopifyEventsWebhookIDHeader, ShopifyEventsEventIDHeader, ShopifyEventIDHeader}

// CaddyModule returns the Caddy module information.
func (Shopify) CaddyModule() caddy.ModuleInfo {
	return moduleInfo[Shopify]("webhooks.verifiers.shopify")
}

// Provision resolves the secrets.
func (s *Shopify) Provision(ctx caddy.Context) (err error) {
	s.keys, err = s.resolve()
	return err
}

// Verify checks the request's signature over the raw body.
func (s *Shopify) Verify(r *http.Request, body []byte, now time.Time) error {
	_, err := s.VerifyKey(r, body, now)
	return err
}

// VerifyKey is Verify, returning the position among the configured
// secrets of the one that matched (KeyVerifier).
func (s *Shopify) VerifyKey(r *http.Request, body []byte, now time.Time) (int, error) {
	k, err := s.verifyKey(r, body, now)
	return s.keyPosition(k), err
}

// verifyKey checks the request, returning the position of the matching
// key among those in effect.
func (s *Shopify) verifyKey(r *http.Request, body []byte, now time.Time) (int, error) {
	sig, idHeaders := r.Header.Get(ShopifyHMACHeader), []string{ShopifyWebhookIDHeader}
	if sig == "" {
		sig, idHeaders = r.Header.Get(ShopifyEventsHMACHeader), shopifyEventsIDHeaders
	}
	if sig == "" {
		return 0, errHeaderMissing(ShopifyHMACHeader)
	}
	if len(body) == 0 {
		return 0, fmt.Errorf("%w: empty body", ErrFormat)
	}
	if !hasHeader(r.Header, idHeaders) {
		return 0, errHeaderMissing(idHeaders[0])
	}
	return MatchHMAC(sha256.New, s.keys, EncodingBase64, []string{sig}, body)
}

// hasHeader reports whether h has a non-empty value of one of names.
// http.Header.Get matches the name in any letter case.
func hasHeader(h http.Header, names []string) bool {
	for _, name := range names {
		if h.Get(name) != "" {
			return true
		}
	}
	return false
}

// DefaultIDFrom returns the webhook id header, X-Shopify-Webhook-Id. An
// Event's shopify-webhook-id is not a default (yet): no delivery of an
// Event in testdata/providers shows that it names one delivery rather
// than one event for every subscription, so an Event is accepted under a
// generated id.
//
// X-Shopify-Event-Id (and an Event's shopify-event-id) is not a default,
// not even as a fallback: Shopify
// sends one webhook per subscription for the same event, all sharing
// X-Shopify-Event-Id (the docs' "ignore duplicates" guide), and
// subscriptions differ in topic filters and include_fields, so the event
// id would merge distinct deliveries. A delivery with no webhook id is
// accepted under a generated id (never deduplicated).
func (*Shopify) DefaultIDFrom() []IDRule {
	return []IDRule{idHeader(ShopifyWebhookIDHeader)}
}

// UnmarshalCaddyfile sets up the scheme from the Caddyfile tokens after
// `verify`. Syntax:
//
//	shopify [<secret>...] {
//		secret <secret>...
//	}
func (s *Shopify) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return parseSecretsBlock(d, &s.Secrets, nil)
}

// Interface guards
var _ scheme = (*Shopify)(nil)
