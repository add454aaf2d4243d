package ingress

import (
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/hookline/hookline/dedupe"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/verifiers"
)

// This file holds the JSON config types of a webhook_ingress source
// besides Ingress itself, one per concept, and their compilation into the
// Caddy-free runtime values of dedupe, delivery and storage. Durations
// are caddy.Duration: a JSON config may write "10m" or "1d" as well as
// nanoseconds, and they marshal as nanoseconds.

// IDRule is the JSON config of one id_from rule; Provision compiles it
// into a dedupe.Rule (see there for what each kind finds).
type IDRule struct {
	// Kind is where the event ID is found: header, json, form, body_hash or
	// raw_hash.
	Kind string `json:"kind"`
	// Arg is the header name, the JSON dot path or the form field
	// (raw_hash: the header names hashed with the body, comma-separated;
	// body_hash: none).
	Arg string `json:"arg,omitempty"`
	// Window is the time bucket of a body_hash rule; no other kind takes one.
	Window caddy.Duration `json:"window,omitempty"`
	// IfPresent lists JSON paths that must each hold a value for the rule to
	// apply.
	IfPresent []string `json:"if_present,omitempty"`
	// IfAbsent lists JSON paths that must each be missing or null for the
	// rule to apply.
	IfAbsent []string `json:"if_absent,omitempty"`
}

// rule compiles the config into the runtime rule.
func (c IDRule) rule() dedupe.Rule {
	return dedupe.Rule{Kind: c.Kind, Arg: c.Arg, Window: time.Duration(c.Window), IfPresent: c.IfPresent, IfAbsent: c.IfAbsent}
}

// compileIDFrom compiles the id_from rules of a source and checks them as
// the Caddyfile parser does (a JSON config may carry anything).
func compileIDFrom(cfg []IDRule) ([]dedupe.Rule, error) {
	return compileRules(cfg, "id_from", dedupe.Rule.Validate)
}

// compileTenantFrom compiles the tenant_from rules of a source and checks
// them as the Caddyfile parser does.
func compileTenantFrom(cfg []IDRule) ([]dedupe.Rule, error) {
	return compileRules(cfg, "tenant_from", dedupe.ValidateTenantRule)
}

