package ingress

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/hookline/hookline/internal/httpjson"
)

// Error codes of the ingress's JSON error bodies (docs/reference.md, "Answers to the provider").
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
	if details != nil {
		writeJSON(w, status, errorBody{Error: msg, Code: code, Details: details})
		return
	}
	// the common errors, without details: errorBody's bytes, built directly
	buf := httpjson.GetBuffer()
	b := append(buf.B, `{"error":`...)
	b = httpjson.AppendString(b, msg)
	b = append(b, `,"code":`...)
	b = httpjson.AppendString(b, code)
	buf.B = append(b, '}', '\n')
	httpjson.WriteBytes(w, status, buf.B)
	httpjson.PutBuffer(buf)
}

func writeJSON(w http.ResponseWriter, status int, v any) { httpjson.Write(w, status, v) }

// answer writes a success answer of the source (writeAnswer), or, with
// ack_status 204, a 204 with no body for each of them (accepted, ignored
// or a duplicate): a provider wanting 204s (Discord) wants them all.
func (h *Ingress) answer(w http.ResponseWriter, status int, eventID, msg, eventStatus string) {
	if h.AckStatus == http.StatusNoContent {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeAnswer(w, status, eventID, msg, eventStatus)
}

// writeAnswer writes the answer to a webhook taken (accepted, duplicate or
// ignored): {"event_id": ..., "message": ..., "status": ...} ("status"
// left out when empty), the bytes encoding/json gives for the map of
// these keys, built without reflection or a map.
func writeAnswer(w http.ResponseWriter, status int, eventID, msg, eventStatus string) {
	buf := httpjson.GetBuffer()
	b := append(buf.B, `{"event_id":`...)
	b = httpjson.AppendString(b, eventID)
	b = append(b, `,"message":`...)
	b = httpjson.AppendString(b, msg)
	if eventStatus != "" {
		b = append(b, `,"status":`...)
		b = httpjson.AppendString(b, eventStatus)
	}
	buf.B = append(b, '}', '\n')
	httpjson.WriteBytes(w, status, buf.B)
	httpjson.PutBuffer(buf)
}

// outcomes are the error codes in lower case, as Observe counts them.
var outcomes = map[string]string{}

func init() {
	for _, c := range []string{
		CodeMethodNotAllowed, CodePayloadTooLarge, CodeInvalidSignatureFormat, CodeUnauthorized,
		CodeInvalidTimestamp, CodeInvalidJSON, CodeInvalidPayload, CodeForbidden, CodeBadRequest,
		CodeServiceUnavailable, CodeRateLimitExceeded, CodeInternalError,
	} {
		outcomes[c] = strings.ToLower(c)
	}
}

// outcomeOf is code in lower case, the outcome Observe counts (without
// allocating for the codes above).
func outcomeOf(code string) string {
	if o, ok := outcomes[code]; ok {
		return o
	}
	return strings.ToLower(code)
}
