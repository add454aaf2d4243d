package webhooks

import (
	"fmt"
	"net/http"

	"github.com/caddyserver/caddy/v2"

	"github.com/hookline/hookline/internal/operator"
)

func init() {
	caddy.RegisterModule(AdminAPI{})
}

// AdminAPI serves the operator API (internal/operator) on Caddy's admin
// endpoint. It is stateless: the webhooks app is looked up per request,
// so it keeps working across reloads, failed reloads and implicit apps.
type AdminAPI struct{}

// CaddyModule returns the Caddy module information.
func (AdminAPI) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.webhooks",
		New: func() caddy.Module { return new(AdminAPI) },
	}
}

// Routes implements caddy.AdminRouter: the operator API at each of its
// patterns, so the admin endpoint routes (and labels its metrics) as
// before. The API writes every answer itself, errors included; it returns
// no error for Caddy's admin to write a second body.
func (AdminAPI) Routes() []caddy.AdminRoute {
	h := caddy.AdminHandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		operatorAPI.ServeHTTP(w, r)
		return nil
	})
	patterns := operatorAPI.Patterns()
	routes := make([]caddy.AdminRoute, len(patterns))
	for i, p := range patterns {
		routes[i] = caddy.AdminRoute{Pattern: p, Handler: h}
	}
	return routes
}

// OperatorAPI returns the operator API over the running webhooks app: the
// handler admin.api.webhooks mounts, and webhook_dashboard under "/api/".
func OperatorAPI() http.Handler { return operatorAPI }

var operatorAPI = operator.New(runningApp)

// runningApp is the webhooks app of the running config, looked up for
// every request: an admin router is provisioned with each config load,
// before its apps and whether or not the load succeeds (Caddy's provisionContext starts
// the admin server, with its routers, before it provisions the apps).
func runningApp() (operator.App, error) {
	v, err := caddy.ActiveContext().AppIfConfigured("webhooks")
	if err != nil {
		return nil, operator.ErrNotRunning
	}
	app, ok := v.(*App)
	if !ok {
		return nil, fmt.Errorf("unexpected webhooks app type %T", v)
	}
	return app, nil
}

// Interface guards
var _ caddy.AdminRouter = (*AdminAPI)(nil)
