package dedupe

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hookline/hookline/fields"
)

// TypeRule is one type_from rule: where to find a webhook's event type.
// Its Rule finds the type (header, json or form, with the same conditions
// as id_from rules); each rule of Join that finds a value appends "." and
// that value ("pull_request" + action "opened" is "pull_request.opened").
// A Join rule may be a Const (in a scheme's defaults: Messenger's "page" +
// "messaging").
//
// The Caddyfile's type_from takes one kind and one argument, as id_from;
// joins come from scheme defaults.
type TypeRule struct {
	Rule
	// Join lists the parts appended after a "." when they find a value.
	Join []Rule
}

// Const is the joined part "const <text>": text itself.
func Const(text string) Rule { return Rule{Kind: KindConst, Arg: text} }

// TypeOf is the type_from rule taking the type from r alone.
func TypeOf(r Rule) TypeRule { return TypeRule{Rule: r} }

// Joined returns t with parts appended to its Join list.
func (t TypeRule) Joined(parts ...Rule) TypeRule {
	t.Join = append(t.Join[:len(t.Join):len(t.Join)], parts...)
	return t
}

// String writes the rule as its words, joined parts after "+".
func (t TypeRule) String() string {
	s := t.Rule.String()
	for _, j := range t.Join {
		s += " + " + j.String()
	}
	return s
}

// Validate checks the rule: a header, json or form rule, each joined part
// one of those or a const, none empty.
func (t TypeRule) Validate() error {
	check := func(r Rule, joined bool) error {
		switch r.Kind {
		case KindHeader, KindJSON, KindForm:
		case KindConst:
			if !joined {
				return fmt.Errorf("type_from const is only a joined part")
			}
		default:
			return fmt.Errorf("type_from takes header, json or form, not %q", r.Kind)
		}
		if r.Arg == "" {
			return fmt.Errorf("type_from %s needs an argument", r.Kind)
		}
		if r.Window != 0 {
			return fmt.Errorf("type_from %s takes no window", r.Kind)
		}
		for _, p := range append(r.IfPresent[:len(r.IfPresent):len(r.IfPresent)], r.IfAbsent...) {
			if p == "" {
				return fmt.Errorf("type_from %s: empty JSON path in a condition", r.Kind)
			}
		}
		return nil
	}
	if err := check(t.Rule, false); err != nil {
		return err
	}
	for _, j := range t.Join {
		if err := check(j, true); err != nil {
			return err
		}
	}
	return nil
}

// ParseTypeRule builds a type_from rule from its Caddyfile words.
func ParseTypeRule(kind, arg string) (TypeRule, error) {
	t := TypeOf(Rule{Kind: kind, Arg: arg})
	return t, t.Validate()
}

// ExtractType returns the event type the rules find in the request (see
// FindType). body is the raw body.
func ExtractType(rules []TypeRule, r *http.Request, body []byte) string {
	return FindType(fields.Read(r, body), rules)
}

// FindType is the event type the rules find in q, trying them in order, or
// "" when none does. A type is kept only when it is printable text of at most
// MaxIDLen bytes (see Printable), so it can be sent upstream in a header;
// a rule finding anything else counts as finding nothing.
func FindType(q *fields.Request, rules []TypeRule) string {
	for _, t := range rules {
		typ := t.Rule.find(q, time.Time{})
		if typ == "" {
			continue
		}
		var b strings.Builder
		b.WriteString(typ)
		for _, j := range t.Join {
			if v := j.find(q, time.Time{}); v != "" {
				b.WriteString(".")
				b.WriteString(v)
			}
		}
		if typ = b.String(); Printable(typ) {
			return typ
		}
	}
	return ""
}
