package ingress

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/dustin/go-humanize"

	"github.com/hookline/hookline/dedupe"
)

func init() {
	httpcaddyfile.RegisterHandlerDirective("webhook_ingress", parseCaddyfile)
	httpcaddyfile.RegisterDirectiveOrder("webhook_ingress", httpcaddyfile.Before, "respond")
}

func parseCaddyfile(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	m := new(Ingress)
	err := m.UnmarshalCaddyfile(h.Dispenser)
	return m, err
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax: see
// the Ingress type.
func (h *Ingress) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // directive name
	if !d.NextArg() {
		return d.Err("webhook_ingress needs a source name")
	}
	h.Source = d.Val()
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		opt := d.Val()
		switch opt {
		case "verify":
			if h.VerifyRaw != nil {
				return d.Err("verify may appear only once")
			}
			if !d.NextArg() {
				return d.ArgErr()
			}
			scheme := d.Val()
			unm, err := caddyfile.UnmarshalModule(d, "webhooks.verifiers."+scheme)
			if err != nil {
				return err
			}
			h.VerifyRaw = caddyconfig.JSONModuleObject(unm, "scheme", scheme, nil)
		case "forward_to":
			if !d.AllArgs(&h.ForwardTo) {
				return d.ArgErr()
			}
		case "id_from":
			args := d.RemainingArgs()
			if len(args) != 2 {
				return d.Errf("id_from wants a kind and an argument (header <name>, json <path>, form <field>, body_hash <window>)")
			}
			rule, err := dedupe.ParseRule(args[0], args[1])
			if err != nil {
				return d.Err(err.Error())
			}
			h.IDFrom = append(h.IDFrom, rule)
		case "dedupe_window", "timeout":
			dur, err := parseDuration(d)
			if err != nil {
				return err
			}
			if opt == "timeout" {
				h.Timeout = caddy.Duration(dur)
			} else {
				h.DedupeWindow = caddy.Duration(dur)
			}
		case "max_body":
			var s string
			if !d.AllArgs(&s) {
				return d.ArgErr()
			}
			n, err := humanize.ParseBytes(s)
			if err != nil || n == 0 || n > 1<<40 {
				return d.Errf("max_body: invalid size %q", s)
			}
			h.MaxBody = int64(n)
		case "require_json":
			if d.NextArg() {
				return d.ArgErr()
			}
			h.RequireJSON = true
		case "retry":
			if d.NextArg() {
				return d.ArgErr()
			}
			rc, err := parseRetry(d)
			if err != nil {
				return err
			}
			h.Retry = rc
		case "rate_limit":
			var s string
			if !d.AllArgs(&s) {
				return d.ArgErr()
			}
			rl, err := parseRate(s)
			if err != nil {
				return d.Errf("rate_limit: %v", err)
			}
			h.RateLimit = rl
		case "ack_status":
			var s string
			if !d.AllArgs(&s) {
				return d.ArgErr()
			}
			n, err := strconv.Atoi(s)
			if err != nil || (n != 200 && n != 202) {
				return d.Errf("ack_status must be 200 or 202")
			}
			h.AckStatus = n
		case "block_failures":
			args := d.RemainingArgs()
			if len(args) == 1 && args[0] == "off" {
				h.BlockFailures = &BlockConfig{Off: true}
				continue
			}
			if len(args) < 2 || len(args) > 3 {
				return d.Errf("block_failures <count> <window> [<cooldown>], or block_failures off")
			}
			n, err := strconv.Atoi(args[0])
			if err != nil || n < 1 {
				return d.Errf("block_failures: want a positive count, got %q", args[0])
			}
			bc := &BlockConfig{Failures: n}
			for i, a := range args[1:] {
				dur, err := caddy.ParseDuration(a)
				if err != nil || dur <= 0 {
					return d.Errf("block_failures: invalid duration %q", a)
				}
				if i == 0 {
					bc.Window = caddy.Duration(dur)
				} else {
					bc.Cooldown = caddy.Duration(dur)
				}
			}
			h.BlockFailures = bc
		case "ordered", "sign_forwarded":
			return d.Errf("%s is not supported by this build of hookline yet", opt)
		default:
			return d.Errf("unrecognized webhook_ingress option %q", opt)
		}
	}
	return nil
}

