package operator

import (
	_ "embed"
	"net/http"
)

// OpenAPI is the OpenAPI 3.1 document of the API: every route of New,
// its parameters, request and answer bodies, errors included. The tests
// check it names every route and validate real answers against it.
//
//go:embed openapi.json
var OpenAPI []byte

// openapi answers GET /webhooks/openapi.json with OpenAPI. It needs no
// app: the document describes the API whether or not one runs.
func (h *Handler) openapi(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	_, err := w.Write(OpenAPI)
	return err
}
