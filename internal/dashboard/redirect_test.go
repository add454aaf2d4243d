package dashboard_test

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/dashboard"
)

// browserResolve resolves a Location the way a browser does: tabs and
// newlines anywhere are dropped and "\" is read as "/" (WHATWG URL, special
// schemes) before resolving against the request's URL.
func browserResolve(base *url.URL, loc string) (*url.URL, error) {
	loc = strings.NewReplacer("\t", "", "\n", "", "\r", "", "\\", "/").Replace(loc)
	loc = strings.TrimLeft(loc, " \x00\x01\x02\x03\x04\x05\x06\x07\x08\x0b\x0c\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f")
	ref, err := url.Parse(loc)
	if err != nil {
		return nil, err
	}
	return base.ResolveReference(ref), nil
}

// TestDashboardRedirectStaysOnSite: the dashboard mounted at "/" redirects
// a path without its final "/" to the same path with it, and never off the
// site, whatever the path holds.
func TestDashboardRedirectStaysOnSite(t *testing.T) {
	hostile := []string{
		"/%09/evil.example", "/%09%09/evil.example", "/%0a/evil.example", "/%0d%0a/evil.example",
		"//evil.example", "///evil.example", "/\\evil.example", "/\\\\evil.example", "/%5C%5Cevil.example",
		"/%2f%2fevil.example", "/%2F/evil.example", "/./evil.example", "/.//evil.example", "/..//evil.example",
		"/%2e%2e//evil.example", "/%20/evil.example", "/%00/evil.example", "/\\/evil.example", "/%5C/evil.example",
		"/https:%2f%2fevil.example", "/@evil.example", "/ops", "/dash/sub",
	}
	var d dashboard.Dashboard
	for _, raw := range hostile {
		// as the client sent it: a raw request line, parsed like the server does
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader("GET " + raw + "?q=1 HTTP/1.1\r\nHost: site.example\r\n\r\n")))
		if err != nil {
			// the server would refuse it before any handler: nothing to redirect
			continue
		}
		w := httptest.NewRecorder()
		if err := d.ServeHTTP(w, req, nil); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if w.Code != http.StatusPermanentRedirect {
			continue // served the page: no redirect to worry about
		}
		loc := w.Header().Get("Location")
		base := &url.URL{Scheme: "https", Host: "site.example", Path: req.URL.Path, RawPath: req.URL.RawPath}
		got, err := browserResolve(base, loc)
		if err != nil {
			t.Errorf("%s: Location %q does not parse: %v", raw, loc, err)
			continue
		}
		if got.Host != "site.example" || got.Scheme != "https" || got.User != nil {
			t.Errorf("%s: Location %q leads to %s", raw, loc, got)
		}
		if !strings.HasPrefix(loc, "/") || strings.HasPrefix(loc, "//") || strings.ContainsAny(loc, "\t\r\n\\ ") {
			t.Errorf("%s: Location %q is not a plain absolute path", raw, loc)
		}
		if !strings.Contains(loc, "/?q=1") {
			t.Errorf("%s: Location %q lost the final slash or the query", raw, loc)
		}
	}
	// the ordinary case is unchanged
	w := httptest.NewRecorder()
	_ = d.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/hooks-admin", nil), nil)
	if w.Code != http.StatusPermanentRedirect || w.Header().Get("Location") != "/hooks-admin/" {
		t.Fatalf("/hooks-admin: %d %q", w.Code, w.Header().Get("Location"))
	}
}
