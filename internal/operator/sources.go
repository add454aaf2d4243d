package operator

import (
	"net/http"
	"regexp"
)

// sourceNameRe is what a source name may be.
var sourceNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// pause answers POST /webhooks/sources/{source}/pause (paused) or resume
// (PauseAnswer): while paused the source's ingress answers 503 +
// Retry-After (the provider keeps the events) and its deliveries wait.
func (h *Handler) pause(paused bool) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		app, err := h.running()
		if err != nil {
			return err
		}
		source := r.PathValue("source")
		if !sourceNameRe.MatchString(source) {
			return newError(http.StatusBadRequest, "invalid source name")
		}
		if err := app.SetPaused(r.Context(), source, paused); err != nil {
			return err
		}
		return answer(w, PauseAnswer{Paused: paused, Source: source})
	}
}
