// Package dashboard is the webhook_dashboard HTTP handler: an embedded page
// (page/) over the operator API (internal/operator), mounted by users
// behind their own auth. Its browser test lives with the end-to-end tests
// in internal/ingress.
package dashboard

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/hookline/hookline/internal/httpjson"
	"github.com/hookline/hookline/internal/operator"
	"github.com/hookline/hookline/internal/webhooks"
)

func init() {
	caddy.RegisterModule(Dashboard{})
	httpcaddyfile.RegisterHandlerDirective("webhook_dashboard", parseDashboardCaddyfile)
	httpcaddyfile.RegisterDirectiveOrder("webhook_dashboard", httpcaddyfile.Before, "respond")
}

// DashboardCSRFHeader must be sent (with any non-empty value) on every POST
// to the dashboard's API. The page's script sets it; a cross-site form or
// image cannot, and a cross-site fetch with it needs a CORS preflight the
// dashboard never grants. So cookie or basic auth in front of the
// dashboard cannot be ridden by another site.
const DashboardCSRFHeader = "X-Hookline-Dashboard"

// maxDashboardBody bounds request bodies of the dashboard's API: the
// API's own limit, checked before the body is read.
const maxDashboardBody = operator.MaxBody

// dashboardCSP is the page's Content-Security-Policy: only its own files,
// no inline script or style, no framing.
const dashboardCSP = "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

//go:embed page/index.html page/app.js page/app.css page/events.js page/charts.js page/charts.css
var dashboardFiles embed.FS

// dashboardAsset is one embedded file of the page.
type dashboardAsset struct {
	body        []byte
	contentType string
	etag        string
}

var dashboardAssets = func() map[string]dashboardAsset {
	types := map[string]string{
		"index.html": "text/html; charset=utf-8",
		"app.js":     "text/javascript; charset=utf-8",
		"events.js":  "text/javascript; charset=utf-8",
		"app.css":    "text/css; charset=utf-8",
		"charts.js":  "text/javascript; charset=utf-8",
		"charts.css": "text/css; charset=utf-8",
	}
	m := make(map[string]dashboardAsset, len(types))
	for name, ct := range types {
		b, err := dashboardFiles.ReadFile("page/" + name)
		if err != nil {
			panic("webhook_dashboard: missing embedded file " + name)
		}
		sum := sha256.Sum256(b)
		m[name] = dashboardAsset{body: b, contentType: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
	}
	return m
}()

// Dashboard serves a small web page over the dead letter queue and queue
// operations of the webhooks app (stats, pause/resume, DLQ list, inspect,
// retry, bulk retry, resolve, discard), from files embedded in the binary.
// It has no authentication of its own: mount it behind yours.
//
//	webhook_dashboard [<matcher>]
//
// The page is served at the matched path (which must not contain "/api/");
// its JSON API at any path containing "/api/" ("<prefix>/api/dlq" answers
// like the admin route "/webhooks/dlq"). POSTs to the API must carry the
// X-Hookline-Dashboard header. For example:
//
//	handle_path /hooks-admin/* {
//		basic_auth {
//			admin <hashed password>
//		}
//		webhook_dashboard
//	}
type Dashboard struct{}

// CaddyModule returns the Caddy module information.
func (Dashboard) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.webhook_dashboard",
		New: func() caddy.Module { return new(Dashboard) },
	}
}

// ServeHTTP implements caddyhttp.MiddlewareHandler. The dashboard answers
// every request it gets; it never calls next.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", dashboardCSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	// the API's path stays escaped until the operator API's router reads
	// it: an id holding "/" travels as "%2F" (a WhatsApp id is base64)
	if p := r.URL.EscapedPath(); strings.Contains(p, "/api/") {
		return d.serveAPI(w, r, p[strings.Index(p, "/api/")+len("/api/"):])
	}
	return d.servePage(w, r)
}

