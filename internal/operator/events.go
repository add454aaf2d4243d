package operator

import (
	"net/http"

	"github.com/hookline/hookline/dedupe"
)

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

// erase answers DELETE /webhooks/events/{source}/{event_id}
// (EraseAnswer): the event and everything stored of it are removed, its
// claim kept (resends are answered as duplicates, status "erased").
func (h *Handler) erase(w http.ResponseWriter, r *http.Request) error {
	app, err := h.ready()
	if err != nil {
		return err
	}
	source, eventID := r.PathValue("source"), r.PathValue("event_id")
	if !sourceNameRe.MatchString(source) {
		return newError(http.StatusBadRequest, "invalid source name")
	}
	// every stored event id is printable (dedupe.Normalize), internal ids too
	if !dedupe.Printable(eventID) {
		return newError(http.StatusBadRequest, "invalid event id")
	}
	res, err := app.EraseEvent(r.Context(), source, eventID)
	if err != nil {
		return err
	}
	return answer(w, EraseAnswer{Erased: true, Source: source, EventID: eventID, ID: res.ID,
		Deliveries: res.Deliveries, DLQEntries: res.DLQEntries, DedupeUntil: res.DedupeUntil})
}
