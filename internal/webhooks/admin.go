package webhooks

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/caddyserver/caddy/v2"

	"github.com/hookline/hookline/internal/httpjson"
	"github.com/hookline/hookline/storage"
)

func init() {
	caddy.RegisterModule(AdminAPI{})
}

// AdminAPI serves the DLQ and event routes on Caddy's admin endpoint. It
// is stateless: the webhooks app is looked up per request, so it keeps
// working across reloads, failed reloads and implicit apps.
type AdminAPI struct{}

// CaddyModule returns the Caddy module information.
func (AdminAPI) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.webhooks",
		New: func() caddy.Module { return new(AdminAPI) },
	}
}

// maxAdminBody bounds request bodies of the admin routes.
const maxAdminBody = 64 << 10

// Routes implements caddy.AdminRouter.
func (AdminAPI) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{
		{Pattern: "GET /webhooks/stats", Handler: caddy.AdminHandlerFunc(handleStats)},
		// anything else under /webhooks/: a JSON 404, or 405 with Allow
		{Pattern: "/webhooks/", Handler: caddy.AdminHandlerFunc(handleUnknown)},
		{Pattern: "GET /webhooks/dlq", Handler: caddy.AdminHandlerFunc(handleDLQList)},
		{Pattern: "POST /webhooks/dlq/retry", Handler: caddy.AdminHandlerFunc(handleDLQBulkRetry)},
		{Pattern: "POST /webhooks/sources/{source}/pause", Handler: caddy.AdminHandlerFunc(handlePause(true))},
		{Pattern: "POST /webhooks/sources/{source}/resume", Handler: caddy.AdminHandlerFunc(handlePause(false))},
		{Pattern: "GET /webhooks/dlq/{id}", Handler: caddy.AdminHandlerFunc(handleDLQGet)},
		{Pattern: "POST /webhooks/dlq/{id}/retry", Handler: caddy.AdminHandlerFunc(handleDLQRetry)},
		{Pattern: "POST /webhooks/dlq/{id}/resolve", Handler: caddy.AdminHandlerFunc(handleDLQSetStatus(storage.DLQResolved, "resolution"))},
		{Pattern: "POST /webhooks/dlq/{id}/discard", Handler: caddy.AdminHandlerFunc(handleDLQSetStatus(storage.DLQDiscarded, "reason"))},
		{Pattern: "POST /webhooks/dlq/{id}/investigate", Handler: caddy.AdminHandlerFunc(handleDLQSetStatus(storage.DLQInvestigating, "note"))},
		{Pattern: "GET /webhooks/events/{source}/{event_id}", Handler: caddy.AdminHandlerFunc(handleEvent)},
	}
}

// apiMux routes the admin API in-process (for the dashboard): the routes
// of Routes, each reporting its error through the request's context.
func apiMux() *http.ServeMux {
	apiMuxOnce.Do(func() {
		mux := http.NewServeMux()
		for _, rt := range (AdminAPI{}).Routes() {
			h := rt.Handler
			mux.HandleFunc(rt.Pattern, func(w http.ResponseWriter, r *http.Request) {
				if p, ok := r.Context().Value(serveAPIErrKey{}).(*error); ok {
					*p = h.ServeHTTP(w, r)
				}
			})
		}
		apiMuxVal = mux
	})
	return apiMuxVal
}

var (
	apiMuxOnce sync.Once
	apiMuxVal  *http.ServeMux
)

type serveAPIErrKey struct{}

