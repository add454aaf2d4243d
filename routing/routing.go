// Package routing decides which destinations of a webhook source take an
// event (README.md, "Delivery": destinations): a destination's
// events globs on the event type and its when conditions on the request.
// It is free of Caddy: the webhook_ingress handler's JSON config compiles
// into a Matcher per destination.
package routing

import (
	"fmt"
	"strings"

	"github.com/hookline/hookline/dedupe"
	"github.com/hookline/hookline/fields"
)

// Matcher is what one destination takes: an event whose type matches one
// of Events (any type when Events is empty) and for which every condition
// of When holds. The zero Matcher takes every event.
type Matcher struct {
	// Events are globs on the event type (see Glob); empty: every type.
	Events []string
	// When are conditions on the request that must all hold.
	When []Condition
}

// Filters reports whether the matcher looks at the event at all (a
// matcher without filters takes every event without reading it).
func (m Matcher) Filters() bool { return len(m.Events) > 0 || len(m.When) > 0 }

// Validate checks the globs and conditions as the Caddyfile parser does.
func (m Matcher) Validate() error {
	for _, g := range m.Events {
		if err := ValidGlob(g); err != nil {
			return err
		}
	}
	for _, c := range m.When {
		if err := c.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// Match reports whether the destination takes the event of type typ
// ("" when its source's type_from rules found none: only a matcher
// without Events takes it) carried by q.
func (m Matcher) Match(typ string, q *fields.Request) bool {
	if len(m.Events) > 0 {
		if typ == "" {
			return false
		}
		matched := false
		for _, g := range m.Events {
			if Glob(g, typ) {
				matched = true
				break
			}
		}
		if !matched {
			return false
		}
	}
	for _, c := range m.When {
		if !c.Holds(q) {
			return false
		}
	}
	return true
}

// ValidGlob checks an events glob: printable text, not empty.
func ValidGlob(g string) error {
	if g == "" || !dedupe.Printable(g) {
		return fmt.Errorf("events: invalid glob %q (printable text, '*' matching any run of characters)", g)
	}
	return nil
}

// Glob reports whether the event type typ matches the glob pattern, in
// which '*' matches any run of characters ('.' and '/' included, so
// "invoice.*" takes "invoice.payment.failed" and "orders/*" takes
// "orders/create") and every other character only itself.
func Glob(pattern, typ string) bool {
	// the classic greedy wildcard walk: on a mismatch, let the last '*'
	// take one more character and try again
	p, t := 0, 0
	star, mark := -1, 0
	for t < len(typ) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, t
			p++
		case p < len(pattern) && pattern[p] == typ[t]:
			p++
			t++
		case star >= 0:
			p = star + 1
			mark++
			t = mark
		default:
			return false
		}
	}
	return strings.Trim(pattern[p:], "*") == ""
}
