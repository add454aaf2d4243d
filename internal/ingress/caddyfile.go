package ingress

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/hookline/hookline/dedupe"
	"github.com/hookline/hookline/internal/caddyfileopt"
	"github.com/hookline/hookline/routing"
	"github.com/hookline/hookline/storage"
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

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	webhook_ingress [<matcher>] <source> {
//		verify <scheme> [<secret>...] {     # required; "verify none" accepts unsigned webhooks
//			secret <secret>...              # more secrets (rotation: any one may match)
//			...                             # the scheme's options
//		}
//		forward_to <url>                    # the destination named "default"
//		id_from header|json|form <arg>      # repeatable, tried in order; default depends on the scheme
//		id_from body_hash <window>          # hash of the normalized body plus a time bucket
//		type_from header|json|form <arg>    # repeatable, first match wins; default depends on the scheme
//		tenant_from header|json|form <arg>  # repeatable, first match wins; default depends on the scheme
//		dedupe_window 24h
//		max_body 1MB
//		require_json
//		schema <file>                       # JSON Schema (2020-12): else 400 INVALID_PAYLOAD
//		allow_ips <ip|cidr>...              # repeatable; placeholders allowed: else 403 FORBIDDEN
//		accept_rate <n>/<s|m|h|duration>    # requests accepted per window on this node: else 429
//		timeout 10s                         # per delivery attempt; default 10s, at most half the lease
//		retry {
//			max_attempts 10                 # total attempts, first included
//			backoff <initial> <max> [multiplier <m>] [jitter <j>]   # default 1s 15m multiplier 2 jitter 0.1
//			schedule <delay>...             # explicit delays instead of backoff
//		}
//		rate_limit <n>/<s|m|h|duration>     # delivery rate to the upstream
//		ack_status 202                      # or 200, or 204 (no body)
//		block_failures <count> <window> [<cooldown>]   # default 20 1m 5m: 429 for a client IP failing signatures this often
//		block_failures off
//		sign_forwarded <whsec_secret>...    # Standard Webhooks signature on every attempt; several: rotation
//		ordered header|json|form <arg> {    # one delivery in flight per key, in acceptance order
//			on_dead block|skip              # a dead delivery holds its key (block, default) or lets the next go
//		}
//		tls_trusted_ca_certs <pem_file>...  # an https upstream's CAs, instead of the system's
//		tls_client_auth <cert_file> <key_file>   # client certificate (mutual TLS)
//		tls_server_name <name>              # SNI and the name checked in the upstream's certificate
//		tls_insecure_skip_verify            # accept any certificate (tests only; logged as a warning)
//		destination <name> <url> {          # repeatable: more upstreams (fan-out)
//			events <glob>...                # globs on the event type ("*" spans "." and "/"); default: every event
//			when json|header|form <path> <value>   # repeatable: all must hold
//			timeout|retry|rate_limit|sign_forwarded|ordered|tls_* ...   # as above, replacing the source's here
//		}
//	}
//
// forward_to is the destination named "default"; with destinations it may
// be left out. Durations are Caddy durations ("90s", "1d"); max_body takes
// a size ("512KiB", "1MB"). Every ordered destination of a source orders by
// the same rule (on_dead may differ).
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
			raw, err := caddyfileopt.Module(d, "webhooks.verifiers", "scheme")
			if err != nil {
				return err
			}
			h.VerifyRaw = raw
		case "forward_to":
			u, err := caddyfileopt.OneArg(d)
			if err != nil {
				return err
			}
			h.ForwardTo = u
		case "id_from":
			args := d.RemainingArgs()
			if len(args) != 2 {
				return d.Errf("id_from wants a kind and an argument (header <name>, json <path>, form <field>, body_hash <window>)")
			}
			rule, err := parseIDRule(args[0], args[1])
			if err != nil {
				return d.Err(err.Error())
			}
			h.IDFrom = append(h.IDFrom, rule)
		case "type_from":
			args := d.RemainingArgs()
			if len(args) != 2 {
				return d.Errf("type_from wants a kind and an argument (header <name>, json <path>, form <field>)")
			}
			if _, err := dedupe.ParseTypeRule(args[0], args[1]); err != nil {
				return d.Err(err.Error())
			}
			h.TypeFrom = append(h.TypeFrom, TypeRule{IDRule: IDRule{Kind: args[0], Arg: args[1]}})
		case "tenant_from":
			args := d.RemainingArgs()
			if len(args) != 2 {
				return d.Errf("tenant_from wants a kind and an argument (header <name>, json <path>, form <field>)")
			}
			rule := IDRule{Kind: args[0], Arg: args[1]}
			if err := dedupe.ValidateTenantRule(rule.rule()); err != nil {
				return d.Err(err.Error())
			}
			h.TenantFrom = append(h.TenantFrom, rule)
		case "dedupe_window":
			dur, err := caddyfileopt.Duration(d, false)
			if err != nil {
				return err
			}
			h.DedupeWindow = dur
		case "max_body":
			n, err := caddyfileopt.Size(d, "", 1, 1<<40)
			if err != nil {
				return err
			}
			h.MaxBody = n
		case "require_json":
			if d.NextArg() {
				return d.ArgErr()
			}
			h.RequireJSON = true
		case "allow_ips":
			ranges := d.RemainingArgs()
			if len(ranges) == 0 {
				return d.Err("allow_ips wants one or more IPs or CIDR ranges (placeholders allowed)")
			}
			h.AllowIPs = append(h.AllowIPs, ranges...)
		case "accept_rate":
			s, err := caddyfileopt.OneArg(d)
			if err != nil {
				return err
			}
			rl, err := parseRate(s)
			if err != nil {
				return d.Errf("accept_rate: %v", err)
			}
			h.AcceptRate = rl
		case "schema":
			path, err := caddyfileopt.OneArg(d)
			if err != nil {
				return err
			}
			h.Schema = path
		case "destination":
			dest, err := parseDestination(d)
			if err != nil {
				return err
			}
			h.Destinations = append(h.Destinations, dest)
		case "ack_status":
			s, err := caddyfileopt.OneArg(d)
			if err != nil {
				return err
			}
			n, err := strconv.Atoi(s)
			if err != nil || (n != 200 && n != 202 && n != 204) {
				return d.Errf("ack_status must be 200, 202 or 204")
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
				dur, ok := caddyfileopt.PositiveDuration(a)
				if !ok {
					return d.Errf("block_failures: invalid duration %q", a)
				}
				if i == 0 {
					bc.Window = caddy.Duration(dur)
				} else {
					bc.Cooldown = caddy.Duration(dur)
				}
			}
			h.BlockFailures = bc
		default:
			if ok, err := h.DeliveryOptions.parse(d, opt); !ok {
				return d.Errf("unrecognized webhook_ingress option %q", opt)
			} else if err != nil {
				return err
			}
		}
	}
	return nil
}

