// Package httpjson is hookline's one JSON writer: the ingress's
// acknowledgements and errors, the verifiers' handshakes, the admin API's
// answers (admin.api.webhooks) and the dashboard's. Bodies are
// encoding/json's (HTML characters escaped) with a trailing newline.
package httpjson

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// Write writes v as a JSON body with status. The answer is never cached
// nor sniffed as another type.
func Write(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":"internal error","code":"INTERNAL_ERROR"}`)
	}
	b = append(b, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
