package dedupe

import (
	"fmt"
	"slices"
	"time"

	"github.com/hookline/hookline/fields"
)

// ValidateTenantRule checks a tenant_from rule: the id_from forms that
// read one field of the request (header, json or form, with their if and
// unless conditions), with an argument; a hash or a fixed text names no
// account.
func ValidateTenantRule(r Rule) error {
	if !fields.IsKind(r.Kind) {
		return fmt.Errorf("tenant_from takes header, json or form, not %q", r.Kind)
	}
	if r.Arg == "" {
		return fmt.Errorf("tenant_from %s needs an argument", r.Kind)
	}
	if r.Window != 0 {
		return fmt.Errorf("tenant_from %s takes no window", r.Kind)
	}
	for _, p := range slices.Concat(r.IfPresent, r.IfAbsent) {
		if p == "" {
			return fmt.Errorf("tenant_from %s: empty JSON path in a condition", r.Kind)
		}
	}
	return nil
}

// FindTenant is the customer account the tenant_from rules find in q,
// trying them in order, or "" when none does. It is normalized as an id
// is (Normalize), so that it travels in the X-Webhook-Tenant header.
func FindTenant(q *fields.Request, rules []Rule) string {
	return FindID(q, rules, time.Time{})
}