// serveAPI serves the operator API at "/webhooks/" + rest, rest being the
// escaped path after "/api/".
func (d *Dashboard) serveAPI(w http.ResponseWriter, r *http.Request, rest string) error {
	w.Header().Set("Cache-Control", "no-store")
	rawPath := "/webhooks/" + rest
	apiPath, ok := apiRoutePath(rawPath)
	if rest == "" || !ok {
		return dashboardError(w, http.StatusNotFound, "no such API route")
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	case http.MethodPost, http.MethodDelete: // changes (DELETE: erasure) need the page's header
		if r.Header.Get(DashboardCSRFHeader) == "" {
			return dashboardError(w, http.StatusForbidden, "missing "+DashboardCSRFHeader+" header")
		}
		if r.ContentLength > maxDashboardBody {
			return dashboardError(w, http.StatusRequestEntityTooLarge, "request body too large")
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxDashboardBody+1) // the API answers 413 beyond the limit
	default:
		w.Header().Set("Allow", "GET, HEAD, POST, DELETE")
		return dashboardError(w, http.StatusMethodNotAllowed, "method not allowed")
	}
	// the operator API, as the admin endpoint serves it at apiPath: it
	// answers every request itself, errors included
	r2 := r.Clone(r.Context())
	r2.URL.Path, r2.URL.RawPath = apiPath, rawPath
	r2.RequestURI = r2.URL.RequestURI()
	webhooks.OperatorAPI().ServeHTTP(w, r2)
	return nil
}

// apiRoutePath is the decoded path of an API request whose escaped path
// is rawPath, and whether it may be served: no segment is empty, "." or
// "..", escaped or not, so that no path leaves /webhooks/; an escaped "/"
// inside a segment (an id such as WhatsApp's base64 "a//b") is part of it.
func apiRoutePath(rawPath string) (string, bool) {
	segments := strings.Split(strings.TrimPrefix(rawPath, "/"), "/")
	for _, seg := range segments {
		dec, err := url.PathUnescape(seg)
		if err != nil || seg == "" || dec == "." || dec == ".." {
			return "", false
		}
	}
	p, err := url.PathUnescape(rawPath)
	return p, err == nil
}

func (d *Dashboard) servePage(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		return dashboardError(w, http.StatusMethodNotAllowed, "method not allowed")
	}
	name := path.Base(r.URL.Path)
	a, ok := dashboardAssets[name]
	if !ok || name == "index.html" {
		// the page itself: its relative links need a path ending in "/"
		if orig := originalPath(r); !strings.HasSuffix(orig, "/") && name != "index.html" {
			target := sameSitePath(orig + "/")
			if r.URL.RawQuery != "" {
				target += "?" + r.URL.RawQuery
			}
			// not http.Redirect: it would rewrite the target again
			w.Header().Set("Location", target)
			w.WriteHeader(http.StatusPermanentRedirect)
			return nil
		}
		a = dashboardAssets["index.html"]
	}
	w.Header().Set("Content-Type", a.contentType)
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("ETag", a.etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
	return nil
}

// sameSitePath turns a decoded request path into a Location that can only
// point into this site: every byte outside the path's safe set is
// percent-encoded (control characters such as a tab, which browsers drop
// from a URL, "\\", which they read as "/", spaces), so the browser sees
// the path the client asked for, and leading slashes are collapsed to one,
// so it is never a network-path reference ("//host/...").
func sameSitePath(p string) string {
	escaped := (&url.URL{Path: p}).EscapedPath()
	return "/" + strings.TrimLeft(escaped, "/")
}

// originalPath is the request's path as the client sent it (before
// handle_path or uri strip_prefix).
func originalPath(r *http.Request) string {
	if orig, ok := r.Context().Value(caddyhttp.OriginalRequestCtxKey).(http.Request); ok && orig.URL != nil {
		return orig.URL.Path
	}
	return r.URL.Path
}

// dashboardError answers {"error": msg} as the API does (httpjson: JSON,
// never cached).
func dashboardError(w http.ResponseWriter, status int, msg string) error {
	httpjson.Write(w, status, operator.ErrorAnswer{Error: msg})
	return nil
}

func parseDashboardCaddyfile(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	d := new(Dashboard)
	err := d.UnmarshalCaddyfile(h.Dispenser)
	return d, err
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax: see
// the Dashboard type.
func (d *Dashboard) UnmarshalCaddyfile(disp *caddyfile.Dispenser) error {
	disp.Next() // directive name
	if disp.NextArg() {
		return disp.ArgErr()
	}
	if disp.NextBlock(0) {
		return disp.Errf("webhook_dashboard takes no options, got %q", disp.Val())
	}
	return nil
}

// Interface guards
var (
	_ caddyhttp.MiddlewareHandler = (*Dashboard)(nil)
	_ caddyfile.Unmarshaler       = (*Dashboard)(nil)
)