// trackingWriter notes whether a response was started.
type trackingWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *trackingWriter) WriteHeader(code int) { w.wrote = true; w.ResponseWriter.WriteHeader(code) }
func (w *trackingWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// ServeAPI serves the admin API route at path (such as
// "/webhooks/dlq/abc/retry") for r's method and query, in-process, through
// the same handlers as Routes. It always writes the response: errors as
// JSON {"error": ...} with their status, unknown routes as 404 (405 for a
// wrong method), never internals. The returned error, if any, is the
// handler's failure, for logging only.
func ServeAPI(w http.ResponseWriter, r *http.Request, path string) error {
	var herr error
	r2 := r.Clone(context.WithValue(r.Context(), serveAPIErrKey{}, &herr))
	r2.URL.Path, r2.URL.RawPath = path, ""
	r2.RequestURI = r2.URL.RequestURI()
	if r.Body != nil {
		r2.Body = http.MaxBytesReader(w, r.Body, maxAdminBody+1) // the handlers answer 413 above maxAdminBody
	}
	mux := apiMux()
	if _, pattern := mux.Handler(r2); pattern == "" {
		status, msg := http.StatusNotFound, "no such API route"
		for _, m := range []string{http.MethodGet, http.MethodPost} {
			r3 := r2.Clone(r2.Context())
			r3.Method = m
			if _, p := mux.Handler(r3); p != "" && m != r.Method {
				status, msg = http.StatusMethodNotAllowed, "method not allowed"
				w.Header().Add("Allow", m)
			}
		}
		_ = writeJSON(w, status, map[string]string{"error": msg})
		return nil
	}
	tw := &trackingWriter{ResponseWriter: w}
	mux.ServeHTTP(tw, r2)
	if herr == nil || tw.wrote {
		return herr
	}
	status, msg := http.StatusInternalServerError, "internal error"
	var ae caddy.APIError
	if errors.As(herr, &ae) && ae.HTTPStatus != 0 && ae.HTTPStatus != http.StatusInternalServerError {
		status, msg = ae.HTTPStatus, ae.Message
		if msg == "" && ae.Err != nil {
			msg = ae.Err.Error()
		}
		if msg == "" {
			msg = http.StatusText(status)
		}
	}
	_ = writeJSON(w, status, map[string]string{"error": msg})
	return herr
}

// handleUnknown answers a path or method no route has.
func handleUnknown(w http.ResponseWriter, r *http.Request) error {
	mux := apiMux()
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		if m == r.Method {
			continue
		}
		r2 := r.Clone(r.Context())
		r2.Method = m
		if _, p := mux.Handler(r2); p != "" && p != "/webhooks/" {
			w.Header().Add("Allow", m)
		}
	}
	if w.Header().Get("Allow") != "" {
		return apiErr(http.StatusMethodNotAllowed, "method not allowed")
	}
	return apiErr(http.StatusNotFound, "no such webhooks route")
}

// activeApp is the running webhooks app, if any.
func activeApp() (*App, error) {
	v, err := caddy.ActiveContext().AppIfConfigured("webhooks")
	if err != nil {
		return nil, apiErr(http.StatusNotFound, "the webhooks app is not running (no webhook_ingress and no webhooks option in the config)")
	}
	app, ok := v.(*App)
	if !ok {
		return nil, apiErr(http.StatusInternalServerError, "unexpected webhooks app type")
	}
	return app, nil
}

func activeStore() (*App, storage.Store, error) {
	app, err := activeApp()
	if err != nil {
		return nil, nil, err
	}
	st, err := app.Store()
	if err != nil {
		return nil, nil, apiErr(http.StatusServiceUnavailable, "webhook store unavailable")
	}
	return app, st, nil
}

func apiErr(status int, msg string) error {
	return caddy.APIError{HTTPStatus: status, Err: errors.New(msg)}
}

// storeErr maps store errors to API errors without leaking internals.
func storeErr(err error) error {
	switch {
	case errors.Is(err, storage.ErrDLQNotFound), errors.Is(err, storage.ErrNotFound):
		return apiErr(http.StatusNotFound, "not found")
	case errors.Is(err, storage.ErrConflict):
		return apiErr(http.StatusConflict, err.Error())
	case errors.Is(err, storage.ErrInvalidCursor):
		return apiErr(http.StatusBadRequest, "invalid cursor")
	}
	caddy.Log().Named("admin.api.webhooks").Error("store operation failed", zapErr(err))
	return apiErr(http.StatusServiceUnavailable, "webhook store unavailable")
}

// writeJSON answers v with status through httpjson, hookline's one JSON
// writer; the error return lets handlers end with it.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	httpjson.Write(w, status, v)
	return nil
}

// handleStats answers the queue's current sizes and, by source, what was
// received, rejected, delivered and dead-lettered over the last hour and
// all-time, with success rate, DLQ rate and average attempts. Counts are
// those of every node sharing the store (written every 2s).
func handleStats(w http.ResponseWriter, r *http.Request) error {
	app, st, err := activeStore()
	if err != nil {
		return err
	}
	c, err := st.Counts(r.Context())
	if err != nil {
		return storeErr(err)
	}
	recent, all, err := st.Stats(r.Context(), time.Now().Add(-time.Hour))
	if err != nil {
		return storeErr(err)
	}
	queues, err := st.QueueBySource(r.Context())
	if err != nil {
		return storeErr(err)
	}
	dead, err := st.DLQCounts(r.Context())
	if err != nil {
		return storeErr(err)
	}
	type perSource struct {
		Queue    storage.Counts `json:"queue"`
		LastHour sourceStats    `json:"last_hour"`
		AllTime  sourceStats    `json:"all_time"`
	}
	type window struct {
		LastHour sourceStats `json:"last_hour"`
		AllTime  sourceStats `json:"all_time"`
	}
	names := map[string]bool{}
	for _, m := range []map[string]map[string]int64{all, recent} {
		for src := range m {
			names[src] = true
		}
	}
	for src := range queues {
		names[src] = true
	}
	for src := range dead {
		names[src] = true
	}
	delete(names, alertSource)
	sources := map[string]perSource{}
	totalRecent, totalAll := map[string]int64{}, map[string]int64{}
	for source := range names {
		q := queues[source]
		q.Dead = dead[source][storage.DLQPending] + dead[source][storage.DLQInvestigating]
		sources[source] = perSource{Queue: q, LastHour: summarize(orEmpty(recent[source])), AllTime: summarize(orEmpty(all[source]))}
		for k, v := range recent[source] {
			totalRecent[k] += v
		}
		for k, v := range all[source] {
			totalAll[k] += v
		}
	}
	return writeJSON(w, http.StatusOK, map[string]any{
		"queue":          c,
		"paused_sources": app.PausedSources(),
		"sources":        sources,
		"total":          window{LastHour: summarize(totalRecent), AllTime: summarize(totalAll)},
	})
}

