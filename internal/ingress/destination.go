package ingress

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/hookline/hookline/dedupe"
	"github.com/hookline/hookline/fields"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/routing"
	"github.com/hookline/hookline/storage"
)

// This file holds a source's destinations (README.md,
// "Delivery": destinations): their JSON config, its compilation into the
// routes the handler matches each event against, and the routing of one
// event.

// DeliveryOptions are the per-delivery options of a source; each of its
// destinations may set any of them again, replacing the source's there (a
// retry block replaces the whole retry policy).
type DeliveryOptions struct {
	// Timeout bounds each delivery attempt (default 10s, or half the
	// webhooks lease when that is shorter; an explicit one must fit the
	// lease: delivery.CheckTimeout).
	Timeout caddy.Duration `json:"timeout,omitempty"`
	// Retry is the retry policy of failed deliveries (default: ten
	// attempts, backoff 1s to 15m).
	Retry *RetryConfig `json:"retry,omitempty"`
	// RateLimit caps deliveries to the upstream, for all the nodes
	// sharing the store (default: none).
	RateLimit *RateLimit `json:"rate_limit,omitempty"`
	// SignForwarded lists Standard Webhooks secrets ("whsec_..."; {env.*}
	// and {file.*} placeholders are resolved in Provision) that sign every
	// delivery attempt with fresh webhook-id, webhook-timestamp and
	// webhook-signature headers, replacing any the provider sent; several
	// secrets each sign (rotation).
	SignForwarded []string `json:"sign_forwarded,omitempty"`
	// Ordered, when set, delivers the events whose rule finds the same key
	// one at a time, in the order they were accepted.
	Ordered *OrderedConfig `json:"ordered,omitempty"`
	// TLS configures the connections to an https upstream (its CAs, a
	// client certificate, the server name); a destination's fields replace
	// the source's one by one.
	TLS *UpstreamTLS `json:"tls,omitempty"`
}

// OrderedConfig is the JSON config of ordered <rule> [{ on_dead block|skip }]:
// a destination's deliveries whose rule finds the same key go out one at a
// time in acceptance order (one in flight per key across every node
// sharing the store); other keys never wait. An event whose rule finds no
// key is not ordered.
type OrderedConfig struct {
	// Kind is where the key is: header, json or form.
	Kind string `json:"kind"`
	// Arg is the header name, the JSON dot path or the form field.
	Arg string `json:"arg"`
	// OnDead is what a dead-lettered delivery does to its key: "block"
	// (the default: the key waits until its DLQ entry is retried, resolved
	// or discarded) or "skip" (the next delivery of the key goes).
	OnDead string `json:"on_dead,omitempty"`
}

// Values of OrderedConfig.OnDead.
const (
	OnDeadBlock = "block"
	OnDeadSkip  = "skip"
)

// rule is the dedupe rule that finds the key (kind header, json or form).
func (c *OrderedConfig) rule() dedupe.Rule { return dedupe.Rule{Kind: c.Kind, Arg: c.Arg} }

// check checks the config as the Caddyfile parser does.
func (c *OrderedConfig) check() error {
	if c == nil {
		return nil
	}
	if !fields.IsKind(c.Kind) {
		return fmt.Errorf("ordered: the key is found by header, json or form, got %q", c.Kind)
	}
	if c.Arg == "" {
		return fmt.Errorf("ordered %s: an argument is required", c.Kind)
	}
	if c.OnDead != "" && c.OnDead != OnDeadBlock && c.OnDead != OnDeadSkip {
		return fmt.Errorf("ordered: on_dead must be block or skip, got %q", c.OnDead)
	}
	return nil
}

// over is o with each option it does not set taken from base.
func (o DeliveryOptions) over(base DeliveryOptions) DeliveryOptions {
	if o.Timeout == 0 {
		o.Timeout = base.Timeout
	}
	if o.Retry == nil {
		o.Retry = base.Retry
	}
	if o.RateLimit == nil {
		o.RateLimit = base.RateLimit
	}
	if len(o.SignForwarded) == 0 {
		o.SignForwarded = base.SignForwarded
	}
	if o.Ordered == nil {
		o.Ordered = base.Ordered
	}
	o.TLS = o.TLS.over(base.TLS)
	return o
}