func parseDuration(d *caddyfile.Dispenser) (time.Duration, error) {
	opt := d.Val()
	var s string
	if !d.AllArgs(&s) {
		return 0, d.ArgErr()
	}
	dur, err := caddy.ParseDuration(s)
	if err != nil || dur <= 0 {
		return 0, d.Errf("%s: invalid duration %q", opt, s)
	}
	return dur, nil
}

// parseRetry reads a retry block:
//
//	retry {
//		max_attempts <n>
//		backoff <initial> <max> [multiplier <m>] [jitter <j>]
//		schedule <delay>...
//	}
func parseRetry(d *caddyfile.Dispenser) (*RetryConfig, error) {
	rc := new(RetryConfig)
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		switch d.Val() {
		case "max_attempts":
			var s string
			if !d.AllArgs(&s) {
				return nil, d.ArgErr()
			}
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				return nil, d.Errf("max_attempts: want a positive integer, got %q", s)
			}
			rc.MaxAttempts = n
		case "backoff":
			args := d.RemainingArgs()
			if len(args) < 2 || len(args)%2 != 0 {
				return nil, d.Errf("backoff <initial> <max> [multiplier <m>] [jitter <j>]")
			}
			ini, err1 := caddy.ParseDuration(args[0])
			mx, err2 := caddy.ParseDuration(args[1])
			if err1 != nil || err2 != nil || ini <= 0 || mx < ini {
				return nil, d.Errf("backoff: want 0 < initial <= max, got %q %q", args[0], args[1])
			}
			rc.Initial, rc.Max = caddy.Duration(ini), caddy.Duration(mx)
			for i := 2; i < len(args); i += 2 {
				f, err := strconv.ParseFloat(args[i+1], 64)
				if err != nil {
					return nil, d.Errf("backoff %s: invalid number %q", args[i], args[i+1])
				}
				switch args[i] {
				case "multiplier":
					if f < 1 {
						return nil, d.Errf("backoff multiplier must be >= 1")
					}
					rc.Multiplier = f
				case "jitter":
					if f < 0 || f >= 1 {
						return nil, d.Errf("backoff jitter must be in [0, 1)")
					}
					rc.Jitter = &f
				default:
					return nil, d.Errf("backoff: unknown option %q", args[i])
				}
			}
		case "schedule":
			args := d.RemainingArgs()
			if len(args) == 0 {
				return nil, d.ArgErr()
			}
			for _, a := range args {
				dur, err := caddy.ParseDuration(a)
				if err != nil || dur <= 0 {
					return nil, d.Errf("schedule: invalid delay %q", a)
				}
				rc.Schedule = append(rc.Schedule, caddy.Duration(dur))
			}
		default:
			return nil, d.Errf("unrecognized retry option %q", d.Val())
		}
	}
	return rc, nil
}

// parseRate reads "<n>/<unit>" with unit s, m or h (or a duration: 10/30s).
func parseRate(s string) (*RateLimit, error) {
	num, per, ok := strings.Cut(s, "/")
	if !ok {
		return nil, fmt.Errorf("want <n>/<s|m|h>, got %q", s)
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 1 {
		return nil, fmt.Errorf("invalid count %q", num)
	}
	var iv time.Duration
	switch per {
	case "s":
		iv = time.Second
	case "m":
		iv = time.Minute
	case "h":
		iv = time.Hour
	default:
		iv, err = caddy.ParseDuration(per)
		if err != nil || iv <= 0 {
			return nil, fmt.Errorf("invalid interval %q", per)
		}
	}
	return &RateLimit{Events: n, Interval: caddy.Duration(iv)}, nil
}

// Interface guards
var _ caddyfile.Unmarshaler = (*Ingress)(nil)
