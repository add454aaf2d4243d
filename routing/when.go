package routing

import (
	"fmt"

	"github.com/hookline/hookline/fields"
)

// Condition is one when line: the request's field at Path (a JSON dot
// path, a header name or a form field, by Kind) must equal Value.
//
//	when json data.object.livemode true
//	when header X-Shopify-Shop-Domain shop.example.com
//	when form AccountSid AC123
//
// A JSON field compares as its text: a string as itself, a number as
// written, true, false and null as those words; an object or an array
// never matches. A field that is missing does not match.
type Condition struct {
	// Kind is where the field is: json, header or form.
	Kind string
	// Path is the JSON dot path (array indices allowed), the header name
	// or the form field.
	Path string
	// Value is the text the field must equal.
	Value string
}

// Validate checks the condition as the Caddyfile parser does.
func (c Condition) Validate() error {
	if !fields.IsKind(c.Kind) {
		return fmt.Errorf("when: kind must be json, header or form, got %q", c.Kind)
	}
	if c.Path == "" {
		return fmt.Errorf("when %s: a path is required", c.Kind)
	}
	return nil
}

// Holds reports whether the condition holds for the request.
func (c Condition) Holds(q *fields.Request) bool {
	v, ok := q.Field(c.Kind, c.Path)
	return ok && v == c.Value
}
