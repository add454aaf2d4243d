package verifiers

import (
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// None accepts every request without checking anything. It exists so that
// accepting unsigned webhooks is a choice written out in the config, never
// the result of a forgotten `verify` line. Use it only for sources that
// cannot sign, behind some other protection.
type None struct{}

// CaddyModule returns the Caddy module information.
func (None) CaddyModule() caddy.ModuleInfo {
	return moduleInfo[None]("webhooks.verifiers.none")
}

// Verify accepts the request.
func (None) Verify(r *http.Request, body []byte, now time.Time) error { return nil }

// DefaultIDFrom returns the Idempotency-Key header.
func (None) DefaultIDFrom() []IDRule {
	return []IDRule{idHeader(DefaultIDHeader)}
}

// UnmarshalCaddyfile sets up the scheme from the Caddyfile tokens after
// `verify`. Syntax (no arguments, no block):
//
//	none
func (n *None) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // consume scheme name
	if d.NextArg() {
		return d.ArgErr()
	}
	if d.NextBlock(d.Nesting()) {
		return d.Errf("verify none takes no options, got %q", d.Val())
	}
	return nil
}

// Interface guards
var (
	_ caddyfile.Unmarshaler = (*None)(nil)
	_ Verifier              = None{}
	_ IDDefaulter           = None{}
)
