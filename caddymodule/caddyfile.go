package caddymodule

import (
	"strconv"

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
		case "encryption_key", "alert":
			// Both are in the product design but not built yet: refuse
			// rather than silently run without encryption or alerts.
			return d.Errf("%s is not supported by this build of hookline yet", d.Val())
		default:
			return d.Errf("unrecognized webhooks option %q", d.Val())
		}
	}
	return nil
}

// Interface guards
var _ caddyfile.Unmarshaler = (*App)(nil)