// check checks the options that need nothing resolved (Validate's part).
func (o DeliveryOptions) check() error {
	if o.Timeout < 0 {
		return fmt.Errorf("timeout must not be negative")
	}
	if err := o.Retry.Policy().Validate(); err != nil {
		return fmt.Errorf("retry: %v", err)
	}
	if !o.RateLimit.valid() {
		return fmt.Errorf("rate_limit must be positive")
	}
	if err := o.TLS.check(); err != nil {
		return err
	}
	return o.Ordered.check()
}

// compile compiles the options of upstream u into the delivery options
// the webhooks app builds the destination's target from (the timeout fitted
// to its lease, the TLS connection pool sized to its workers:
// delivery.NewTarget).
func (o DeliveryOptions) compile(u string) (delivery.Options, error) {
	if err := o.check(); err != nil {
		return delivery.Options{}, err
	}
	signer, err := compileSigner(o.SignForwarded)
	if err != nil {
		return delivery.Options{}, err
	}
	if o.TLS != nil && !strings.HasPrefix(strings.ToLower(u), "https://") {
		return delivery.Options{}, fmt.Errorf("tls_* options need an https URL, got %s", u)
	}
	tlsConfig, err := o.TLS.config()
	if err != nil {
		return delivery.Options{}, err
	}
	return delivery.Options{URL: u, Timeout: time.Duration(o.Timeout), Policy: o.Retry.Policy(), Rate: o.RateLimit.rate(), Signer: signer, TLS: tlsConfig}, nil
}

// Destination is one more upstream a source's events are delivered to
// (fan-out), each delivery with its own attempts, retries, DLQ entry and
// status. It takes the events its Events and When select (with neither:
// every event).
type Destination struct {
	// Name names the destination in the DLQ, the stats, the event lookup
	// and the X-Webhook-Destination header (letters, digits, '.', '_' and
	// '-'; "default" is forward_to's, usable here only without forward_to).
	Name string `json:"name"`
	// URL is the http(s) URL the destination's deliveries are POSTed to.
	URL string `json:"url"`
	// Events are globs on the event type ("*" matches any run of
	// characters, "." and "/" included); the destination takes an event
	// whose type matches one (empty: any type, and untyped events).
	Events []string `json:"events,omitempty"`
	// When are conditions on the request, all of which must hold for the
	// destination to take the event.
	When []Condition `json:"when,omitempty"`
	// DeliveryOptions override the source's for this destination.
	DeliveryOptions
}

// Condition is one when condition of a destination: the request's field
// must equal Value (routing.Condition says how fields compare).
type Condition struct {
	// Kind is where the field is: json, header or form.
	Kind string `json:"kind"`
	// Path is the JSON dot path, the header name or the form field.
	Path string `json:"path"`
	// Value is the text the field must equal ("true", "42", "shop.example").
	Value string `json:"value"`
}

// route is a destination compiled: what it takes, where it delivers and
// whether its deliveries are ordered (by the source's one order rule).
type route struct {
	name      string
	match     routing.Matcher
	options   delivery.Options
	ordered   bool
	orderSkip bool // on_dead skip
	insecure  bool // tls_insecure_skip_verify: Provision warns
}

// orderOf sets the route's ordering from its options and returns the rule
// of its key (nil: not ordered).
func (r *route) orderOf(o DeliveryOptions) *dedupe.Rule {
	if o.Ordered == nil {
		return nil
	}
	r.ordered, r.orderSkip = true, o.Ordered.OnDead == OnDeadSkip
	rule := o.Ordered.rule()
	return &rule
}

// checkURL checks an upstream URL.
func checkURL(u string) error {
	p, err := url.Parse(u)
	if u == "" || err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return fmt.Errorf("must be an http(s) URL")
	}
	return nil
}

