package ingress

import (
	"net/http"
	"strconv"

	"github.com/hookline/hookline/internal/httpjson"
)

// Error codes of the ingress's JSON error bodies (DESIGN.md).
const (
	CodeMethodNotAllowed       = "METHOD_NOT_ALLOWED"
	CodePayloadTooLarge        = "PAYLOAD_TOO_LARGE"
	CodeInvalidSignatureFormat = "INVALID_SIGNATURE_FORMAT"
	CodeUnauthorized           = "UNAUTHORIZED"
	CodeInvalidTimestamp       = "INVALID_TIMESTAMP"
	CodeInvalidJSON            = "INVALID_JSON"
	CodeInvalidPayload         = "INVALID_PAYLOAD"
	CodeForbidden              = "FORBIDDEN"
	CodeBadRequest             = "BAD_REQUEST"
	CodeServiceUnavailable     = "SERVICE_UNAVAILABLE"
	CodeRateLimitExceeded      = "RATE_LIMIT_EXCEEDED"
	CodeInternalError          = "INTERNAL_ERROR"
)

// errorBody is every error answer: {"error": ..., "code": ..., "details": {...}}.
type errorBody struct {
	Error   string         `json:"error"`
	Code    string         `json:"code"`
	Details map[string]any `json:"details,omitempty"`
}

// writeError writes a JSON error. retryAfter > 0 adds a Retry-After header
// (seconds).
func writeError(w http.ResponseWriter, status int, code, msg string, retryAfter int, details map[string]any) {
	h := w.Header()
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(retryAfter))
	}
	writeJSON(w, status, errorBody{Error: msg, Code: code, Details: details})
}

func writeJSON(w http.ResponseWriter, status int, v any) { httpjson.Write(w, status, v) }
