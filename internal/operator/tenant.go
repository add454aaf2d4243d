package operator

import (
	"errors"
	"net/http"

	"github.com/hookline/hookline/dedupe"
	"github.com/hookline/hookline/internal/httpjson"
	"github.com/hookline/hookline/storage"
)

// tenantFilter is the tenant a route's tenant filter selects: the value as
// the stores keep it, normalized as the ingress normalizes a tenant found
// in a request, so that an operator may give the provider's own value (a
// long or non-ASCII account name is kept as its hash) or the stored one.
func tenantFilter(v string) string { return dedupe.Normalize(v) }

// ErrTooManyErasures refuses a tenant's erasure while the most that run
// at once in a process are running (429).
var ErrTooManyErasures = errors.New("too many tenant erasures are running on this node: start this one when one is done")

// TenantEraseRequest is the optional body of DELETE
// /webhooks/tenants/{source}/{tenant}: how to pace the erasure it starts
// (a running one keeps its own pace).
type TenantEraseRequest struct {
	// Batch is how many events a batch erases at most (default 100, at
	// most 500).
	Batch int `json:"batch,omitempty"`
	// Pause is the wait between batches, a Go duration ("200ms"; default
	// none, at most 10s), so that erasing a large account takes only a
	// share of a busy store.
	Pause string `json:"pause,omitempty"`
}

// TenantErasureAnswer answers DELETE and GET
// /webhooks/tenants/{source}/{tenant}: the progress of the running or
// last erasure of the tenant, as saved in the store (the tenant as
// stored; cursor is where its walk goes on, for a resumed run).
type TenantErasureAnswer struct {
	storage.TenantErasure
	// Started is true when this DELETE started (or resumed) the erasure,
	// false when one was running already, here or on another node (and
	// for GET).
	Started bool `json:"started"`
}

// tenantPath reads the source and tenant of a tenant route's path: the
// tenant as tenantFilter stores it.
func tenantPath(r *http.Request) (source, tenant string, err error) {
	source, tenant = r.PathValue("source"), tenantFilter(r.PathValue("tenant"))
	if !sourceNameRe.MatchString(source) {
		return "", "", newError(http.StatusBadRequest, "invalid source name")
	}
	if tenant == "" {
		return "", "", newError(http.StatusBadRequest, "invalid tenant")
	}
	return source, tenant, nil
}

// eraseTenant answers DELETE /webhooks/tenants/{source}/{tenant}: 202 with
// the erasure it started (or resumed) in the background, or the one
// running already.
func (h *Handler) eraseTenant(w http.ResponseWriter, r *http.Request) error {
	app, err := h.ready()
	if err != nil {
		return err
	}
	source, tenant, err := tenantPath(r)
	if err != nil {
		return err
	}
	req, err := readStrict[TenantEraseRequest](r)
	if err != nil {
		return err
	}
	o := storage.TenantEraseOptions{Batch: req.Batch}
	if o.Pause, err = parsePause(req.Pause); err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return newError(http.StatusBadRequest, err.Error())
	}
	p, started, err := app.EraseTenant(r.Context(), source, tenant, o)
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusAccepted, TenantErasureAnswer{p, started})
	return nil
}

// tenantErasure answers GET /webhooks/tenants/{source}/{tenant}: the
// running or last erasure of the tenant, 404 when none was started.
func (h *Handler) tenantErasure(w http.ResponseWriter, r *http.Request) error {
	app, err := h.ready()
	if err != nil {
		return err
	}
	source, tenant, err := tenantPath(r)
	if err != nil {
		return err
	}
	p, err := app.TenantErasure(r.Context(), source, tenant)
	if errors.Is(err, storage.ErrNotFound) {
		return newError(http.StatusNotFound, "no erasure of this tenant was started")
	}
	if err != nil {
		return err
	}
	return answer(w, TenantErasureAnswer{TenantErasure: p})
}