// compileRoutes compiles forward_to (the destination named "default", with
// the source's options) and the destinations into the source's routes,
// and returns the rule of the order key of its ordered destinations (nil:
// none is ordered). Every ordered destination of a source orders by the
// same rule: an event has one order key, which decides where a shared
// store keeps it (on Redis Cluster, a key's events and its chain share one
// partition); on_dead may differ.
func (h *Ingress) compileRoutes() (routes []route, orderRule *dedupe.Rule, err error) {
	ordered := func(r *route, o DeliveryOptions) error {
		rule := r.orderOf(o)
		switch {
		case rule == nil:
		case orderRule == nil:
			orderRule = rule
		case rule.Kind != orderRule.Kind || rule.Arg != orderRule.Arg:
			return fmt.Errorf("destination %s: ordered %s %s: every ordered destination of a source orders by the same rule (here also %s %s)",
				r.name, rule.Kind, rule.Arg, orderRule.Kind, orderRule.Arg)
		}
		return nil
	}
	if h.ForwardTo != "" || len(h.Destinations) == 0 {
		if err := checkURL(h.ForwardTo); err != nil {
			return nil, nil, fmt.Errorf("forward_to %v", err)
		}
		o, err := h.DeliveryOptions.compile(h.ForwardTo)
		if err != nil {
			return nil, nil, err
		}
		r := route{name: storage.DefaultDestination, options: o, insecure: h.DeliveryOptions.TLS.insecure()}
		if err := ordered(&r, h.DeliveryOptions); err != nil {
			return nil, nil, err
		}
		routes = append(routes, r)
	}
	for i, d := range h.Destinations {
		if err := storage.ValidDestination(d.Name); err != nil {
			return nil, nil, fmt.Errorf("destination %d: %v", i+1, err)
		}
		for _, r := range routes {
			if r.name == d.Name {
				if r.name == storage.DefaultDestination {
					return nil, nil, fmt.Errorf("destination default: forward_to is the destination named default")
				}
				return nil, nil, fmt.Errorf("destination %s is defined more than once", d.Name)
			}
		}
		if err := checkURL(d.URL); err != nil {
			return nil, nil, fmt.Errorf("destination %s: the URL %v", d.Name, err)
		}
		r := route{name: d.Name, match: routing.Matcher{Events: d.Events}}
		for _, c := range d.When {
			r.match.When = append(r.match.When, routing.Condition{Kind: c.Kind, Path: c.Path, Value: c.Value})
		}
		if err := r.match.Validate(); err != nil {
			return nil, nil, fmt.Errorf("destination %s: %v", d.Name, err)
		}
		opts := d.DeliveryOptions.over(h.DeliveryOptions)
		o, err := opts.compile(d.URL)
		if err != nil {
			return nil, nil, fmt.Errorf("destination %s: %v", d.Name, err)
		}
		r.options, r.insecure = o, opts.TLS.insecure()
		if err := ordered(&r, opts); err != nil {
			return nil, nil, err
		}
		routes = append(routes, r)
	}
	return routes, orderRule, nil
}

// routeAll is what Provision prepares for the routing of events: whether
// any route filters (and so must see each event's type first), and the
// deliveries of an unordered event every route takes (nil: the one default
// route, stored as before destinations existed).
func routeAll(routes []route) (filtered bool, all []storage.Delivery) {
	for _, r := range routes {
		filtered = filtered || r.match.Filters()
	}
	return filtered, deliveriesOf(routes, "")
}

// deliveriesOf are the deliveries of an event the routes take, those of
// ordered routes under orderKey ("": the event has none, not ordered): nil
// when that is the default destination alone, unordered (the event is
// stored as it was before destinations existed).
func deliveriesOf(routes []route, orderKey string) []storage.Delivery {
	if len(routes) == 1 && routes[0].name == storage.DefaultDestination && (!routes[0].ordered || orderKey == "") {
		return nil
	}
	ds := make([]storage.Delivery, len(routes))
	for i, r := range routes {
		ds[i] = storage.Delivery{Destination: r.name, Upstream: r.options.URL}
		if r.ordered && orderKey != "" {
			ds[i].OrderKey, ds[i].OrderSkip = orderKey, r.orderSkip
		}
	}
	return ds
}

// route is the deliveries of an event of type typ (ok false: no
// destination takes it). Without filters and order every destination takes
// every event, and the event is not looked at.
func (h *Ingress) route(typ string, q *fields.Request) (ds []storage.Delivery, ok bool) {
	var key string
	if h.orderRule != nil {
		key = dedupe.FindID(q, []dedupe.Rule{*h.orderRule}, time.Time{}) // normalized: fit for a store key
	}
	if !h.filtered {
		if key == "" {
			return h.allDeliveries, true
		}
		return deliveriesOf(h.routes, key), true
	}
	var taken []route
	for _, r := range h.routes {
		if r.match.Match(typ, q) {
			taken = append(taken, r)
		}
	}
	return deliveriesOf(taken, key), len(taken) > 0
}