func orEmpty(m map[string]int64) map[string]int64 {
	if m == nil {
		return map[string]int64{}
	}
	return m
}

func handleDLQList(w http.ResponseWriter, r *http.Request) error {
	_, st, err := activeStore()
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := storage.DLQFilter{Source: q.Get("source"), Status: storage.DLQStatus(q.Get("status")), Cursor: q.Get("cursor")}
	if f.Status != "" && !f.Status.Valid() {
		return apiErr(http.StatusBadRequest, fmt.Sprintf("unknown status %q", f.Status))
	}
	if s := q.Get("since"); s != "" {
		if f.Since, err = parseSince(s, time.Now()); err != nil {
			return apiErr(http.StatusBadRequest, err.Error())
		}
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > storage.DLQMaxLimit {
			return apiErr(http.StatusBadRequest, fmt.Sprintf("limit must be between 1 and %d", storage.DLQMaxLimit))
		}
		f.Limit = n
	}
	page, err := st.DLQList(r.Context(), f)
	if err != nil {
		return storeErr(err)
	}
	shown := make([]storage.DLQEntry, len(page.Entries)) // a copy: never edit what the store returned
	for i := range page.Entries {
		shown[i] = redactEntry(page.Entries[i])
	}
	page.Entries = shown
	return writeJSON(w, http.StatusOK, page)
}

// parseSince accepts RFC 3339 times and durations ("1h": an hour ago).
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if d, err := caddy.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("since: want an RFC 3339 time or a duration, got %q", s)
}

// entryView is a DLQ entry as the API shows it: the payload as text when
// it is UTF-8, base64 otherwise; credentials redacted (redactEntry).
type entryView struct {
	*storage.DLQEntry
	Payload         string `json:"payload"`
	PayloadEncoding string `json:"payload_encoding"`
}

func viewEntry(e *storage.DLQEntry) entryView {
	red := redactEntry(*e)
	v := entryView{DLQEntry: &red, PayloadEncoding: "text"}
	if utf8.Valid(e.Payload) {
		v.Payload = string(e.Payload)
	} else {
		v.Payload = base64.StdEncoding.EncodeToString(e.Payload)
		v.PayloadEncoding = "base64"
	}
	return v
}

func handleDLQGet(w http.ResponseWriter, r *http.Request) error {
	if r.PathValue("id") == "retry" { // GET on the bulk retry route
		w.Header().Set("Allow", http.MethodPost)
		return apiErr(http.StatusMethodNotAllowed, "method not allowed")
	}
	_, st, err := activeStore()
	if err != nil {
		return err
	}
	e, err := st.DLQGet(r.Context(), r.PathValue("id"))
	if err != nil {
		return storeErr(err)
	}
	return writeJSON(w, http.StatusOK, viewEntry(e))
}

func handleDLQRetry(w http.ResponseWriter, r *http.Request) error {
	app, _, err := activeStore() // 503 when the store is unreachable
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	if err := app.RetryDead(r.Context(), id); err != nil {
		return storeErr(err)
	}
	return writeJSON(w, http.StatusOK, map[string]any{"id": id, "status": storage.DLQRetried})
}

// handleDLQSetStatus sets an entry's status with an optional operator
// text read from the JSON body field named field.
func handleDLQSetStatus(status storage.DLQStatus, field string) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		_, st, err := activeStore()
		if err != nil {
			return err
		}
		text, err := readTextField(r, field)
		if err != nil {
			return err
		}
		id := r.PathValue("id")
		if err := st.DLQSetStatus(r.Context(), id, status, text, time.Now()); err != nil {
			return storeErr(err)
		}
		return writeJSON(w, http.StatusOK, map[string]any{"id": id, "status": status})
	}
}