// compileRules compiles the rules of one option (name, for messages), each
// checked by check.
func compileRules(cfg []IDRule, name string, check func(dedupe.Rule) error) ([]dedupe.Rule, error) {
	var rules []dedupe.Rule
	for i, c := range cfg {
		r := c.rule()
		if err := check(r); err != nil {
			return nil, fmt.Errorf("%s %d: %v", name, i, err)
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// TypeRule is the JSON config of one type_from rule; Provision compiles it
// into a dedupe.TypeRule. Its kind is header, json or form (no window).
type TypeRule struct {
	IDRule
	// Join lists parts appended to the type after a "." when they find a
	// value (kind header, json, form, or const: the text of arg itself).
	Join []IDRule `json:"join,omitempty"`
}

// compileTypeFrom compiles the type_from rules of a source and checks them
// as the Caddyfile parser does.
func compileTypeFrom(cfg []TypeRule) ([]dedupe.TypeRule, error) {
	var rules []dedupe.TypeRule
	for i, c := range cfg {
		t := dedupe.TypeOf(c.rule())
		for _, j := range c.Join {
			t = t.Joined(j.rule())
		}
		if err := t.Validate(); err != nil {
			return nil, fmt.Errorf("type_from %d: %v", i, err)
		}
		rules = append(rules, t)
	}
	return rules, nil
}

// compileSigner compiles sign_forwarded's secrets (placeholders resolved,
// Standard Webhooks keys decoded as the standard scheme reads them) into
// the signer of every delivery attempt; none configured: nil.
func compileSigner(secrets []string) (*delivery.Signer, error) {
	if len(secrets) == 0 {
		return nil, nil
	}
	resolved, err := verifiers.ResolveSecrets(secrets)
	if err != nil {
		return nil, fmt.Errorf("sign_forwarded: %v", err)
	}
	keys := make([][]byte, len(resolved))
	for i, s := range resolved {
		if keys[i], err = verifiers.DecodeStandardSecret(string(s)); err != nil {
			return nil, fmt.Errorf("sign_forwarded secret %d: %v", i+1, err)
		}
	}
	return delivery.NewSigner(keys)
}

// RetryConfig is the JSON config of a source's retry policy; Policy
// compiles it into a delivery.Policy.
type RetryConfig struct {
	// MaxAttempts is the number of delivery attempts, the first included
	// (default 10, or one more than the schedule's delays).
	MaxAttempts int `json:"max_attempts,omitempty"`
	// Initial is the backoff's first delay (default 1s).
	Initial caddy.Duration `json:"initial,omitempty"`
	// Max caps the backoff's delays (default 15m).
	Max caddy.Duration `json:"max,omitempty"`
	// Multiplier grows each backoff delay from the one before (default 2).
	Multiplier float64 `json:"multiplier,omitempty"`
	// Jitter spreads delays by ±Jitter (default 0.1; 0 disables it).
	Jitter *float64 `json:"jitter,omitempty"`
	// Schedule, when set, lists the delays after each failed attempt in
	// place of the backoff (the last one repeats).
	Schedule []caddy.Duration `json:"schedule,omitempty"`
}

// Policy compiles the config into a delivery.Policy with defaults filled
// in (a nil config is the default policy).
func (c *RetryConfig) Policy() delivery.Policy {
	if c == nil {
		c = new(RetryConfig)
	}
	p := delivery.Policy{
		MaxAttempts: c.MaxAttempts,
		Initial:     time.Duration(c.Initial),
		Max:         time.Duration(c.Max),
		Multiplier:  c.Multiplier,
		Jitter:      delivery.DefaultJitter,
	}
	if c.Jitter != nil {
		p.Jitter = *c.Jitter
	}
	for _, d := range c.Schedule {
		p.Schedule = append(p.Schedule, time.Duration(d))
	}
	return p.WithDefaults()
}

// RateLimit is the JSON config of a source's delivery rate: Events
// deliveries per Interval, spread evenly. It compiles into a storage.Rate.
type RateLimit struct {
	// Events is how many deliveries each Interval allows.
	Events int `json:"events"`
	// Interval is the period over which Events deliveries are allowed.
	Interval caddy.Duration `json:"interval"`
}

// valid reports whether the config compiles: nil (no limit) or a
// positive rate.
func (rl *RateLimit) valid() bool { return rl == nil || (rl.Events >= 1 && rl.Interval > 0) }

// rate compiles the config (nil: unpaced, the zero storage.Rate).
func (rl *RateLimit) rate() storage.Rate {
	if rl == nil {
		return storage.Rate{}
	}
	return storage.Rate{Events: rl.Events, Per: time.Duration(rl.Interval)}
}

// BlockConfig is the JSON config of a source's signature-failure guard:
// a client IP with Failures failed verifications within Window has its
// failing requests answered 429 (instead of 401) for Cooldown. Its validly
// signed requests are never refused: behind a proxy every provider may
// share one IP.
type BlockConfig struct {
	// Failures is how many failed verifications within Window block a
	// client (default 20).
	Failures int `json:"failures,omitempty"`
	// Window is the period over which failures are counted (default 1m).
	Window caddy.Duration `json:"window,omitempty"`
	// Cooldown is how long a blocked client's failing requests get 429
	// (default 5m).
	Cooldown caddy.Duration `json:"cooldown,omitempty"`
	// Off turns the guard off: failed verifications are always answered 401.
	Off bool `json:"off,omitempty"`
}

// settings compiles the config (nil: the defaults) into the guard's
// settings; off reports that the source has no guard.
func (b *BlockConfig) settings() (s guardSettings, off bool) {
	s = guardSettings{failures: DefaultBlockFailures, window: DefaultBlockWindow, cooldown: DefaultBlockCooldown}
	if b == nil {
		return s, false
	}
	if b.Failures > 0 {
		s.failures = b.Failures
	}
	if b.Window > 0 {
		s.window = time.Duration(b.Window)
	}
	if b.Cooldown > 0 {
		s.cooldown = time.Duration(b.Cooldown)
	}
	return s, b.Off
}
