package webhooks

import (
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"

	"github.com/hookline/hookline/internal/caddyfileopt"
)

func init() {
	httpcaddyfile.RegisterGlobalOption("webhooks", parseGlobalOption)
}

// parseGlobalOption sets up the webhooks app from the global option
// (syntax: App.UnmarshalCaddyfile), which may appear once.
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

// UnmarshalCaddyfile sets up the app from the tokens of the webhooks
// global option. Syntax:
//
//	webhooks {
//		storage embedded [<path>]           # default; hookline/events.db under Caddy's data dir
//		storage redis [<address>] {         # see webhooks.storage.redis
//			...
//		}
//		workers 16                          # concurrent deliveries
//		lease 1m                            # a delivery not finished by then is redelivered
//		retention 24h                       # how long delivered events stay queryable
//		dlq_retention 168h                  # DLQ entries expire after this (0 = never)
//		encryption_key {env.KEY} [{env.OLD_KEY}...]  # bodies and headers at rest: AES-256-GCM
//		audit                               # the audit trail: logger webhooks.audit, a line per step
//		alert <url> {                       # POSTs a JSON alert (Slack-compatible "text")
//			dlq_threshold 1                 # new DLQ entries that trigger an alert
//			error_rate <fraction> [<min_attempts>]   # failed share of a source's attempts (default min 20)
//			signature_failures 10 1m        # failures from one source within the window
//			min_interval 5m                 # at most one alert per kind and source this often
//		}
//	}
//
// An alert with no block fires for every new DLQ entry (dlq_threshold 1)
// and for 10 signature failures within 1m. Durations are Caddy durations
// ("90s", "1d"). encryption_key <key> [<older keys>...] seals bodies and
// headers at rest (encryption.go): the keys are kept as written (a
// placeholder stays one in the JSON config) and checked at provision.
func (a *App) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // "webhooks"
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		switch d.Val() {
		case "storage":
			raw, err := caddyfileopt.Module(d, "webhooks.storage", "module")
			if err != nil {
				return err
			}
			a.StorageRaw = raw
		case "workers":
			n, err := caddyfileopt.Int(d, 1)
			if err != nil {
				return err
			}
			a.Workers = n
		case "lease", "retention", "dlq_retention":
			opt := d.Val()
			dur, err := caddyfileopt.Duration(d, true)
			if err != nil {
				return err
			}
			switch opt {
			case "lease":
				a.Lease = dur
			case "retention":
				a.Retention = dur
			case "dlq_retention":
				if dur == 0 {
					dur = -1 // keep forever; 0 in JSON means the default
				}
				a.DLQRetention = dur
			}
		case "alert":
			ac, err := parseAlert(d)
			if err != nil {
				return err
			}
			a.Alert = ac
		case "audit":
			if d.NextArg() {
				return d.ArgErr()
			}
			a.Audit = true
		case "encryption_key":
			keys := d.RemainingArgs()
			if len(keys) == 0 {
				return d.Err("encryption_key needs a key (base64 of 32 bytes; a placeholder such as {env.HOOKLINE_KEY})")
			}
			a.EncryptionKeys = keys
		default:
			return d.Errf("unrecognized webhooks option %q", d.Val())
		}
	}
	return nil
}

// Interface guards
var _ caddyfile.Unmarshaler = (*App)(nil)

// parseAlert reads an alert option (syntax: App.UnmarshalCaddyfile).
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
			dur, ok := caddyfileopt.PositiveDuration(args[1])
			if err != nil || n < 1 || !ok {
				return nil, d.Errf("signature_failures: want a positive count and window")
			}
			ac.SignatureFailures, ac.SignatureWindow = n, caddy.Duration(dur)
		case "min_interval":
			if len(args) != 1 {
				return nil, d.ArgErr()
			}
			dur, ok := caddyfileopt.PositiveDuration(args[0])
			if !ok {
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
