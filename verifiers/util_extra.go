package verifiers

import (
	"errors"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// More pieces shared by the stripe, standard, shopify and slack schemes,
// next to those in util.go (and util_more.go: parseToleranceOption).

// anyWellFormed reports whether at least one of sigs is well formed (see
// Encoding.WellFormed) as size bytes in enc. Schemes call it before the
// timestamp check, so that a malformed signature is reported as such
// (ErrFormat) even when the timestamp is also out of tolerance.
func anyWellFormed(enc Encoding, sigs []string, size int) bool {
	for _, s := range sigs {
		if enc.WellFormed(s, size) {
			return true
		}
	}
	return false
}

// provisionTolerance fills in the default tolerance (DefaultTolerance) and
// refuses a negative one.
func provisionTolerance(tol *caddy.Duration) error {
	if *tol < 0 {
		return errors.New("tolerance must not be negative")
	}
	if *tol == 0 {
		*tol = caddy.Duration(DefaultTolerance)
	}
	return nil
}

// unmarshalSecretsBlock reads the Caddyfile syntax shared by the provider
// schemes; the first token is the scheme name:
//
//	<scheme> [<secret>...] {
//		secret <secret>...
//		tolerance <duration>
//	}
//
// The tolerance option is only accepted when tolerance is not nil (the
// scheme signs a timestamp).
func unmarshalSecretsBlock(d *caddyfile.Dispenser, secrets *[]string, tolerance *caddy.Duration) error {
	d.Next() // consume scheme name
	scheme := d.Val()
	*secrets = append(*secrets, d.RemainingArgs()...)
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		switch opt := d.Val(); {
		case opt == "secret":
			args, err := parseSecrets(d)
			if err != nil {
				return err
			}
			*secrets = append(*secrets, args...)
		case opt == "tolerance" && tolerance != nil:
			tol, err := parseToleranceOption(d)
			if err != nil {
				return err
			}
			*tolerance = tol
		default:
			return d.Errf("unrecognized %s option %q", scheme, opt)
		}
	}
	return nil
}
