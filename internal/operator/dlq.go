package operator

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/caddyserver/caddy/v2"

	"github.com/hookline/hookline/storage"
)

// The dead letter queue's routes: list, inspect, retry one or in bulk,
// and the operator's status changes.

// defaultBulkLimit is how many entries a bulk retry takes without a limit.
const defaultBulkLimit = 100

// listDead answers GET /webhooks/dlq?source=&destination=&type=&tenant=&status=&since=&until=&limit=&cursor=
// with a page of entries, newest first, credentials redacted.
func (h *Handler) listDead(w http.ResponseWriter, r *http.Request) error {
	app, err := h.ready()
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := storage.DLQFilter{Source: q.Get("source"), Destination: q.Get("destination"), Type: q.Get("type"),
		Tenant: tenantFilter(q.Get("tenant")), Status: storage.DLQStatus(q.Get("status")), Cursor: q.Get("cursor")}
	if err := checkDestination(f.Destination); err != nil {
		return err
	}
	if f.Status != "" {
		if err := checkStatus(f.Status); err != nil {
			return err
		}
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
		if err != nil || !validLimit(n) {
			return errLimit
		}
		f.Limit = n
	}
	page, err := app.ListDead(r.Context(), f)
	if err != nil {
		return err
	}
	shown := make([]storage.DLQEntry, len(page.Entries)) // a copy: never edit what the app returned
	for i := range page.Entries {
		shown[i] = redactEntry(app, page.Entries[i])
	}
	page.Entries = shown
	return answer(w, page)
}

// getDead answers GET /webhooks/dlq/{id} with the entry and its payload.
func (h *Handler) getDead(w http.ResponseWriter, r *http.Request) error {
	if r.PathValue("id") == "retry" { // GET on the bulk retry route
		w.Header().Set("Allow", http.MethodPost)
		return errMethodNotAllowed
	}
	app, err := h.ready()
	if err != nil {
		return err
	}
	e, err := app.GetDead(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return answer(w, viewEntry(app, e))
}

// viewEntry is e as the API shows it; e is not modified.
func viewEntry(app App, e *storage.DLQEntry) EntryView {
	v := EntryView{DLQEntry: redactEntry(app, *e), PayloadEncoding: "text"}
	if utf8.Valid(v.DLQEntry.Payload) {
		v.Payload = string(v.DLQEntry.Payload)
	} else {
		v.Payload = base64.StdEncoding.EncodeToString(v.DLQEntry.Payload)
		v.PayloadEncoding = "base64"
	}
	return v
}

// retryDead answers POST /webhooks/dlq/{id}/retry: the event is
// re-enqueued with a fresh attempt budget.
func (h *Handler) retryDead(w http.ResponseWriter, r *http.Request) error {
	app, err := h.ready()
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	if err := app.RetryDead(r.Context(), id); err != nil {
		return err
	}
	return answer(w, StatusAnswer{ID: id, Status: storage.DLQRetried})
}

// setDeadStatus answers a route that moves an entry to status, with the
// operator's text read from the optional JSON body field named field.
func (h *Handler) setDeadStatus(status storage.DLQStatus, field string) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		app, err := h.ready()
		if err != nil {
			return err
		}
		text, err := readTextField(r, field)
		if err != nil {
			return err
		}
		id := r.PathValue("id")
		if err := app.SetDeadStatus(r.Context(), id, status, text); err != nil {
			return err
		}
		return answer(w, StatusAnswer{ID: id, Status: status})
	}
}

// bulkRetry answers POST /webhooks/dlq/retry (BulkRetryRequest): the
// entries matching the filter are re-enqueued, skipping events delivered
// meanwhile, due one after the other at the source's delivery rate;
// dry_run only says what would be re-enqueued.
func (h *Handler) bulkRetry(w http.ResponseWriter, r *http.Request) error {
	app, err := h.ready() // 503 when the store is unreachable, before the body is read
	if err != nil {
		return err
	}
	req, err := readStrict[BulkRetryRequest](r)
	if err != nil {
		return err
	}
	if req.Status == "" {
		req.Status = string(storage.DLQPending)
	}
	f := storage.DLQFilter{Source: req.Source, Destination: req.Destination, Type: req.Type, Tenant: tenantFilter(req.Tenant),
		Status: storage.DLQStatus(req.Status), Limit: req.Limit, Cursor: req.Cursor}
	if err := checkDestination(f.Destination); err != nil {
		return err
	}
	if err := checkStatus(f.Status); err != nil {
		return err
	}
	if f.Since, err = parseSince(req.Since, time.Now()); err != nil {
		return err
	}
	if f.Limit == 0 {
		f.Limit = defaultBulkLimit
	}
	if !validLimit(f.Limit) {
		return errLimit
	}
	rd, err := app.RedriveDead(r.Context(), f, req.DryRun)
	if err != nil {
		return err
	}
	res := BulkRetryAnswer{DryRun: req.DryRun, Matched: rd.Matched, Retried: rd.Retried, SkippedDelivered: rd.SkippedDelivered,
		NextCursor: rd.NextCursor}
	res.Failed, res.Spread = bulkOutcome(rd.Failed, req.DryRun, len(rd.Retried), rd.Spread)
	return answer(w, res)
}

