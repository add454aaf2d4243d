package verifiers

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

func init() {
	caddy.RegisterModule(Shopify{})
}

// Shopify verifies Shopify webhooks: the X-Shopify-Hmac-Sha256 header holds
// the base64 HMAC-SHA256 of the raw body, keyed with the app's client
// secret as a plain string. The signature must be standard, padded base64.
// Shopify's Events (shopify-* headers) send the same signature as
// shopify-hmac-sha256, which is read when X-Shopify-Hmac-Sha256 is absent.
//
// Several secrets mean rotation: after a client secret is rotated Shopify
// may keep signing with the old one for up to an hour, so configure
// [new, old] until then. Shopify signs no timestamp (X-Shopify-Triggered-At
// is not signed), so there is no replay window; deduplication on
// X-Shopify-Webhook-Id covers replays.
//
// Caddyfile syntax (the words after `verify`):
//
//	shopify [<secret>...] {
//		secret <secret>...
//	}
type Shopify struct {
	// The app client secrets. Placeholders such as {env.NAME} and
	// {file./path} are resolved when the module is provisioned; secrets
	// that resolve to nothing are ignored, but at least one must remain.
	Secrets []string `json:"secrets,omitempty"`

	keys [][]byte
}

// The headers Shopify sends with a webhook.
const (
	ShopifyHMACHeader       = "X-Shopify-Hmac-Sha256"
	ShopifyEventsHMACHeader = "shopify-hmac-sha256"
	ShopifyWebhookIDHeader  = "X-Shopify-Webhook-Id"
	ShopifyEventIDHeader    = "X-Shopify-Event-Id"
)

// CaddyModule returns the Caddy module information.
func (Shopify) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "webhooks.verifiers.shopify",
		New: func() caddy.Module { return new(Shopify) },
	}
}

// Provision resolves the secrets.
func (s *Shopify) Provision(ctx caddy.Context) error {
	var err error
	s.keys, err = ResolveSecrets(s.Secrets)
	return err
}

// Verify checks the request's signature over the raw body.
func (s *Shopify) Verify(r *http.Request, body []byte, now time.Time) error {
	sig := r.Header.Get(ShopifyHMACHeader)
	if sig == "" {
		sig = r.Header.Get(ShopifyEventsHMACHeader)
	}
	if sig == "" {
		return fmt.Errorf("%w: header %s missing", ErrFormat, ShopifyHMACHeader)
	}
	return CheckHMAC(sha256.New, s.keys, EncodingBase64, []string{sig}, body)
}

// DefaultIDFrom returns the webhook id header, then the event id header.
func (*Shopify) DefaultIDFrom() [][2]string {
	return [][2]string{{"header", ShopifyWebhookIDHeader}, {"header", ShopifyEventIDHeader}}
}

// UnmarshalCaddyfile sets up the scheme from Caddyfile tokens; the first
// token is the scheme name. Syntax: see the type's documentation.
func (s *Shopify) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return unmarshalSecretsBlock(d, &s.Secrets, nil)
}

// Interface guards
var (
	_ caddy.Provisioner     = (*Shopify)(nil)
	_ caddyfile.Unmarshaler = (*Shopify)(nil)
	_ Verifier              = (*Shopify)(nil)
	_ IDDefaulter           = (*Shopify)(nil)
)
