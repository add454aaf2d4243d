package operator

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/hookline/hookline/storage"
)

// sourceNameRe is what a source name may be.
var sourceNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// pause answers POST /webhooks/sources/{source}/pause (PauseAnswer),
// .../destinations/{name}/pause for one destination, and
// /webhooks/tenants/{source}/{tenant}/pause for one tenant: the optional
// body (PauseRequest) says how (hold or refuse), why and for how long;
// pausing again changes the pause. Unknown fields and a bad `for` are
// 400, a destination the configured source does not have 404.
func (h *Handler) pause(w http.ResponseWriter, r *http.Request) error {
	app, err := h.running()
	if err != nil {
		return err
	}
	target, err := pauseTarget(r)
	if err != nil {
		return err
	}
	req, err := readStrict[PauseRequest](r)
	if err != nil {
		return err
	}
	var forDur time.Duration
	if req.For != "" {
		if forDur, err = caddy.ParseDuration(req.For); err != nil || forDur <= 0 {
			return newError(http.StatusBadRequest, fmt.Sprintf("invalid for %q: want a positive duration such as 30m", req.For))
		}
	}
	p, err := storage.NewPause(target.Source, target.Destination, req.Accept, req.Reason, forDur, time.Now())
	if err != nil {
		return newError(http.StatusBadRequest, err.Error())
	}
	p.Tenant = target.Tenant
	if err := app.SetPause(r.Context(), p); err != nil {
		if errors.Is(err, storage.ErrUnknownDestination) {
			return newError(http.StatusNotFound, err.Error())
		}
		return err
	}
	info := pauseInfo(p, nil)
	return answer(w, PauseAnswer{Paused: true, Source: p.Source, Destination: p.Destination, Tenant: p.Tenant, Pause: &info})
}

// resume answers POST /webhooks/sources/{source}/resume (PauseAnswer),
// .../destinations/{name}/resume and /webhooks/tenants/{source}/{tenant}/resume:
// the pause ends on every node and its waiting deliveries go (a source's
// or destination's paced). Resuming what is not paused is no error.
func (h *Handler) resume(w http.ResponseWriter, r *http.Request) error {
	app, err := h.running()
	if err != nil {
		return err
	}
	target, err := pauseTarget(r)
	if err != nil {
		return err
	}
	if _, err := readStrict[struct{}](r); err != nil {
		return err
	}
	var (
		p  storage.Pause
		ok bool
	)
	if target.Tenant != "" {
		p, ok, err = app.ResumeTenant(r.Context(), target.Source, target.Tenant)
	} else {
		p, ok, err = app.Resume(r.Context(), target.Source, target.Destination)
	}
	if err != nil {
		return err
	}
	res := PauseAnswer{Paused: false, Source: target.Source, Destination: target.Destination, Tenant: target.Tenant}
	if ok {
		info := pauseInfo(p, nil)
		res.Destination, res.Resumed = p.Destination, &info
	}
	return answer(w, res)
}

// pauseTarget reads what a pause route names: its source, and its
// destination or tenant, if any (Source, Destination, Tenant).
func pauseTarget(r *http.Request) (storage.Pause, error) {
	if r.PathValue("tenant") != "" {
		source, tenant, err := tenantPath(r)
		return storage.Pause{Source: source, Tenant: tenant}, err
	}
	source := r.PathValue("source")
	if !sourceNameRe.MatchString(source) {
		return storage.Pause{}, newError(http.StatusBadRequest, "invalid source name")
	}
	dest := r.PathValue("name")
	if dest != "" {
		if err := checkDestination(dest); err != nil {
			return storage.Pause{}, err
		}
		dest = storage.DestinationOf(&storage.Event{Destination: dest})
	}
	return storage.Pause{Source: source, Destination: dest}, nil
}

// pauseInfo is p as the API shows it, with its waiting deliveries counted
// in lanes (storage.QueueByLane; nil: not counted): a tenant's, those
// already held in its own lanes (storage.TenantLane).
func pauseInfo(p storage.Pause, lanes map[string]storage.Counts) PauseInfo {
	info := PauseInfo{Source: p.Source, Destination: p.Destination, Tenant: p.Tenant, Mode: p.Mode(), Accept: p.Holds(),
		Reason: p.Reason, Since: p.Since, Until: p.Until}
	switch {
	case lanes == nil:
	case p.Tenant != "":
		for lane, c := range lanes {
			if storage.SourceOfLane(lane) == p.Source && storage.IsTenantLane(lane, p.Tenant) {
				info.Waiting += c.Queued
			}
		}
	default: // a lane's tenant shares with it
		info.Waiting = storage.CountsOfDestination(storage.ByBaseLane(lanes), p.Source, p.Destination).Queued
	}
	return info
}
