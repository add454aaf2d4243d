// Package operator is the operator HTTP API of hookline: stats, DLQ list,
// inspect, retry, bulk retry, resolve, discard and investigate, event
// browser and lookup, replay and erasure, pause and resume, and its own OpenAPI
// document (openapi.json). It is one http.Handler, mounted by the admin
// API (admin.api.webhooks, on Caddy's admin endpoint) and by the dashboard
// (webhook_dashboard, under its "/api/"); its wire types are what the
// `caddy webhooks` CLI decodes.
//
// The handler reaches the webhooks app only through the App interface
// (which *webhooks.App implements), looked up per request. It writes every
// answer itself, errors included ({"error": "..."}, never internals),
// through internal/httpjson, and logs failures under the logger
// "admin.api.webhooks".
package operator

import (
	"fmt"
	"net/http"
	"strings"

	"go.uber.org/zap"

	"github.com/hookline/hookline/storage"
)

// Handler serves the operator API under /webhooks/. It keeps no state of
// its own: the app is looked up for every request, so one Handler serves
// across config reloads, failed reloads and implicit apps.
type Handler struct {
	app    func() (App, error)
	mux    *http.ServeMux
	routes []route
}

// route is one pattern of the API and what answers it.
type route struct {
	pattern string
	handle  func(http.ResponseWriter, *http.Request) error
}

// New returns the operator API over the app that app returns for each
// request: the running one, or an error (ErrNotRunning when there is none).
func New(app func() (App, error)) *Handler {
	h := &Handler{app: app, mux: http.NewServeMux()}
	h.routes = []route{
		{"GET /webhooks/stats", h.stats},
		{"GET /webhooks/stats/series", h.series},
		// anything else under /webhooks/: a JSON 404, or 405 with Allow
		{"/webhooks/", h.unknown},
		{"GET /webhooks/dlq", h.listDead},
		{"POST /webhooks/dlq/retry", h.bulkRetry},
		{"POST /webhooks/sources/{source}/pause", h.pause},
		{"POST /webhooks/sources/{source}/resume", h.resume},
		{"POST /webhooks/sources/{source}/destinations/{name}/pause", h.pause},
		{"POST /webhooks/sources/{source}/destinations/{name}/resume", h.resume},
		{"GET /webhooks/dlq/{id}", h.getDead},
		{"POST /webhooks/dlq/{id}/retry", h.retryDead},
		{"POST /webhooks/dlq/{id}/resolve", h.setDeadStatus(storage.DLQResolved, "resolution")},
		{"POST /webhooks/dlq/{id}/discard", h.setDeadStatus(storage.DLQDiscarded, "reason")},
		{"POST /webhooks/dlq/{id}/investigate", h.setDeadStatus(storage.DLQInvestigating, "note")},
		{"GET /webhooks/events", h.listEvents},
		{"GET /webhooks/events/{source}/{event_id}", h.event},
		{"DELETE /webhooks/events/{source}/{event_id}", h.erase},
		{"POST /webhooks/events/replay", h.replay},
		{"GET /webhooks/openapi.json", h.openapi},
		{"DELETE /webhooks/tenants/{source}/{tenant}", h.eraseTenant},
		{"GET /webhooks/tenants/{source}/{tenant}", h.tenantErasure},
		{"POST /webhooks/tenants/{source}/{tenant}/pause", h.pause},
		{"POST /webhooks/tenants/{source}/{tenant}/resume", h.resume},
		{"POST /webhooks/rekey", h.startRekey},
		{"GET /webhooks/rekey", h.rekeyStatus},
	}
	for _, rt := range h.routes {
		h.mux.HandleFunc(rt.pattern, func(w http.ResponseWriter, r *http.Request) {
			defer recoverRoute(w, r)
			if err := rt.handle(w, r); err != nil {
				fail(w, r, err)
			}
		})
	}
	return h
}

// recoverRoute is the backstop of every route: a panic is a bug (the
// hostile-parameter tests and fuzz targets fail on any 500), but the
// client still gets the API's JSON 500, never a dropped connection, and
// the log gets the stack, never the request's body.
func recoverRoute(w http.ResponseWriter, r *http.Request) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler {
		panic(v) // the handler aborts the response on purpose
	}
	logger().Error("operator route panicked", zap.String("method", r.Method), zap.String("path", r.URL.Path),
		zap.String("panic", fmt.Sprint(v)), zap.Stack("stack"))
	fail(w, r, errInternal)
}

// Patterns lists the API's routes as http.ServeMux patterns (Go 1.22
// method patterns, and "/webhooks/" for everything else), for a router
// that mounts the Handler at each of them.
func (h *Handler) Patterns() []string {
	out := make([]string, len(h.routes))
	for i, rt := range h.routes {
		out[i] = rt.pattern
	}
	return out
}

// ServeHTTP implements http.Handler. It answers every request under
// /webhooks/ itself, errors included.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mux.ServeHTTP(w, r)
}

// unknown answers a path or method no route has: 405 with Allow when the
// path has routes for other methods, else 404.
func (h *Handler) unknown(w http.ResponseWriter, r *http.Request) error {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		if m == r.Method {
			continue
		}
		r2 := r.Clone(r.Context())
		r2.Method = m
		if _, p := h.mux.Handler(r2); p != "" && p != "/webhooks/" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		return errMethodNotAllowed
	}
	return newError(http.StatusNotFound, "no such webhooks route")
}

// running returns the running app.
func (h *Handler) running() (App, error) {
	app, err := h.app()
	if err != nil {
		return nil, appError(err)
	}
	return app, nil
}

// ready returns the running app once its store can be reached, so that a
// route needing the store answers 503 before it validates the request.
func (h *Handler) ready() (App, error) {
	app, err := h.running()
	if err != nil {
		return nil, err
	}
	if err := app.Available(); err != nil {
		return nil, err
	}
	return app, nil
}

// Interface guards
var _ http.Handler = (*Handler)(nil)
