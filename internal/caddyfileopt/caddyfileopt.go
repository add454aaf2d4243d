// Package caddyfileopt reads the option shapes that hookline's Caddyfile
// parsers share (the webhooks global option, webhook_ingress and the
// storage backends): one argument, a whole number, a duration, a size, a
// guest module. Each function is called with the dispenser on the option's name
// and decides, in one place, the shape's checks and error messages.
package caddyfileopt

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/dustin/go-humanize"
)

// OneArg reads the single argument of the current option.
func OneArg(d *caddyfile.Dispenser) (string, error) {
	var s string
	if !d.AllArgs(&s) {
		return "", d.ArgErr()
	}
	return s, nil
}

// Int reads the single argument of the current option as a whole number
// of at least min, which is 0 or 1 ("want a non-negative integer" or "want
// a positive integer").
func Int(d *caddyfile.Dispenser, min int) (int, error) {
	opt := d.Val()
	s, err := OneArg(d)
	if err != nil {
		return 0, err
	}
	return IntArg(d, opt, s, min)
}

// IntArg reads s, an argument of option opt, as a whole number of at least
// min (0 or 1), with Int's error message.
func IntArg(d *caddyfile.Dispenser, opt, s string, min int) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < min {
		want := "a positive integer"
		if min <= 0 {
			want = "a non-negative integer"
		}
		return 0, d.Errf("%s: want %s, got %q", opt, want, s)
	}
	return n, nil
}

// Duration reads the single argument of the current option as a Caddy
// duration ("90s", "1d"). It must be positive, or may be zero when zeroOK.
func Duration(d *caddyfile.Dispenser, zeroOK bool) (caddy.Duration, error) {
	opt := d.Val()
	s, err := OneArg(d)
	if err != nil {
		return 0, err
	}
	dur, err := caddy.ParseDuration(s)
	if err != nil || dur < 0 || (dur == 0 && !zeroOK) {
		return 0, d.Errf("%s: invalid duration %q", opt, s)
	}
	return caddy.Duration(dur), nil
}

// Size reads the single argument of the current option as a size in
// bytes ("64MiB", "1GB", "512"), from min to max: "<opt>: invalid size"
// otherwise. Its name in the error is name when given, else the option's.
func Size(d *caddyfile.Dispenser, name string, min, max uint64) (int64, error) {
	if name == "" {
		name = d.Val()
	}
	s, err := OneArg(d)
	if err != nil {
		return 0, err
	}
	n, err := humanize.ParseBytes(s)
	if err != nil || n < min || n > max {
		return 0, d.Errf("%s: invalid size %q (want %s to %s)", name, s, humanize.IBytes(min), humanize.IBytes(max))
	}
	return int64(n), nil
}

// PositiveDuration reads s as a Caddy duration that must be positive; ok
// is false when it is not (the caller words the error).
func PositiveDuration(s string) (dur time.Duration, ok bool) {
	dur, err := caddy.ParseDuration(s)
	return dur, err == nil && dur > 0
}

// Module reads a guest module written `<option> <name> [<args>...] [{...}]`:
// the module namespace.<name> parses its own tokens, and its JSON object
// carries name under inlineKey (the key of the host field's inline_key).
func Module(d *caddyfile.Dispenser, namespace, inlineKey string) (json.RawMessage, error) {
	if !d.NextArg() {
		return nil, d.ArgErr()
	}
	name := d.Val()
	unm, err := caddyfile.UnmarshalModule(d, namespace+"."+name)
	if err != nil {
		return nil, err
	}
	return caddyconfig.JSONModuleObject(unm, inlineKey, name, nil), nil
}
