package verifiers

import (
	"crypto/sha1"
	"crypto/sha256"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// GitHub verifies GitHub webhook deliveries: the X-Hub-Signature-256
// header holds "sha256=" and the lowercase hex HMAC-SHA256 of the raw body
// (form-encoded `payload=...` bodies included), keyed with the webhook
// secret. Several secrets mean rotation: any one may match. GitHub signs no
// timestamp, so there is no replay window; deduplication on
// X-GitHub-Delivery (the same GUID on redelivery) covers replays.
//
// The legacy X-Hub-Signature header ("sha1=" and the HMAC-SHA1) is only
// read when allow_sha1 is set and X-Hub-Signature-256 is absent.
type GitHub struct {
	// SecretsConfig holds the webhook secrets.
	SecretsConfig

	// AllowSHA1 accepts the legacy SHA-1 signature in X-Hub-Signature
	// when the request has no X-Hub-Signature-256. Default: off.
	AllowSHA1 bool `json:"allow_sha1,omitempty"`

	keys [][]byte
}

// The headers GitHub sends with a delivery.
const (
	GitHubSignatureHeader     = "X-Hub-Signature-256"
	GitHubSHA1SignatureHeader = "X-Hub-Signature"
	GitHubDeliveryHeader      = "X-GitHub-Delivery"
)

// CaddyModule returns the Caddy module information.
func (GitHub) CaddyModule() caddy.ModuleInfo {
	return moduleInfo[GitHub]("webhooks.verifiers.github")
}

// Provision resolves the secrets.
func (g *GitHub) Provision(ctx caddy.Context) (err error) {
	g.keys, err = g.resolve()
	return err
}

// Verify checks the request's signature over the raw body.
func (g *GitHub) Verify(r *http.Request, body []byte, now time.Time) error {
	_, err := g.VerifyKey(r, body, now)
	return err
}

// VerifyKey is Verify, returning the position among the configured
// secrets of the one that matched (KeyVerifier).
func (g *GitHub) VerifyKey(r *http.Request, body []byte, now time.Time) (int, error) {
	k, err := g.verifyKey(r, body, now)
	return g.keyPosition(k), err
}

// verifyKey checks the request, returning the position of the matching
// key among those in effect.
func (g *GitHub) verifyKey(r *http.Request, body []byte, now time.Time) (int, error) {
	// only an absent X-Hub-Signature-256 opens the way to the SHA-1
	// fallback: a present but empty one is malformed
	if g.AllowSHA1 && len(r.Header.Values(GitHubSignatureHeader)) == 0 &&
		len(r.Header.Values(GitHubSHA1SignatureHeader)) > 0 {
		return checkPrefixedHMAC(r, GitHubSHA1SignatureHeader, "sha1=", sha1.New, g.keys, EncodingHex, body)
	}
	return checkPrefixedHMAC(r, GitHubSignatureHeader, "sha256=", sha256.New, g.keys, EncodingHex, body)
}

// DefaultIDFrom returns the delivery GUID header.
func (*GitHub) DefaultIDFrom() []IDRule {
	return []IDRule{idHeader(GitHubDeliveryHeader)}
}

// UnmarshalCaddyfile sets up the scheme from the Caddyfile tokens after
// `verify`. Syntax:
//
//	github [<secret>...] {
//		secret <secret>...
//		allow_sha1
//	}
func (g *GitHub) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return parseSecretsBlock(d, &g.Secrets, func(d *caddyfile.Dispenser, name string) (bool, error) {
		if name != "allow_sha1" {
			return false, nil
		}
		if err := noArgs(d); err != nil {
			return true, err
		}
		g.AllowSHA1 = true
		return true, nil
	})
}

// Interface guards
var _ scheme = (*GitHub)(nil)
