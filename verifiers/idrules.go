package verifiers

import "github.com/hookline/hookline/idempotency"

// IDRule is one id_from rule, as a scheme's DefaultIDFrom returns it: a
// kind (header, json, form, raw_hash) with its argument and optional JSON
// conditions. See idempotency.Rule.
type IDRule = idempotency.Rule

// Shorthands for the defaults of the schemes in this package.
var (
	idHeader  = idempotency.Header
	idJSON    = idempotency.JSON
	idRawHash = idempotency.RawHash
)
