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

// pause answers POST /webhooks/sources/{source}/pause (PauseAnswer), and
// .../destinations/{name}/pause for one destination: the optional body
// (PauseRequest) says how (hold or refuse), why and for how long; pausing
// again changes the pause. Unknown fields and a bad `for` are 400, a
// destination the configured source does not have 404.
func (h *Handler) pause(w http.ResponseWriter, r *http.Request) error {
	app, err := h.running()
	if err != nil {
		return err
	}
	source, dest, err := pauseTarget(r)
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
	p, err := storage.NewPause(source, dest, req.Accept, req.Reason, forDur, time.Now())
	if err != nil {
		return newError(http.StatusBadRequest, err.Error())
	}
	if err := app.SetPause(r.Context(), p); err != nil {
		if errors.Is(err, storage.ErrUnknownDestination) {
			return newError(http.StatusNotFound, err.Error())
		}
		return err
	}
	info := pauseInfo(p, nil)
	return answer(w, PauseAnswer{Paused: true, Source: source, Destination: p.Destination, Pause: &info})
}

// resume answers POST /webhooks/sources/{source}/resume (PauseAnswer), and
// .../destinations/{name}/resume: the pause ends on every node and its
// waiting deliveries go, paced. Resuming what is not paused is no error.
func (h *Handler) resume(w http.ResponseWriter, r *http.Request) error {
	app, err := h.running()
	if err != nil {
		return err
	}
	source, dest, err := pauseTarget(r)
	if err != nil {
		return err
	}
	if _, err := readStrict[struct{}](r); err != nil {
		return err
	}
	p, ok, err := app.Resume(r.Context(), source, dest)
	if err != nil {
		return err
	}
	res := PauseAnswer{Paused: false, Source: source, Destination: dest}
	if ok {
		info := pauseInfo(p, nil)
		res.Destination, res.Resumed = p.Destination, &info
	}
	return answer(w, res)
}

// pauseTarget reads the route's source and optional destination.
func pauseTarget(r *http.Request) (source, dest string, err error) {
	source = r.PathValue("source")
	if !sourceNameRe.MatchString(source) {
		return "", "", newError(http.StatusBadRequest, "invalid source name")
	}
	dest = r.PathValue("name")
	if dest != "" {
		if err := checkDestination(dest); err != nil {
			return "", "", err
		}
		dest = storage.DestinationOf(&storage.Event{Destination: dest})
	}
	return source, dest, nil
}

// pauseInfo is p as the API shows it, with its waiting deliveries counted
// in lanes (nil: not counted).
func pauseInfo(p storage.Pause, lanes map[string]storage.Counts) PauseInfo {
	info := PauseInfo{Source: p.Source, Destination: p.Destination, Mode: p.Mode(), Accept: p.Holds(),
		Reason: p.Reason, Since: p.Since, Until: p.Until}
	if lanes != nil {
		info.Waiting = storage.CountsOfDestination(lanes, p.Source, p.Destination).Queued
	}
	return info
}
