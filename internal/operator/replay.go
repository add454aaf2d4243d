package operator

import (
	"net/http"
	"time"

	"github.com/hookline/hookline/storage"
)

// replay answers POST /webhooks/events/replay (ReplayRequest): the
// delivered events matching the filter are re-enqueued in their sources'
// replay lanes, due one after the other at the source's delivery rate;
// dry_run only names them.
func (h *Handler) replay(w http.ResponseWriter, r *http.Request) error {
	app, err := h.ready() // 503 when the store is unreachable, before the body is read
	if err != nil {
		return err
	}
	req, err := readStrict[ReplayRequest](r)
	if err != nil {
		return err
	}
	if err := checkDestination(req.Destination); err != nil {
		return err
	}
	now := time.Now()
	f := storage.ReplayFilter{Source: req.Source, Destination: req.Destination, Type: req.Type, Tenant: tenantFilter(req.Tenant),
		ID: req.ID, Limit: req.Limit, Cursor: req.Cursor}
	if f.Since, err = parseTimeFilter("since", req.Since, now); err != nil {
		return err
	}
	if f.Until, err = parseTimeFilter("until", req.Until, now); err != nil {
		return err
	}
	if req.Limit != 0 && !validLimit(req.Limit) { // storage.ReplayMaxLimit is a bulk retry's
		return errLimit
	}
	rp, err := app.ReplayDelivered(r.Context(), f, req.DryRun)
	if err != nil {
		return err
	}
	res := ReplayAnswer{DryRun: req.DryRun, Matched: rp.Matched, Replayed: rp.Replayed, NextCursor: rp.NextCursor}
	if res.Replayed == nil {
		res.Replayed = []ReplayedEvent{}
	}
	res.Failed, res.Spread = bulkOutcome(rp.Failed, req.DryRun, len(rp.Replayed), rp.Spread)
	return answer(w, res)
}