// bulkOutcome is how a bulk route's answer shows its failures (with the
// store's errors as the API words them) and the spread of the n events it
// re-enqueued (none for a dry run).
func bulkOutcome(failed map[string]error, dryRun bool, n int, spread time.Duration) (map[string]string, string) {
	var out map[string]string
	for id, err := range failed {
		if out == nil {
			out = map[string]string{}
		}
		out[id] = storeError(err).msg
	}
	if dryRun || n == 0 {
		return out, ""
	}
	return out, spread.Round(time.Millisecond).String()
}

// readStrict reads the optional JSON body of a bulk route, refusing
// unknown fields; no body is the zero T.
func readStrict[T any](r *http.Request) (T, error) {
	var req T
	body, err := readBody(r)
	if err != nil || len(body) == 0 {
		return req, err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, newError(http.StatusBadRequest, "request body: "+err.Error())
	}
	return req, nil
}

// checkDestination refuses a destination filter that cannot name a
// destination (storage.ValidDestination); "" (every destination) and
// "default" (forward_to's) are valid.
func checkDestination(name string) error {
	if name != "" && !storage.IsDefaultDestination(name) && storage.ValidDestination(name) != nil {
		return newError(http.StatusBadRequest, fmt.Sprintf("invalid destination name %q", name))
	}
	return nil
}

// checkStatus refuses a status that is not a DLQ status.
func checkStatus(s storage.DLQStatus) error {
	if !s.Valid() {
		return newError(http.StatusBadRequest, fmt.Sprintf("unknown status %q", s))
	}
	return nil
}

var errLimit = newError(http.StatusBadRequest, fmt.Sprintf("limit must be between 1 and %d", storage.DLQMaxLimit))

// validLimit reports whether n entries may be asked for at once.
func validLimit(n int) bool { return n >= 1 && n <= storage.DLQMaxLimit }

// parseSince reads a since filter: an RFC 3339 time, or a duration meaning
// that long before now ("24h", "7d"). "" is no filter (the zero time).
func parseSince(s string, now time.Time) (time.Time, error) {
	return parseTimeFilter("since", s, now)
}

// timeFilterHorizon bounds every time a request names: within this of now,
// either way. Checked at parsing, before any arithmetic, so that windows,
// steps and point counts computed from them never overflow (a time far
// enough apart saturates time.Time.Sub), and a time such as year 1 is
// refused instead of read as "not given" (the zero time).
const timeFilterHorizon = 10 * 365 * 24 * time.Hour

// parseTimeFilter reads the time filter named name as parseSince does; a
// time further than timeFilterHorizon from now is a 400.
func parseTimeFilter(name, s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		if t.Before(now.Add(-timeFilterHorizon)) || t.After(now.Add(timeFilterHorizon)) {
			return time.Time{}, newError(http.StatusBadRequest, fmt.Sprintf("%s: %q is more than %d years from now", name, s, timeFilterHorizon/(365*24*time.Hour)))
		}
		return t, nil
	}
	if d, err := caddy.ParseDuration(s); err == nil && d >= 0 {
		if d > timeFilterHorizon {
			return time.Time{}, newError(http.StatusBadRequest, fmt.Sprintf("%s: %q is more than %d years ago", name, s, timeFilterHorizon/(365*24*time.Hour)))
		}
		return now.Add(-d), nil
	}
	return time.Time{}, newError(http.StatusBadRequest, fmt.Sprintf("%s: want an RFC 3339 time or a duration, got %q", name, s))
}
