package verifiers

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// GitLab verifies GitLab webhooks by their secret token: the X-Gitlab-Token
// header must equal one of the configured tokens. GitLab sends the token
// as is; it signs nothing, so the body is not authenticated (anyone who
// knows the token can send any body) and there is no replay window;
// deduplication on Idempotency-Key (or, before GitLab 17.4, on the exact
// bytes) covers redeliveries. Several tokens mean rotation: any one may match. Tokens
// are compared in constant time, through their SHA-256 digests, so the
// time does not depend on the configured tokens' lengths either.
type GitLab struct {
	// SecretsConfig holds the secret tokens.
	SecretsConfig

	tokens [][sha256.Size]byte
}

// The headers GitLab sends with a webhook.
const (
	GitLabTokenHeader     = "X-Gitlab-Token"
	GitLabEventUUIDHeader = "X-Gitlab-Event-UUID"
)

// CaddyModule returns the Caddy module information.
func (GitLab) CaddyModule() caddy.ModuleInfo {
	return moduleInfo[GitLab]("webhooks.verifiers.gitlab")
}

// Provision resolves the tokens and keeps their digests.
func (g *GitLab) Provision(ctx caddy.Context) error {
	keys, err := g.resolve()
	if err != nil {
		return err
	}
	g.tokens = make([][sha256.Size]byte, len(keys))
	for i, k := range keys {
		g.tokens[i] = tokenDigest(k)
	}
	return nil
}

// Verify checks the request's token. The body is not used: GitLab does
// not sign it.
func (g *GitLab) Verify(r *http.Request, body []byte, now time.Time) error {
	_, err := g.VerifyKey(r, body, now)
	return err
}

// VerifyKey is Verify, returning the position among the configured
// secrets of the one that matched (KeyVerifier).
func (g *GitLab) VerifyKey(r *http.Request, body []byte, now time.Time) (int, error) {
	k, err := g.verifyKey(r, body, now)
	return g.keyPosition(k), err
}

// verifyKey checks the request, returning the position of the matching
// key among those in effect.
func (g *GitLab) verifyKey(r *http.Request, body []byte, now time.Time) (int, error) {
	tok := r.Header.Get(GitLabTokenHeader)
	if tok == "" {
		return 0, errHeaderMissing(GitLabTokenHeader)
	}
	// every token is compared, and the match's position selected in
	// constant time, so the time does not tell which one matched
	got := tokenDigest([]byte(tok))
	match, key := 0, 0
	for i := range g.tokens {
		eq := subtle.ConstantTimeCompare(got[:], g.tokens[i][:])
		key = subtle.ConstantTimeSelect(eq&^match, i, key)
		match |= eq
	}
	if match != 1 {
		return 0, fmt.Errorf("%w: header %s is not a configured token", ErrMismatch, GitLabTokenHeader)
	}
	return key, nil
}

// DefaultIDFrom returns the Idempotency-Key header (GitLab 17.4 and later,
// stable across retries), otherwise a hash of the exact received bytes
// together with X-Gitlab-Event-UUID.
//
// X-Gitlab-Event-UUID alone is not a default: every webhook that one
// request to GitLab triggers carries the same UUID ("recursive" webhooks,
// such as a bot commenting on the issue it was told about). The bytes alone
// are not either: two pushes of one ref to the same commits send the same
// body. A retry has the same UUID and the same bytes.
func (*GitLab) DefaultIDFrom() []IDRule {
	return []IDRule{idHeader(DefaultIDHeader), idRawHash("X-Gitlab-Event-UUID")}
}

// UnmarshalCaddyfile sets up the scheme from the Caddyfile tokens after
// `verify`. Syntax:
//
//	gitlab [<token>...] {
//		secret <token>...
//	}
func (g *GitLab) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return parseSecretsBlock(d, &g.Secrets, nil)
}

// SecretHeaders returns X-Gitlab-Token: it carries the configured token.
func (*GitLab) SecretHeaders() []string { return []string{GitLabTokenHeader} }

// Interface guards
var (
	_ scheme         = (*GitLab)(nil)
	_ SecretHeaderer = (*GitLab)(nil)
)
