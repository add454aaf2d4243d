package verifiers

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
)

// testContext returns a Caddy context for provisioning modules in tests.
func testContext(t testing.TB) caddy.Context {
	t.Helper()
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	return ctx
}

// newRequest returns a POST request with the given header name/value pairs.
func newRequest(headers ...string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/hook", nil)
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Add(headers[i], headers[i+1])
	}
	return r
}

// checkErr fails unless err wraps want (nil: err must be nil), and unless
// the error text is free of every string in secret.
func checkErr(t *testing.T, err, want error, secret ...string) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Fatalf("got error %v, want success", err)
	case want != nil && !errors.Is(err, want):
		t.Fatalf("got error %v, want %v", err, want)
	}
	if err != nil {
		for _, s := range secret {
			if s != "" && strings.Contains(err.Error(), s) {
				t.Fatalf("error text %q leaks %q", err, s)
			}
		}
	}
}