// parse reads one per-delivery option line (timeout, retry, rate_limit,
// sign_forwarded, ordered, tls_*) of a source or a destination block; ok
// is false when opt is none of them (the block's own option, or unknown).
func (o *DeliveryOptions) parse(d *caddyfile.Dispenser, opt string) (ok bool, err error) {
	if tlsOption(opt) {
		return true, o.parseTLS(d, opt)
	}
	if err := o.parseOne(d, opt); err != errNotDeliveryOption {
		return true, err
	}
	return false, nil
}

// errNotDeliveryOption is parseOne's answer to a name it does not know.
var errNotDeliveryOption = errors.New("not a per-delivery option")

// parseOne reads the per-delivery option lines other than tls_*.
func (o *DeliveryOptions) parseOne(d *caddyfile.Dispenser, opt string) error {
	switch opt {
	case "timeout":
		dur, err := caddyfileopt.Duration(d, false)
		if err != nil {
			return err
		}
		o.Timeout = dur
	case "retry":
		if d.NextArg() {
			return d.ArgErr()
		}
		rc, err := parseRetry(d)
		if err != nil {
			return err
		}
		o.Retry = rc
	case "rate_limit":
		s, err := caddyfileopt.OneArg(d)
		if err != nil {
			return err
		}
		rl, err := parseRate(s)
		if err != nil {
			return d.Errf("rate_limit: %v", err)
		}
		o.RateLimit = rl
	case "sign_forwarded":
		secrets := d.RemainingArgs()
		if len(secrets) == 0 {
			return d.Err("sign_forwarded wants one or more Standard Webhooks secrets (whsec_...)")
		}
		o.SignForwarded = append(o.SignForwarded, secrets...)
	case "ordered":
		args := d.RemainingArgs()
		if len(args) != 2 {
			return d.Err("ordered wants a kind and an argument: ordered header|json|form <arg> [{ on_dead block|skip }]")
		}
		oc := &OrderedConfig{Kind: args[0], Arg: args[1]}
		for nesting := d.Nesting(); d.NextBlock(nesting); {
			if d.Val() != "on_dead" {
				return d.Errf("unrecognized ordered option %q", d.Val())
			}
			v, err := caddyfileopt.OneArg(d)
			if err != nil {
				return err
			}
			oc.OnDead = v
		}
		if err := oc.check(); err != nil {
			return d.Err(err.Error())
		}
		o.Ordered = oc
	default:
		return errNotDeliveryOption
	}
	return nil
}

