// Package openapitest checks the operator API's real answers against its
// OpenAPI 3.1 document (operator.OpenAPI) with libopenapi-validator, for
// the tests of the operator package and the end-to-end tests through
// Caddy. Only tests import it: the validator is not linked into Caddy.
package openapitest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	"github.com/hookline/hookline/internal/operator"
)

// Checker validates requests and answers against the document and
// remembers which operations answered 2xx.
type Checker struct {
	v   validator.Validator
	ops []Operation

	mu   sync.Mutex
	seen map[Operation]bool
}

// Operation is one method and path template of the document, such as
// {"GET", "/webhooks/dlq/{id}"}: the http.ServeMux pattern "GET /webhooks/dlq/{id}".
type Operation struct{ Method, Path string }

// Pattern is the operation as an http.ServeMux pattern.
func (o Operation) Pattern() string { return o.Method + " " + o.Path }

// New loads operator.OpenAPI and checks that it is a valid OpenAPI 3.1
// document.
func New(t testing.TB) *Checker {
	t.Helper()
	doc, err := libopenapi.NewDocument(operator.OpenAPI)
	if err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if v := doc.GetVersion(); v != "3.1.0" {
		t.Fatalf("openapi.json is OpenAPI %s, want 3.1.0", v)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("openapi.json: building the model: %v", err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("openapi.json: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		t.Fatalf("openapi.json is not a valid OpenAPI 3.1 document:\n%s", describe(verrs))
	}
	c := &Checker{v: v, seen: map[Operation]bool{}}
	for path, item := range model.Model.Paths.PathItems.FromOldest() {
		for method := range item.GetOperations().FromOldest() {
			c.ops = append(c.ops, Operation{strings.ToUpper(method), path})
		}
	}
	slices.SortFunc(c.ops, func(a, b Operation) int { return strings.Compare(a.Pattern(), b.Pattern()) })
	return c
}

// Operations lists the document's operations, sorted by pattern.
func (c *Checker) Operations() []Operation { return slices.Clone(c.ops) }

// Check validates one exchange: the request (its parameters and body)
// and the answer (status, content type, body) must be what the document
// says. body is the request's body (the request's own is consumed by
// sending it); the answer's body is read and put back. An operation
// answered 2xx is recorded for Unchecked.
func (c *Checker) Check(t testing.TB, req *http.Request, body []byte, resp *http.Response) {
	t.Helper()
	r2 := req.Clone(req.Context())
	r2.Body = io.NopCloser(bytes.NewReader(body))
	if ok, errs := c.v.ValidateHttpRequest(r2); !ok {
		t.Errorf("%s %s: the request does not match openapi.json:\n%s", req.Method, req.URL, describe(errs))
	}
	c.CheckAnswer(t, req, body, resp)
}

// CheckAnswer is Check of the answer alone, for a request the document
// refuses too (a 400 for an invalid parameter).
func (c *Checker) CheckAnswer(t testing.TB, req *http.Request, body []byte, resp *http.Response) {
	t.Helper()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", req.Method, req.URL, err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	r2 := req.Clone(req.Context())
	r2.Body = io.NopCloser(bytes.NewReader(body))
	if ok, errs := c.v.ValidateHttpResponse(r2, resp); !ok {
		t.Errorf("%s %s: the answer %d %s does not match openapi.json:\n%s", req.Method, req.URL, resp.StatusCode, raw, describe(errs))
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	if resp.StatusCode/100 == 2 {
		if op, ok := c.match(req.Method, req.URL.Path); ok {
			c.mu.Lock()
			c.seen[op] = true
			c.mu.Unlock()
		}
	}
}

// Unchecked lists the operations no Check saw answer 2xx.
func (c *Checker) Unchecked() []Operation {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Operation
	for _, op := range c.ops {
		if !c.seen[op] {
			out = append(out, op)
		}
	}
	return out
}

var paramRe = regexp.MustCompile(`\{[^/}]+\}`)

// match finds the operation of a request path, literal segments first
// (as http.ServeMux prefers /webhooks/dlq/retry to /webhooks/dlq/{id}).
func (c *Checker) match(method, path string) (Operation, bool) {
	var best Operation
	bestParams := -1
	for _, op := range c.ops {
		if op.Method != method {
			continue
		}
		re := "^" + strings.ReplaceAll(regexp.QuoteMeta(paramRe.ReplaceAllString(op.Path, "\x00")), "\x00", `[^/]+`) + "$"
		if !regexp.MustCompile(re).MatchString(path) {
			continue
		}
		n := len(paramRe.FindAllString(op.Path, -1))
		if bestParams < 0 || n < bestParams {
			best, bestParams = op, n
		}
	}
	return best, bestParams >= 0
}

// describe lists validation errors, one a line, with their schema
// failures.
func describe[E error](errs []E) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "  - %v\n", e)
	}
	return b.String()
}
