package operator

import "github.com/hookline/hookline/dedupe"

// tenantFilter is the tenant a route's tenant filter selects: the value as
// the stores keep it, normalized as the ingress normalizes a tenant found
// in a request, so that an operator may give the provider's own value (a
// long or non-ASCII account name is kept as its hash) or the stored one.
func tenantFilter(v string) string { return dedupe.Normalize(v) }