// parseDestination reads a destination line and its block (syntax:
// UnmarshalCaddyfile).
func parseDestination(d *caddyfile.Dispenser) (Destination, error) {
	args := d.RemainingArgs()
	if len(args) != 2 {
		return Destination{}, d.Err("destination wants a name and a URL: destination <name> <url> [{ ... }]")
	}
	dest := Destination{Name: args[0], URL: args[1]}
	if err := storage.ValidDestination(dest.Name); err != nil {
		return dest, d.Errf("destination: %v", err)
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		switch opt := d.Val(); opt {
		case "events":
			globs := d.RemainingArgs()
			if len(globs) == 0 {
				return dest, d.Err("events wants one or more globs on the event type (invoice.* customer.*)")
			}
			for _, g := range globs {
				if err := routing.ValidGlob(g); err != nil {
					return dest, d.Err(err.Error())
				}
			}
			dest.Events = append(dest.Events, globs...)
		case "when":
			args := d.RemainingArgs()
			if len(args) != 3 {
				return dest, d.Err("when wants a kind, a path and a value: when json|header|form <path> <value>")
			}
			c := Condition{Kind: args[0], Path: args[1], Value: args[2]}
			if err := (routing.Condition{Kind: c.Kind, Path: c.Path, Value: c.Value}).Validate(); err != nil {
				return dest, d.Err(err.Error())
			}
			dest.When = append(dest.When, c)
		default:
			if ok, err := dest.DeliveryOptions.parse(d, opt); !ok {
				return dest, d.Errf("unrecognized destination option %q", opt)
			} else if err != nil {
				return dest, err
			}
		}
	}
	return dest, nil
}

// parseIDRule reads the words of an id_from line. A body_hash window is a
// Caddy duration; dedupe.Rule.Validate decides the rest.
func parseIDRule(kind, arg string) (IDRule, error) {
	c := IDRule{Kind: kind, Arg: arg}
	if kind == dedupe.KindBodyHash {
		w, ok := caddyfileopt.PositiveDuration(arg)
		if !ok {
			return c, fmt.Errorf("id_from body_hash: invalid window %q", arg)
		}
		c = IDRule{Kind: kind, Window: caddy.Duration(w)}
	}
	return c, c.rule().Validate()
}

// parseRetry reads a retry block (syntax: UnmarshalCaddyfile).
func parseRetry(d *caddyfile.Dispenser) (*RetryConfig, error) {
	rc := new(RetryConfig)
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		switch d.Val() {
		case "max_attempts":
			n, err := caddyfileopt.Int(d, 1)
			if err != nil {
				return nil, err
			}
			rc.MaxAttempts = n
		case "backoff":
			args := d.RemainingArgs()
			if len(args) < 2 || len(args)%2 != 0 {
				return nil, d.Errf("backoff <initial> <max> [multiplier <m>] [jitter <j>]")
			}
			ini, ok1 := caddyfileopt.PositiveDuration(args[0])
			mx, ok2 := caddyfileopt.PositiveDuration(args[1])
			if !ok1 || !ok2 || mx < ini {
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
				dur, ok := caddyfileopt.PositiveDuration(a)
				if !ok {
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
		var ok bool
		if iv, ok = caddyfileopt.PositiveDuration(per); !ok {
			return nil, fmt.Errorf("invalid interval %q", per)
		}
	}
	return &RateLimit{Events: n, Interval: caddy.Duration(iv)}, nil
}

// Interface guards
var _ caddyfile.Unmarshaler = (*Ingress)(nil)
