package operator

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// MaxBody bounds request bodies: a larger one is answered 413.
const MaxBody = 64 << 10

// readBody reads the request body, at most MaxBody bytes (413 beyond,
// whether told by Content-Length, by reading, or by a limit a mounting
// handler set with http.MaxBytesReader).
func readBody(r *http.Request) ([]byte, error) {
	if r.ContentLength > MaxBody {
		return nil, errTooLarge
	}
	if r.Body == nil {
		return nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, errTooLarge
		}
		return nil, newError(http.StatusBadRequest, "reading request body")
	}
	if len(body) > MaxBody {
		return nil, errTooLarge
	}
	return body, nil
}

// readTextField reads an optional JSON body {"<field>": "..."}; other
// fields are ignored.
func readTextField(r *http.Request, field string) (string, error) {
	body, err := readBody(r)
	if err != nil || len(body) == 0 {
		return "", err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return "", newError(http.StatusBadRequest, "request body must be a JSON object")
	}
	var text string
	if raw, ok := m[field]; ok {
		if err := json.Unmarshal(raw, &text); err != nil {
			return "", newError(http.StatusBadRequest, fmt.Sprintf("%s must be a string", field))
		}
	}
	return text, nil
}