// readTextField reads an optional JSON body {"<field>": "..."}.
func readTextField(r *http.Request, field string) (string, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxAdminBody+1))
	if err != nil {
		return "", apiErr(http.StatusBadRequest, "reading request body")
	}
	if len(body) > maxAdminBody {
		return "", apiErr(http.StatusRequestEntityTooLarge, "request body too large")
	}
	if len(body) == 0 {
		return "", nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return "", apiErr(http.StatusBadRequest, "request body must be a JSON object")
	}
	var text string
	if raw, ok := m[field]; ok {
		if err := json.Unmarshal(raw, &text); err != nil {
			return "", apiErr(http.StatusBadRequest, fmt.Sprintf("%s must be a string", field))
		}
	}
	return text, nil
}

func handleEvent(w http.ResponseWriter, r *http.Request) error {
	_, st, err := activeStore()
	if err != nil {
		return err
	}
	info, err := st.Lookup(r.Context(), r.PathValue("source"), r.PathValue("event_id"))
	if err != nil {
		return storeErr(err)
	}
	return writeJSON(w, http.StatusOK, info)
}

var sourceNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// handlePause pauses or resumes a source: while paused its ingress answers
// 503 + Retry-After (the provider keeps the events) and its deliveries wait.
func handlePause(paused bool) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		app, err := activeApp()
		if err != nil {
			return err
		}
		source := r.PathValue("source")
		if !sourceNameRe.MatchString(source) {
			return apiErr(http.StatusBadRequest, "invalid source name")
		}
		if err := app.SetPaused(r.Context(), source, paused); err != nil {
			return storeErr(err)
		}
		return writeJSON(w, http.StatusOK, map[string]any{"source": source, "paused": paused})
	}
}

// bulkRetryRequest is the body of POST /webhooks/dlq/retry.
type bulkRetryRequest struct {
	Source string `json:"source"`
	Status string `json:"status"`
	Since  string `json:"since"`
	Limit  int    `json:"limit"`
	DryRun bool   `json:"dry_run"`
}

// bulkRetryResult answers it.
type bulkRetryResult struct {
	DryRun  bool     `json:"dry_run"`
	Matched int      `json:"matched"`
	Retried []string `json:"retried"`
	// SkippedDelivered are entries whose event was delivered meanwhile.
	SkippedDelivered []string          `json:"skipped_delivered"`
	Failed           map[string]string `json:"failed,omitempty"`
	// Spread is how long the re-enqueued events are spread over.
	Spread string `json:"spread,omitempty"`
}

// handleDLQBulkRetry re-enqueues the entries matching a filter, skipping
// events delivered meanwhile, with due times spaced at the source's
// delivery rate; dry_run only says what would be re-enqueued.
func handleDLQBulkRetry(w http.ResponseWriter, r *http.Request) error {
	app, _, err := activeStore() // 503 when the store is unreachable, before the body is read
	if err != nil {
		return err
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxAdminBody+1))
	if err != nil {
		return apiErr(http.StatusBadRequest, "reading request body")
	}
	if len(body) > maxAdminBody {
		return apiErr(http.StatusRequestEntityTooLarge, "request body too large")
	}
	var req bulkRetryRequest
	if len(body) > 0 {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			return apiErr(http.StatusBadRequest, "request body: "+err.Error())
		}
	}
	if req.Status == "" {
		req.Status = string(storage.DLQPending)
	}
	f := storage.DLQFilter{Source: req.Source, Status: storage.DLQStatus(req.Status)}
	if !f.Status.Valid() {
		return apiErr(http.StatusBadRequest, fmt.Sprintf("unknown status %q", req.Status))
	}
	if req.Since != "" {
		if f.Since, err = parseSince(req.Since, time.Now()); err != nil {
			return apiErr(http.StatusBadRequest, err.Error())
		}
	}
	limit := req.Limit
	if limit == 0 {
		limit = 100
	}
	if limit < 1 || limit > storage.DLQMaxLimit {
		return apiErr(http.StatusBadRequest, fmt.Sprintf("limit must be between 1 and %d", storage.DLQMaxLimit))
	}
	rd, err := app.RedriveDead(r.Context(), f, limit, req.DryRun)
	if err != nil {
		return storeErr(err)
	}
	res := bulkRetryResult{DryRun: req.DryRun, Matched: rd.Matched, Retried: rd.Retried, SkippedDelivered: rd.SkippedDelivered}
	for id, err := range rd.Failed {
		if res.Failed == nil {
			res.Failed = map[string]string{}
		}
		res.Failed[id] = storeErr(err).Error()
	}
	if !req.DryRun && len(rd.Retried) > 0 {
		res.Spread = rd.Spread.Round(time.Millisecond).String()
	}
	return writeJSON(w, http.StatusOK, res)
}

// Interface guards
var _ caddy.AdminRouter = (*AdminAPI)(nil)
