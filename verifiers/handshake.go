package verifiers

import (
	"net/http"
	"strconv"

	"github.com/hookline/hookline/internal/httpjson"
)

// HandshakerGET is implemented by schemes whose provider checks the
// endpoint with a GET handshake that must be answered at the edge and
// never queued (Meta's hub.challenge, X's CRC).
//
// The ingress calls HandshakeGET for every GET request before answering
// 405. It returns true when the request was a handshake and it wrote the
// whole answer; false leaves the request to the ingress.
type HandshakerGET interface {
	HandshakeGET(w http.ResponseWriter, r *http.Request) bool
}

// HandshakerPOST is implemented by schemes whose provider checks the
// endpoint with a signed POST that must be answered at the edge and never
// queued (Slack's url_verification).
//
// The ingress calls HandshakePOST for POST requests after the signature
// was verified and before enqueueing. It returns true when the request was
// a handshake and it wrote the whole answer; false leaves the request to
// the ingress.
type HandshakerPOST interface {
	HandshakePOST(w http.ResponseWriter, r *http.Request, body []byte) bool
}

// HandshakerUnsigned is implemented by schemes whose provider checks the
// endpoint with a POST that carries no signature and must be answered at
// the edge, within the request, and never queued (Microsoft Graph's
// ?validationToken=). Since such a request proves nothing, what it may get
// back must be bounded by the scheme: never a signature, never content
// chosen freely by the caller.
//
// The ingress calls HandshakeUnsigned for every POST once the body is read
// (max_body enforced) and before the signature is checked. It returns true
// when the request was a handshake and it wrote the whole answer; false
// leaves the request to the signature check.
type HandshakerUnsigned interface {
	HandshakeUnsigned(w http.ResponseWriter, r *http.Request, body []byte) bool
}

// Handshaker is implemented by schemes that answer handshakes (Meta's
// hub.challenge, Slack's url_verification, X's CRC): both HandshakerGET
// and HandshakerPOST, one of them answering false for every request when
// the provider has no handshake by that method.
type Handshaker interface {
	HandshakerGET
	HandshakerPOST
}

// The codes of a refused handshake.
const (
	// handshakeErrorCode is the code of a refused handshake, the same as
	// a signature mismatch (docs/reference.md: 401 UNAUTHORIZED).
	handshakeErrorCode = "UNAUTHORIZED"

	// handshakeMalformedCode is the code of a handshake whose challenge
	// is malformed: the documented code and status of a malformed
	// signature input (docs/reference.md: 401 INVALID_SIGNATURE_FORMAT), since the
	// challenge is what the scheme would sign.
	handshakeMalformedCode = "INVALID_SIGNATURE_FORMAT"
)

// handshakeJSON writes v as a JSON handshake answer with the given status,
// in the same form as the ingress's own answers.
func handshakeJSON(w http.ResponseWriter, status int, v any) { httpjson.Write(w, status, v) }

// handshakeError writes a refused handshake with the ingress's JSON error
// body. msg must not contain a secret, a token or the received challenge.
func handshakeError(w http.ResponseWriter, status int, code, msg string) {
	handshakeJSON(w, status, struct {
		Error string `json:"error"`
		Code  string `json:"code"`
	}{msg, code})
}

// handshakeRefuse answers a handshake that failed its check with 403 and
// the ingress's JSON error body. msg must not contain a secret or token.
func handshakeRefuse(w http.ResponseWriter, msg string) {
	handshakeError(w, http.StatusForbidden, handshakeErrorCode, msg)
}

// handshakeMalformed answers a handshake whose challenge is malformed with
// 401 and the ingress's JSON error body. msg must not contain a secret or
// the received challenge.
func handshakeMalformed(w http.ResponseWriter, msg string) {
	handshakeError(w, http.StatusUnauthorized, handshakeMalformedCode, msg)
}

// handshakeText writes body as a 200 text/plain handshake answer.
func handshakeText(w http.ResponseWriter, body string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(body))
}
