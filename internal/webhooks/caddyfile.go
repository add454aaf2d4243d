package webhooks

import (
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
)

func init() {
	httpcaddyfile.RegisterGlobalOption("webhooks", parseGlobalOption)
}

// parseGlobalOption sets up the webhooks app from the global option:
//
//	webhooks {
//		storage embedded [<path>]
//		workers <n>
//		lease <duration>
//		retention <duration>
//		dlq_retention <duration>   # 0 = keep forever
//	}
func parseGlobalOption(d *caddyfile.Dispenser, existing any) (any, error) {
	app := new(App)
	if existing != nil {
		d.Next() // the option name, so that the error carries its position
		return nil, d.Err("the webhooks global option may appear only once")
	}
	if err := app.UnmarshalCaddyfile(d); err != nil {
		return nil, err
	}
	return httpcaddyfile.App{Name: "webhooks", Value: caddyconfig.JSON(app, nil)}, nil
}

// UnmarshalCaddyfile sets up the app from Caddyfile tokens (the global
// option, see parseGlobalOption).
func (a *App) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // "webhooks"
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		switch d.Val() {
		case "storage":
			if !d.NextArg() {
				return d.ArgErr()
			}
			name := d.Val()
			unm, err := caddyfile.UnmarshalModule(d, "webhooks.storage."+name)
			if err != nil {
				return err
			}
			a.StorageRaw = caddyconfig.JSONModuleObject(unm, "module", name, nil)
		case "workers":
			var s string
			if !d.AllArgs(&s) {
				return d.ArgErr()
			}
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				return d.Errf("workers: want a positive integer, got %q", s)
			}
			a.Workers = n
		case "lease", "retention", "dlq_retention":
			opt := d.Val()
			var s string
			if !d.AllArgs(&s) {
				return d.ArgErr()
			}
			dur, err := caddy.ParseDuration(s)
			if err != nil || dur < 0 {
				return d.Errf("%s: invalid duration %q", opt, s)
			}
			switch opt {
			case "lease":
				a.Lease = caddy.Duration(dur)
			case "retention":
				a.Retention = caddy.Duration(dur)
			case "dlq_retention":
				if dur == 0 {
					dur = -1 // keep forever; 0 in JSON means the default
				}
				a.DLQRetention = caddy.Duration(dur)
			}
		case "alert":
			ac, err := parseAlert(d)
			if err != nil {
				return err
			}
			a.Alert = ac
		case "encryption_key":
			// In the product design but not built yet: refuse rather than
			// silently store payloads unencrypted.
			return d.Errf("%s is not supported by this build of hookline yet", d.Val())
		default:
			return d.Errf("unrecognized webhooks option %q", d.Val())
		}
	}
	return nil
}

// Interface guards
var _ caddyfile.Unmarshaler = (*App)(nil)

// parseAlert reads an alert option:
//
//	alert <url> {
//		dlq_threshold <n>
//		error_rate <fraction> [<min_attempts>]
//		signature_failures <n> <window>
//		min_interval <duration>
//	}
//
// With no block, alerts fire for every new DLQ entry (dlq_threshold 1) and
// for 10 signature failures within 1m.
func parseAlert(d *caddyfile.Dispenser) (*AlertConfig, error) {
	ac := &AlertConfig{}
	if !d.NextArg() {
		return nil, d.Err("alert needs a URL")
	}
	ac.URL = d.Val()
	if d.NextArg() {
		return nil, d.ArgErr()
	}
	block := false
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		block = true
		opt := d.Val()
		args := d.RemainingArgs()
		switch opt {
		case "dlq_threshold":
			if len(args) != 1 {
				return nil, d.ArgErr()
			}
			n, err := strconv.Atoi(args[0])
			if err != nil || n < 0 {
				return nil, d.Errf("dlq_threshold: want a non-negative integer")
			}
			ac.DLQThreshold = n
		case "error_rate":
			if len(args) < 1 || len(args) > 2 {
				return nil, d.ArgErr()
			}
			f, err := strconv.ParseFloat(args[0], 64)
			if err != nil || f <= 0 || f > 1 {
				return nil, d.Errf("error_rate: want a fraction in (0, 1]")
			}
			ac.ErrorRate = f
			if len(args) == 2 {
				n, err := strconv.Atoi(args[1])
				if err != nil || n < 1 {
					return nil, d.Errf("error_rate: min_attempts must be positive")
				}
				ac.ErrorMinAttempts = n
			}
		case "signature_failures":
			if len(args) != 2 {
				return nil, d.Errf("signature_failures <count> <window>")
			}
			n, err := strconv.Atoi(args[0])
			dur, derr := caddy.ParseDuration(args[1])
			if err != nil || n < 1 || derr != nil || dur <= 0 {
				return nil, d.Errf("signature_failures: want a positive count and window")
			}
			ac.SignatureFailures, ac.SignatureWindow = n, caddy.Duration(dur)
		case "min_interval":
			if len(args) != 1 {
				return nil, d.ArgErr()
			}
			dur, err := caddy.ParseDuration(args[0])
			if err != nil || dur <= 0 {
				return nil, d.Errf("min_interval: invalid duration")
			}
			ac.MinInterval = caddy.Duration(dur)
		default:
			return nil, d.Errf("unrecognized alert option %q", opt)
		}
	}
	if !block {
		ac.DLQThreshold, ac.SignatureFailures, ac.SignatureWindow = 1, 10, caddy.Duration(time.Minute)
	}
	return ac, nil
}
