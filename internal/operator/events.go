package operator

import "net/http"

// event answers GET /webhooks/events/{source}/{event_id} (a
// storage.EventInfo): where the event is, with its attempts.
func (h *Handler) event(w http.ResponseWriter, r *http.Request) error {
	app, err := h.ready()
	if err != nil {
		return err
	}
	info, err := app.LookupEvent(r.Context(), r.PathValue("source"), r.PathValue("event_id"))
	if err != nil {
		return err
	}
	return answer(w, info)
}
