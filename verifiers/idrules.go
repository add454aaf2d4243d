package verifiers

import "github.com/hookline/hookline/dedupe"

// IDRule is one id_from rule, as a scheme's DefaultIDFrom returns it: a
// kind (header, json, form, raw_hash) with its argument and optional JSON
// conditions. See dedupe.Rule.
type IDRule = dedupe.Rule

// DefaultIDHeader is the generic idempotency key header: the default id
// of the hmac (without id_header) and none schemes, and gitlab's first.
const DefaultIDHeader = "Idempotency-Key"

// Shorthands for the defaults of the schemes in this package.
var (
	idHeader  = dedupe.Header
	idJSON    = dedupe.JSON
	idRawHash = dedupe.RawHash
)
