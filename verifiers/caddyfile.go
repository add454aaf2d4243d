package verifiers

import "github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

// This file holds the Caddyfile parsing the schemes share. A scheme's
// UnmarshalCaddyfile receives the tokens after `verify`, starting with the
// scheme name (the module name, or the alias it is registered under).

// blockOption parses one option of a scheme's block, other than secret:
// the dispenser is on the option's name. It returns false, with no error,
// for an option the scheme does not know.
type blockOption func(d *caddyfile.Dispenser, name string) (bool, error)

// parseSecretsBlock reads the Caddyfile syntax of the schemes keyed with
// secrets; the first token is the scheme name:
//
//	<scheme> [<secret>...] {
//		secret <secret>...
//		<option> ...
//	}
//
// Secrets, inline and on secret lines, are appended to secrets in order.
// Every other option goes to option (nil: the scheme has none); an option
// it does not know is an error naming the scheme.
func parseSecretsBlock(d *caddyfile.Dispenser, secrets *[]string, option blockOption) error {
	d.Next() // consume scheme name
	scheme := d.Val()
	*secrets = append(*secrets, d.RemainingArgs()...)
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		name := d.Val()
		if name == "secret" {
			if err := appendSecrets(d, secrets); err != nil {
				return err
			}
			continue
		}
		if option != nil {
			ok, err := option(d, name)
			if err != nil {
				return err
			}
			if ok {
				continue
			}
		}
		return d.Errf("unrecognized %s option %q", scheme, name)
	}
	return nil
}

// appendSecrets appends the arguments of a `secret` line (one or more) to
// secrets.
func appendSecrets(d *caddyfile.Dispenser, secrets *[]string) error {
	args := d.RemainingArgs()
	if len(args) == 0 {
		return d.ArgErr()
	}
	*secrets = append(*secrets, args...)
	return nil
}

// oneArg reads exactly one argument of the current option into dst.
func oneArg(d *caddyfile.Dispenser, dst *string) error {
	if !d.NextArg() {
		return d.ArgErr()
	}
	*dst = d.Val()
	if d.NextArg() {
		return d.ArgErr()
	}
	return nil
}

// oneArgOnce is oneArg for an option that may appear only once in the
// block (its value is still empty the first time).
func oneArgOnce(d *caddyfile.Dispenser, dst *string) error {
	if *dst != "" {
		return d.Errf("%s may appear only once", d.Val())
	}
	return oneArg(d, dst)
}

// noArgs reads a flag option, which takes no argument.
func noArgs(d *caddyfile.Dispenser) error {
	if d.NextArg() {
		return d.ArgErr()
	}
	return nil
}
