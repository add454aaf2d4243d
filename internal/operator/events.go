package operator

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/hookline/hookline/dedupe"
	"github.com/hookline/hookline/storage"
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

// listEvents answers GET /webhooks/events?source=&destination=&type=&tenant=&status=&since=&until=&q=&limit=&cursor=
// with a page of events (storage.EventPage), newest first, whatever their
// status: what Lookup reports of each (a fan-out event once, with each
// destination's delivery).
func (h *Handler) listEvents(w http.ResponseWriter, r *http.Request) error {
	app, err := h.ready()
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := storage.EventFilter{Source: q.Get("source"), Destination: q.Get("destination"), Type: q.Get("type"),
		Tenant: tenantFilter(q.Get("tenant")), Status: storage.Status(q.Get("status")), ID: q.Get("q"), Cursor: q.Get("cursor")}
	if err := checkDestination(f.Destination); err != nil {
		return err
	}
	if f.Status != "" && !f.Status.Valid() {
		return newError(http.StatusBadRequest, fmt.Sprintf("unknown status %q (want queued, in_flight, delivered or dead)", f.Status))
	}
	if f.ID != "" && !dedupe.Printable(f.ID) {
		return newError(http.StatusBadRequest, "invalid event id")
	}
	now := time.Now()
	if f.Since, err = parseSince(q.Get("since"), now); err != nil {
		return err
	}
	if f.Until, err = parseTimeFilter("until", q.Get("until"), now); err != nil {
		return err
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > storage.EventsMaxLimit {
			return errEventsLimit
		}
		f.Limit = n
	}
	page, err := app.ListEvents(r.Context(), f)
	if err != nil {
		return err
	}
	return answer(w, page)
}

var errEventsLimit = newError(http.StatusBadRequest, fmt.Sprintf("limit must be between 1 and %d", storage.EventsMaxLimit))
