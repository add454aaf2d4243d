package operator_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/dedupe"
	"github.com/hookline/hookline/internal/operator"
	"github.com/hookline/hookline/storage"
)

// TestTenantErasureRoutes: DELETE /webhooks/tenants/{source}/{tenant}
// starts a tenant's erasure (202), once (a second DELETE answers the
// running one), with its pace checked; GET answers its progress, 404
// when none was started; the tenant in the path is normalized as stored.
func TestTenantErasureRoutes(t *testing.T) {
	long := strings.Repeat("x", 300)
	for _, tc := range []struct {
		name, method, path, body string
		setup                    func(*fakeApp)
		status                   int
		started                  bool
		tenant, error            string
		options                  storage.TenantEraseOptions
	}{
		{name: "start", method: "DELETE", path: "/webhooks/tenants/shop/alpha.myshopify.com", status: 202, started: true, tenant: "alpha.myshopify.com"},
		{name: "start paced", method: "DELETE", path: "/webhooks/tenants/shop/alpha", body: `{"batch":50,"pause":"200ms"}`, status: 202,
			started: true, tenant: "alpha", options: storage.TenantEraseOptions{Batch: 50, Pause: 200 * time.Millisecond}},
		{name: "escaped tenant", method: "DELETE", path: "/webhooks/tenants/shop/a%2Fb%20c", status: 202, started: true, tenant: "a/b c"},
		{name: "long tenant, as stored", method: "DELETE", path: "/webhooks/tenants/shop/" + long, status: 202, started: true, tenant: dedupe.Normalize(long)},
		{name: "running already", method: "DELETE", path: "/webhooks/tenants/shop/alpha", status: 202, tenant: "alpha",
			setup: func(f *fakeApp) {
				f.tenants["shop/alpha"] = storage.TenantErasure{Source: "shop", Tenant: "alpha", State: storage.TenantErasureRunning, Erased: 7}
			}},
		{name: "progress", method: "GET", path: "/webhooks/tenants/shop/alpha", status: 200, tenant: "alpha",
			setup: func(f *fakeApp) {
				f.tenants["shop/alpha"] = storage.TenantErasure{Source: "shop", Tenant: "alpha", State: storage.TenantErasureDone, Erased: 7}
			}},
		{name: "never started", method: "GET", path: "/webhooks/tenants/shop/alpha", status: 404, error: "no erasure of this tenant was started"},
		{name: "bad source", method: "DELETE", path: "/webhooks/tenants/sh%20op/alpha", status: 400, error: "invalid source name"},
		{name: "batch too large", method: "DELETE", path: "/webhooks/tenants/shop/alpha", body: `{"batch":501}`, status: 400, error: "batch must be between 1 and 500"},
		{name: "bad pause", method: "DELETE", path: "/webhooks/tenants/shop/alpha", body: `{"pause":"soon"}`, status: 400, error: `pause: "soon" is not a duration`},
		{name: "unknown field", method: "DELETE", path: "/webhooks/tenants/shop/alpha", body: `{"all":true}`, status: 400},
		{name: "too many", method: "DELETE", path: "/webhooks/tenants/shop/alpha", status: 429, error: operator.ErrTooManyErasures.Error(),
			setup: func(f *fakeApp) { f.fail = operator.ErrTooManyErasures }},
		{name: "store down", method: "DELETE", path: "/webhooks/tenants/shop/alpha", status: 503, error: "webhook store unavailable",
			setup: func(f *fakeApp) { f.unavailable = true }},
		{name: "POST", method: "POST", path: "/webhooks/tenants/shop/alpha", status: 405},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeApp()
			if tc.setup != nil {
				tc.setup(f)
			}
			w := serve(t, apiOver(f), tc.method, tc.path, tc.body)
			if w.Code != tc.status {
				t.Fatalf("%s %s: %d %s, want %d", tc.method, tc.path, w.Code, w.Body, tc.status)
			}
			if tc.status >= 400 {
				var e struct{ Error string }
				if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || (tc.error != "" && e.Error != tc.error) {
					t.Errorf("error %s, want %q", w.Body, tc.error)
				}
				return
			}
			var a operator.TenantErasureAnswer
			if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil {
				t.Fatal(err)
			}
			if a.Source != "shop" || a.Tenant != tc.tenant || a.Started != tc.started {
				t.Errorf("answer %+v, want shop/%q started %v", a, tc.tenant, tc.started)
			}
			if tc.method == http.MethodDelete && tc.started && f.tenantOptions != tc.options {
				t.Errorf("options %+v, want %+v", f.tenantOptions, tc.options)
			}
		})
	}
}
