package operator_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/operator"
	"github.com/hookline/hookline/storage"
)

// serve sends one request to an API over app and returns the recorder.
func serve(t *testing.T, api http.Handler, method, target, body string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	w := httptest.NewRecorder()
	api.ServeHTTP(w, r)
	return w
}

func apiOver(app operator.App) *operator.Handler {
	return operator.New(func() (operator.App, error) { return app, nil })
}

// fakeWithEntries has a pending entry "p", a retried one "r" and the event
// gen/e-1.
func fakeWithEntries() *fakeApp {
	f := newFakeApp()
	f.entries["p"] = &storage.DLQEntry{ID: "p", EventID: "e-p", Source: "gen", Status: storage.DLQPending,
		Upstream: "https://user:pw@up.example/in", Headers: http.Header{"Authorization": {"Bearer s3cret"}, "X-Ok": {"1"}},
		Payload: []byte(`{"a":1}`), CreatedAt: time.Now()}
	f.entries["r"] = &storage.DLQEntry{ID: "r", EventID: "e-r", Source: "gen", Status: storage.DLQRetried, Payload: []byte{0xff, 0x00}}
	f.events["gen/e-1"] = &storage.EventInfo{ID: "i-1", EventID: "e-1", Source: "gen", Status: storage.StatusDelivered}
	return f
}

// TestErrors: every refusal is a JSON {"error": ...} with its status,
// never cached nor sniffed, never with internals.
func TestErrors(t *testing.T) {
	big := `{"reason":"` + strings.Repeat("x", operator.MaxBody) + `"}`
	for _, tc := range []struct {
		name                 string
		setup                func(*fakeApp)
		method, path, body   string
		status               int
		allow, error, noLeak string
	}{
		// routing
		{name: "unknown path", method: "GET", path: "/webhooks/nothing-here", status: 404, error: "no such webhooks route"},
		{name: "unknown deeper path", method: "POST", path: "/webhooks/nope/x", status: 404},
		{name: "bulk route, no id below", method: "GET", path: "/webhooks/dlq/retry/x", status: 404},
		{name: "wrong method, list", method: "DELETE", path: "/webhooks/dlq", status: 405, allow: "GET"},
		{name: "wrong method, stats", method: "POST", path: "/webhooks/stats", status: 405, allow: "GET", error: "method not allowed"},
		{name: "wrong method, entry", method: "PUT", path: "/webhooks/dlq/p", status: 405, allow: "GET"},
		{name: "GET on an action", method: "GET", path: "/webhooks/dlq/p/retry", status: 405, allow: "POST"},
		{name: "GET on bulk retry", method: "GET", path: "/webhooks/dlq/retry", status: 405, allow: "POST"},
		{name: "GET on pause", method: "GET", path: "/webhooks/sources/gen/pause", status: 405, allow: "POST"},
		{name: "POST on an event", method: "POST", path: "/webhooks/events/gen/e-1", status: 405, allow: "GET, DELETE"},
		{name: "DELETE on replay", method: "DELETE", path: "/webhooks/events/replay", status: 405, allow: "POST"},
		// bodies
		{name: "body too large", method: "POST", path: "/webhooks/dlq/p/discard", body: big, status: 413, error: "request body too large"},
		{name: "bulk body too large", method: "POST", path: "/webhooks/dlq/retry", body: big, status: 413},
		{name: "bad JSON", method: "POST", path: "/webhooks/dlq/p/resolve", body: `{not json`, status: 400, error: "request body must be a JSON object"},
		{name: "text not a string", method: "POST", path: "/webhooks/dlq/p/investigate", body: `{"note":5}`, status: 400, error: "note must be a string"},
		{name: "bulk unknown field", method: "POST", path: "/webhooks/dlq/retry", body: `{"unknown":1}`, status: 400},
		{name: "bulk not an object", method: "POST", path: "/webhooks/dlq/retry", body: `[1,2]`, status: 400},
		{name: "bulk bad status", method: "POST", path: "/webhooks/dlq/retry", body: `{"status":"bogus"}`, status: 400, error: `unknown status "bogus"`},
		{name: "bulk bad limit", method: "POST", path: "/webhooks/dlq/retry", body: `{"limit":5000}`, status: 400, error: "limit must be between 1 and 1000"},
		{name: "bulk bad since", method: "POST", path: "/webhooks/dlq/retry", body: `{"since":"yesterday"}`, status: 400},
		{name: "GET on replay", method: "GET", path: "/webhooks/events/replay", status: 405, allow: "POST"},
		{name: "replay bad JSON", method: "POST", path: "/webhooks/events/replay", body: `{"source":`, status: 400},
		{name: "replay unknown field", method: "POST", path: "/webhooks/events/replay", body: `{"sources":"gen"}`, status: 400},
		{name: "replay bad since", method: "POST", path: "/webhooks/events/replay", body: `{"since":"yesterday"}`, status: 400,
			error: `since: want an RFC 3339 time or a duration, got "yesterday"`},
		{name: "replay bad until", method: "POST", path: "/webhooks/events/replay", body: `{"until":"-1h"}`, status: 400,
			error: `until: want an RFC 3339 time or a duration, got "-1h"`},
		{name: "replay limit too big", method: "POST", path: "/webhooks/events/replay", body: `{"limit":1001}`, status: 400, error: "limit must be between 1 and 1000"},
		{name: "replay limit negative", method: "POST", path: "/webhooks/events/replay", body: `{"limit":-1}`, status: 400, error: "limit must be between 1 and 1000"},
		{name: "replay bad destination", method: "POST", path: "/webhooks/events/replay", body: `{"destination":"a~b"}`, status: 400,
			error: `invalid destination name "a~b"`},
		{name: "replay destination with a space", method: "POST", path: "/webhooks/events/replay", body: `{"destination":"crm 2"}`, status: 400},
		{name: "bulk bad destination", method: "POST", path: "/webhooks/dlq/retry", body: `{"destination":"no/slash"}`, status: 400,
			error: `invalid destination name "no/slash"`},
		{name: "bulk destination not a string", method: "POST", path: "/webhooks/dlq/retry", body: `{"destination":5}`, status: 400},
		// query and path
		{name: "list limit 0", method: "GET", path: "/webhooks/dlq?limit=0", status: 400, error: "limit must be between 1 and 1000"},
		{name: "list limit not a number", method: "GET", path: "/webhooks/dlq?limit=ten", status: 400},
		{name: "list bad status", method: "GET", path: "/webhooks/dlq?status=bogus", status: 400},
		{name: "list bad since", method: "GET", path: "/webhooks/dlq?since=-1h", status: 400},
		{name: "list bad until", method: "GET", path: "/webhooks/dlq?until=yesterday", status: 400},
		{name: "list bad destination", method: "GET", path: "/webhooks/dlq?destination=no%7Etilde", status: 400},
		{name: "list bad cursor", method: "GET", path: "/webhooks/dlq?cursor=%21%21", status: 400, error: "invalid cursor"},
		{name: "events limit 0", method: "GET", path: "/webhooks/events?limit=0", status: 400, error: "limit must be between 1 and 500"},
		{name: "events limit too large", method: "GET", path: "/webhooks/events?limit=501", status: 400, error: "limit must be between 1 and 500"},
		{name: "events bad status", method: "GET", path: "/webhooks/events?status=pending", status: 400,
			error: `unknown status "pending" (want queued, in_flight, delivered or dead)`},
		{name: "events bad since", method: "GET", path: "/webhooks/events?since=-1h", status: 400},
		{name: "events bad until", method: "GET", path: "/webhooks/events?until=yesterday", status: 400},
		{name: "events bad destination", method: "GET", path: "/webhooks/events?destination=no%7Etilde", status: 400},
		{name: "events bad id", method: "GET", path: "/webhooks/events?q=%00", status: 400, error: "invalid event id"},
		{name: "events bad cursor", method: "GET", path: "/webhooks/events?cursor=%21%21", status: 400, error: "invalid cursor"},
		{name: "events wrong method", method: "POST", path: "/webhooks/events", status: 405, allow: "GET"},
		{name: "bad source name", method: "POST", path: "/webhooks/sources/bad%20name/pause", status: 400, error: "invalid source name"},
		// the app's answers
		{name: "no such entry", method: "GET", path: "/webhooks/dlq/nope", status: 404, error: "not found"},
		{name: "retry no such entry", method: "POST", path: "/webhooks/dlq/nope/retry", status: 404, error: "not found"},
		{name: "no such event", method: "GET", path: "/webhooks/events/gen/unknown", status: 404, error: "not found"},
		{name: "erase no such event", method: "DELETE", path: "/webhooks/events/gen/unknown", status: 404, error: "not found"},
		{name: "erase another source's event", method: "DELETE", path: "/webhooks/events/other/e-1", status: 404, error: "not found"},
		{name: "erase, bad source name", method: "DELETE", path: "/webhooks/events/bad%20name/e-1", status: 400, error: "invalid source name"},
		{name: "erase, source too long", method: "DELETE", path: "/webhooks/events/" + strings.Repeat("s", 65) + "/e-1", status: 400, error: "invalid source name"},
		{name: "erase, event id with a control character", method: "DELETE", path: "/webhooks/events/gen/e%0A1", status: 400, error: "invalid event id"},
		{name: "erase, event id too long", method: "DELETE", path: "/webhooks/events/gen/" + strings.Repeat("e", 257), status: 400, error: "invalid event id"},
		{name: "erase, event id with a leading space", method: "DELETE", path: "/webhooks/events/gen/%20e-1", status: 400, error: "invalid event id"},
		{name: "retry a retried entry", method: "POST", path: "/webhooks/dlq/r/retry", status: 409, error: storage.ErrConflict.Error()},
		{name: "resolve a retried entry", method: "POST", path: "/webhooks/dlq/r/resolve", status: 409},
		// the store
		{name: "store unavailable", setup: func(f *fakeApp) { f.unavailable = true },
			method: "GET", path: "/webhooks/stats", status: 503, error: "webhook store unavailable", noLeak: "10.0.0.7"},
		{name: "store unavailable before the body is read", setup: func(f *fakeApp) { f.unavailable = true },
			method: "POST", path: "/webhooks/dlq/retry", body: `{"unknown":1}`, status: 503},
		{name: "store unavailable on replay", setup: func(f *fakeApp) { f.unavailable = true },
			method: "POST", path: "/webhooks/events/replay", body: `{"dry_run":true}`, status: 503, error: "webhook store unavailable", noLeak: "10.0.0.7"},
		{name: "store fails a replay", setup: func(f *fakeApp) { f.fail = errors.New("redis: 10.0.0.7: i/o timeout") },
			method: "POST", path: "/webhooks/events/replay", status: 503, noLeak: "10.0.0.7"},
		{name: "store unavailable before the text is read", setup: func(f *fakeApp) { f.unavailable = true },
			method: "POST", path: "/webhooks/dlq/p/resolve", body: `{not json`, status: 503},
		{name: "store unavailable on pause", setup: func(f *fakeApp) { f.unavailable = true },
			method: "POST", path: "/webhooks/sources/gen/pause", status: 503, noLeak: "connection refused"},
		{name: "store fails", setup: func(f *fakeApp) { f.fail = errors.New("bolt: /var/lib/secret/events.db: i/o error") },
			method: "GET", path: "/webhooks/dlq", status: 503, error: "webhook store unavailable", noLeak: "/var/lib"},
		{name: "store fails a retry", setup: func(f *fakeApp) { f.fail = errors.New("bolt: /var/lib/secret/events.db: i/o error") },
			method: "POST", path: "/webhooks/dlq/p/retry", status: 503, noLeak: "/var/lib"},
		{name: "store unavailable on erase", setup: func(f *fakeApp) { f.unavailable = true },
			method: "DELETE", path: "/webhooks/events/gen/e-1", status: 503, error: "webhook store unavailable", noLeak: "10.0.0.7"},
		{name: "store unavailable before the names are checked", setup: func(f *fakeApp) { f.unavailable = true },
			method: "DELETE", path: "/webhooks/events/bad%20name/e-1", status: 503},
		{name: "store fails an erase", setup: func(f *fakeApp) { f.fail = errors.New("redis: 10.0.0.7:6379: i/o timeout") },
			method: "DELETE", path: "/webhooks/events/gen/e-1", status: 503, noLeak: "10.0.0.7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fakeWithEntries()
			if tc.setup != nil {
				tc.setup(f)
			}
			w := serve(t, apiOver(f), tc.method, tc.path, tc.body)
			checkError(t, w, tc.status, tc.error)
			if got := w.Header().Get("Allow"); got != tc.allow {
				t.Errorf("Allow %q, want %q", got, tc.allow)
			}
			if tc.noLeak != "" && strings.Contains(w.Body.String(), tc.noLeak) {
				t.Errorf("the answer leaks %q: %s", tc.noLeak, w.Body)
			}
		})
	}
}

// checkError asserts an error answer with status (and message, if given).
func checkError(t *testing.T, w *httptest.ResponseRecorder, status int, msg string) {
	t.Helper()
	if w.Code != status {
		t.Fatalf("status %d, want %d: %s", w.Code, status, w.Body)
	}
	checkHeaders(t, w)
	var e operator.ErrorAnswer
	dec := json.NewDecoder(w.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil || e.Error == "" {
		t.Fatalf("error body %q: %v", w.Body, err)
	}
	if msg != "" && e.Error != msg {
		t.Errorf("error %q, want %q", e.Error, msg)
	}
}

func checkHeaders(t *testing.T, w *httptest.ResponseRecorder) {
	t.Helper()
	h := w.Header()
	if h.Get("Content-Type") != "application/json" || h.Get("Cache-Control") != "no-store" || h.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("headers %v", h)
	}
}

// TestAppLookup: no running app is a 404 that says so; a failed lookup a
// 500 without its cause.
func TestAppLookup(t *testing.T) {
	none := operator.New(func() (operator.App, error) { return nil, operator.ErrNotRunning })
	broken := operator.New(func() (operator.App, error) { return nil, errors.New("unexpected app type *secret.Thing") })
	for _, p := range []struct{ method, path string }{
		{"GET", "/webhooks/stats"}, {"GET", "/webhooks/dlq"}, {"POST", "/webhooks/dlq/x/retry"},
		{"POST", "/webhooks/sources/gen/pause"}, {"GET", "/webhooks/events/gen/x"}, {"DELETE", "/webhooks/events/gen/x"},
	} {
		checkError(t, serve(t, none, p.method, p.path, ""), 404, operator.ErrNotRunning.Error())
		checkError(t, serve(t, broken, p.method, p.path, ""), 500, "internal error")
	}
	// routing answers need no app
	checkError(t, serve(t, none, "GET", "/webhooks/nothing-here", ""), 404, "no such webhooks route")
	checkError(t, serve(t, none, "GET", "/webhooks/dlq/retry", ""), 405, "method not allowed")
}

// TestBodyLimitOfAMountingHandler: a limit set by whoever mounts the API
// (http.MaxBytesReader) is answered 413 too.
func TestBodyLimitOfAMountingHandler(t *testing.T) {
	api := apiOver(fakeWithEntries())
	r := httptest.NewRequest("POST", "/webhooks/dlq/p/discard", strings.NewReader(`{"reason":"`+strings.Repeat("x", 100)+`"}`))
	w := httptest.NewRecorder()
	r.Body = http.MaxBytesReader(w, r.Body, 10)
	r.ContentLength = -1
	api.ServeHTTP(w, r)
	checkError(t, w, 413, "request body too large")
}

func TestPatterns(t *testing.T) {
	got := apiOver(newFakeApp()).Patterns()
	if !slices.Contains(got, "/webhooks/") || !slices.Contains(got, "GET /webhooks/dlq/{id}") ||
		!slices.Contains(got, "POST /webhooks/events/replay") ||
		!slices.Contains(got, "POST /webhooks/sources/{source}/destinations/{name}/pause") ||
		!slices.Contains(got, "DELETE /webhooks/events/{source}/{event_id}") ||
		!slices.Contains(got, "GET /webhooks/stats/series") || !slices.Contains(got, "GET /webhooks/events") || !slices.Contains(got, "POST /webhooks/rekey") || !slices.Contains(got, "GET /webhooks/rekey") ||
		!slices.Contains(got, "POST /webhooks/tenants/{source}/{tenant}/pause") || !slices.Contains(got, "POST /webhooks/tenants/{source}/{tenant}/resume") || len(got) != 25 {
		t.Fatalf("patterns %q", got)
	}
}

// decode checks a 200 answer and decodes it into v.
func decode(t *testing.T, w *httptest.ResponseRecorder, v any) {
	t.Helper()
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	checkHeaders(t, w)
	if err := json.Unmarshal(w.Body.Bytes(), v); err != nil {
		t.Fatalf("answer %q: %v", w.Body, err)
	}
}

func TestDLQRoutes(t *testing.T) {
	f := fakeWithEntries()
	api := apiOver(f)

	// list: filters passed on, credentials redacted, the app's entries untouched
	var page storage.DLQPage
	decode(t, serve(t, api, "GET", "/webhooks/dlq?source=gen&status=pending&since=1h&limit=7&cursor=next", ""), &page)
	if len(page.Entries) != 1 || page.Entries[0].ID != "p" {
		t.Fatalf("page %+v", page)
	}
	if e := page.Entries[0]; e.Upstream != "https://[redacted]@up.example/in" || e.Headers.Get("Authorization") != operator.Redacted || e.Headers.Get("X-Ok") != "1" {
		t.Errorf("listed entry not redacted: %+v", e)
	}
	if f.entries["p"].Headers.Get("Authorization") != "Bearer s3cret" {
		t.Errorf("the app's entry was modified")
	}
	if fl := f.filter; fl.Source != "gen" || fl.Status != storage.DLQPending || fl.Limit != 7 || fl.Cursor != "next" ||
		time.Since(fl.Since) < 59*time.Minute || time.Since(fl.Since) > 61*time.Minute {
		t.Errorf("filter %+v", fl)
	}
	serve(t, api, "GET", "/webhooks/dlq?destination=billing&type=invoice.paid&until=2026-11-01T00:00:00Z", "")
	if fl := f.filter; fl.Destination != "billing" || fl.Type != "invoice.paid" || !fl.Until.Equal(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("destination, type and until not passed on: %+v", fl)
	}

	// inspect: text and binary payloads
	var v operator.EntryView
	decode(t, serve(t, api, "GET", "/webhooks/dlq/p", ""), &v)
	if v.ID != "p" || v.Payload != `{"a":1}` || v.PayloadEncoding != "text" || v.Headers.Get("Authorization") != operator.Redacted {
		t.Errorf("entry %+v", v)
	}
	decode(t, serve(t, api, "GET", "/webhooks/dlq/r", ""), &v)
	if v.Payload != "/wA=" || v.PayloadEncoding != "base64" {
		t.Errorf("binary entry %+v", v)
	}

	// status changes, each with its own body field
	for _, tc := range []struct{ action, body, status, text string }{
		{"investigate", `{"note":"looking"}`, "investigating", "looking"},
		{"resolve", `{"resolution":"fixed","reason":5}`, "resolved", "fixed"},
		{"discard", ``, "discarded", ""},
	} {
		var a operator.StatusAnswer
		decode(t, serve(t, api, "POST", "/webhooks/dlq/p/"+tc.action, tc.body), &a)
		if a.ID != "p" || string(a.Status) != tc.status || f.text != tc.text || string(f.entries["p"].Status) != tc.status {
			t.Errorf("%s: answer %+v, text %q, entry %s", tc.action, a, f.text, f.entries["p"].Status)
		}
	}
	f.entries["p"].Status = storage.DLQPending
	var a operator.StatusAnswer
	decode(t, serve(t, api, "POST", "/webhooks/dlq/p/retry", ""), &a)
	if a != (operator.StatusAnswer{ID: "p", Status: storage.DLQRetried}) {
		t.Errorf("retry: %+v", a)
	}
}

// TestListEvents: the event browser's filters are passed on, its page
// answered as the app gives it.
func TestListEvents(t *testing.T) {
	f := fakeWithEntries()
	f.events["gen/e-2"] = &storage.EventInfo{ID: "i-2", EventID: "e-2", Source: "gen", EventType: "invoice.paid", Status: storage.StatusDead, ReceivedAt: time.Now(),
		Deliveries: []storage.DeliveryInfo{{Destination: "default", ID: "i-2", Status: storage.StatusDelivered}, {Destination: "billing", ID: "i-2~billing", Status: storage.StatusDead}}}
	api := apiOver(f)
	var page storage.EventPage
	decode(t, serve(t, api, "GET", "/webhooks/events?source=gen&destination=billing&type=invoice.paid&status=dead&since=1h&until=2030-01-01T00:00:00Z&q=e-&limit=7", ""), &page)
	if len(page.Events) != 1 || page.Events[0].ID != "i-2" || len(page.Events[0].Deliveries) != 2 || page.NextCursor != "next" {
		t.Fatalf("page %+v", page)
	}
	if fl := f.eventFilter; fl.Source != "gen" || fl.Destination != "billing" || fl.Type != "invoice.paid" || fl.Status != storage.StatusDead ||
		fl.ID != "e-" || fl.Limit != 7 || time.Since(fl.Since) < 59*time.Minute || time.Since(fl.Since) > 61*time.Minute ||
		!fl.Until.Equal(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("filter %+v", fl)
	}
	var next storage.EventPage
	decode(t, serve(t, api, "GET", "/webhooks/events?cursor=next", ""), &next)
	if len(next.Events) != 2 || next.NextCursor != "" || f.eventFilter.Cursor != "next" {
		t.Errorf("second page %+v (filter %+v)", next, f.eventFilter)
	}
}

func TestBulkRetry(t *testing.T) {
	f := fakeWithEntries()
	api := apiOver(f)
	f.redrive = operator.Redrive{Matched: 4, Retried: []string{"a", "b"}, SkippedDelivered: []string{"c"},
		Failed: map[string]error{"d": storage.ErrConflict, "e": errors.New("redis: /secret")}, Spread: 1234567 * time.Microsecond}
	var res operator.BulkRetryAnswer
	decode(t, serve(t, api, "POST", "/webhooks/dlq/retry", `{"source":"gen","since":"24h"}`), &res)
	if f.filter.Source != "gen" || f.filter.Status != storage.DLQPending || f.limit != 100 || f.dryRun || f.filter.Since.IsZero() {
		t.Errorf("defaults: filter %+v limit %d dry %v", f.filter, f.limit, f.dryRun)
	}
	want := operator.BulkRetryAnswer{Matched: 4, Retried: []string{"a", "b"}, SkippedDelivered: []string{"c"},
		Failed: map[string]string{"d": storage.ErrConflict.Error(), "e": "webhook store unavailable"}, Spread: "1.235s"}
	if b, _ := json.Marshal(res); string(b) != string(mustJSON(t, want)) {
		t.Errorf("answer %s, want %s", b, mustJSON(t, want))
	}
	// dry: no spread; no body at all: the defaults
	f.redrive.Failed = nil
	res = operator.BulkRetryAnswer{}
	decode(t, serve(t, api, "POST", "/webhooks/dlq/retry", `{"dry_run":true,"limit":3,"status":"investigating"}`), &res)
	if !res.DryRun || res.Spread != "" || f.limit != 3 || !f.dryRun || f.filter.Status != storage.DLQInvestigating {
		t.Errorf("dry run: %+v, limit %d", res, f.limit)
	}
	decode(t, serve(t, api, "POST", "/webhooks/dlq/retry", ""), &res)
	if f.filter != (storage.DLQFilter{Status: storage.DLQPending, Limit: 100}) || f.limit != 100 {
		t.Errorf("empty body: filter %+v limit %d", f.filter, f.limit)
	}
	// a page that stopped early says where to go on, and a cursor is passed
	f.redrive.NextCursor = "c1"
	res = operator.BulkRetryAnswer{}
	decode(t, serve(t, api, "POST", "/webhooks/dlq/retry", `{"cursor":"c0","dry_run":true}`), &res)
	if f.filter.Cursor != "c0" || res.NextCursor != "c1" {
		t.Errorf("cursor: filter %+v, answer %+v", f.filter, res)
	}
}

// TestBulkRetryByDestination: the destination of a bulk retry is the
// app's filter as given ("" every destination, "default" forward_to's).
func TestBulkRetryByDestination(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{}`, ""},
		{`{"destination":""}`, ""},
		{`{"destination":"default"}`, "default"},
		{`{"destination":"billing","source":"gen","type":"invoice.paid"}`, "billing"},
		{`{"destination":"crm.eu-1_b"}`, "crm.eu-1_b"},
	} {
		f := fakeWithEntries()
		var res operator.BulkRetryAnswer
		decode(t, serve(t, apiOver(f), "POST", "/webhooks/dlq/retry", tc.body), &res)
		if f.filter.Destination != tc.want || f.filter.Status != storage.DLQPending {
			t.Errorf("%s: filter %+v, want destination %q", tc.body, f.filter, tc.want)
		}
	}
}

func TestReplay(t *testing.T) {
	f := fakeWithEntries()
	api := apiOver(f)
	a := operator.ReplayedEvent{ID: "i-1", EventID: "e-1", Source: "gen", Type: "charge.succeeded"}
	b := operator.ReplayedEvent{ID: "i-2", EventID: "e-2", Source: "gen"}
	f.replay = operator.Replay{Matched: 3, Replayed: []operator.ReplayedEvent{a, b},
		Failed: map[string]error{"i-3": storage.ErrConflict}, Spread: 1500 * time.Millisecond}

	// dry run: names the events, no spread; the filter as asked
	var res operator.ReplayAnswer
	before := time.Now()
	decode(t, serve(t, api, "POST", "/webhooks/events/replay",
		`{"source":"gen","destination":"default","type":"charge.succeeded","id":"i-1","since":"24h","until":"2026-01-02T03:04:05Z","limit":7,"dry_run":true}`), &res)
	until, _ := time.Parse(time.RFC3339, "2026-01-02T03:04:05Z")
	if flt := f.replayFilter; flt.Source != "gen" || flt.Destination != "default" || flt.Type != "charge.succeeded" || flt.ID != "i-1" || flt.Limit != 7 || !flt.Until.Equal(until) ||
		flt.Since.Before(before.Add(-24*time.Hour)) || flt.Since.After(time.Now().Add(-24*time.Hour)) || !f.dryRun {
		t.Errorf("dry run: filter %+v dry %v", flt, f.dryRun)
	}
	want := operator.ReplayAnswer{DryRun: true, Matched: 3, Replayed: []operator.ReplayedEvent{a, b},
		Failed: map[string]string{"i-3": storage.ErrConflict.Error()}}
	if got := mustJSON(t, res); string(got) != string(mustJSON(t, want)) {
		t.Errorf("dry answer %s, want %s", got, mustJSON(t, want))
	}

	// a real run: the spread; no body: the defaults (limit 0 is the store's default)
	res = operator.ReplayAnswer{}
	decode(t, serve(t, api, "POST", "/webhooks/events/replay", ""), &res)
	if f.replayFilter != (storage.ReplayFilter{}) || f.dryRun || res.Spread != "1.5s" || res.DryRun {
		t.Errorf("empty body: filter %+v dry %v answer %+v", f.replayFilter, f.dryRun, res)
	}
	// a page that stopped early says where to go on, and a cursor is passed
	f.replay.NextCursor = "c1"
	res = operator.ReplayAnswer{}
	decode(t, serve(t, api, "POST", "/webhooks/events/replay", `{"cursor":"c0"}`), &res)
	if f.replayFilter.Cursor != "c0" || res.NextCursor != "c1" {
		t.Errorf("cursor: filter %+v, answer %+v", f.replayFilter, res)
	}
	f.replay.NextCursor = ""
	// any destination's deliveries: the app's filter as given
	for _, dest := range []string{"default", "billing", "crm.eu-1_b"} {
		decode(t, serve(t, api, "POST", "/webhooks/events/replay", `{"destination":"`+dest+`","dry_run":true}`), &res)
		if f.replayFilter.Destination != dest {
			t.Errorf("destination %q: filter %+v", dest, f.replayFilter)
		}
	}
	// nothing matched: an empty list, not null
	f.replay = operator.Replay{}
	w := serve(t, api, "POST", "/webhooks/events/replay", `{"source":"none"}`)
	if !strings.Contains(w.Body.String(), `"replayed":[]`) || strings.Contains(w.Body.String(), "spread") {
		t.Errorf("nothing matched: %s", w.Body)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPauseAndEvents(t *testing.T) {
	f := fakeWithEntries()
	api := apiOver(f)
	var p operator.PauseAnswer
	decode(t, serve(t, api, "POST", "/webhooks/sources/gen/pause", ""), &p)
	if _, paused := f.paused["gen"]; !p.Paused || p.Source != "gen" || p.Pause == nil || p.Pause.Mode != "refuse" || !paused {
		t.Errorf("pause: %+v", p)
	}
	// changed without resuming: a hold for 30m with a reason
	decode(t, serve(t, api, "POST", "/webhooks/sources/gen/pause", `{"reason":"deploy","for":"30m","accept":true}`), &p)
	if got := f.paused["gen"]; !got.Accept || got.Reason != "deploy" || got.Until.Sub(got.Since) != 30*time.Minute ||
		p.Pause.Mode != "hold" || p.Pause.Until != got.Until {
		t.Errorf("changed pause: %+v, stored %+v", p.Pause, got)
	}
	for _, body := range []string{`{"for":"soon"}`, `{"for":"-1m"}`, `{"accept":true,"extra":1}`} {
		if w := serve(t, api, "POST", "/webhooks/sources/gen/pause", body); w.Code != 400 {
			t.Errorf("pause %s: %d %s, want 400", body, w.Code, w.Body)
		}
	}
	decode(t, serve(t, api, "POST", "/webhooks/sources/gen/destinations/crm/pause", `{"reason":"crm down"}`), &p)
	if got, ok := f.paused["gen/crm"]; !ok || p.Destination != "crm" || p.Pause.Mode != "hold" || got.Reason != "crm down" {
		t.Errorf("destination pause: %+v, stored %+v", p, got)
	}
	if w := serve(t, api, "POST", "/webhooks/sources/gen/destinations/missing/pause", ""); w.Code != 404 {
		t.Errorf("pausing an unknown destination: %d %s, want 404", w.Code, w.Body)
	}
	decode(t, serve(t, api, "POST", "/webhooks/sources/gen/destinations/crm/resume", ""), &p)
	if _, ok := f.paused["gen/crm"]; ok || p.Paused || p.Resumed == nil || p.Resumed.Reason != "crm down" {
		t.Errorf("destination resume: %+v", p)
	}
	decode(t, serve(t, api, "POST", "/webhooks/sources/gen/resume", ""), &p)
	if _, paused := f.paused["gen"]; p.Paused || p.Source != "gen" || p.Resumed == nil || paused {
		t.Errorf("resume: %+v", p)
	}
	var again operator.PauseAnswer
	decode(t, serve(t, api, "POST", "/webhooks/sources/gen/resume", ""), &again)
	if p = again; p.Paused || p.Resumed != nil {
		t.Errorf("resuming what is not paused: %+v", p)
	}
	// a tenant's pause
	decode(t, serve(t, api, "POST", "/webhooks/tenants/gen/shop-1.myshopify.com/pause", `{"accept":true,"reason":"abuse","for":"1h"}`), &p)
	if got, ok := f.paused["gen#shop-1.myshopify.com"]; !ok || !p.Paused || p.Tenant != "shop-1.myshopify.com" || p.Pause.Mode != "hold" ||
		p.Pause.Tenant != p.Tenant || got.Reason != "abuse" || got.Destination != "" {
		t.Errorf("tenant pause: %+v, stored %+v", p, got)
	}
	decode(t, serve(t, api, "POST", "/webhooks/tenants/gen/shop-1.myshopify.com/resume", ""), &p)
	if _, ok := f.paused["gen#shop-1.myshopify.com"]; ok || p.Paused || p.Resumed == nil || p.Resumed.Tenant != "shop-1.myshopify.com" {
		t.Errorf("tenant resume: %+v", p)
	}
	var info storage.EventInfo
	decode(t, serve(t, api, "GET", "/webhooks/events/gen/e-1", ""), &info)
	if info.ID != "i-1" || info.Status != storage.StatusDelivered {
		t.Errorf("event %+v", info)
	}
}

func TestStats(t *testing.T) {
	f := newFakeApp()
	api := apiOver(f)
	// nothing counted yet: the answer as it always was, to the byte (and
	// since encryption at rest, saying it is off; since the spool, saying
	// the store answered)
	w := serve(t, api, "GET", "/webhooks/stats", "")
	empty := `{"counters":{},"received":0,"duplicates":0,"ignored":0,"rejected":0,"delivered":0,"dead":0}`
	if want := `{"paused_sources":null,"pauses":[],"queue":{"queued":0,"in_flight":0,"dead":0},"encryption":{"enabled":false,"keys":0},"sources":{},"total":{"last_hour":` +
		empty + `,"all_time":` + empty + `},"store":{"available":true}}` + "\n"; w.Body.String() != want {
		t.Errorf("empty stats\n got %s\nwant %s", w.Body, want)
	}

	// the store down, the node spooling: the answer comes, saying so
	oldest := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	f.stats = operator.Stats{Unavailable: true, Spool: &operator.SpoolInfo{Events: 3, Bytes: 4096, Oldest: oldest}}
	w = serve(t, api, "GET", "/webhooks/stats", "")
	if want := `{"paused_sources":null,"pauses":[],"queue":{"queued":0,"in_flight":0,"dead":0},"encryption":{"enabled":false,"keys":0},"sources":{},"total":{"last_hour":` +
		empty + `,"all_time":` + empty + `},"store":{"available":false},"spool":{"events":3,"bytes":4096,"oldest":"2026-11-27T12:00:00Z"}}` + "\n"; w.Body.String() != want {
		t.Errorf("stats while spooling\n got %s\nwant %s", w.Body, want)
	}
	f.stats = operator.Stats{}

	f.paused["gen"] = storage.Pause{Source: "gen", Reason: "r"}
	f.paused["other/crm"] = storage.Pause{Source: "other", Destination: "crm"}
	f.paused["other#shop-a"] = storage.Pause{Source: "other", Tenant: "shop-a", Accept: true}
	f.stats = operator.Stats{Queue: storage.Counts{Queued: 2, Dead: 1},
		Lanes: map[string]storage.Counts{"gen": {Queued: 2}, "other/crm": {Queued: 3}, "other": {Queued: 1},
			storage.TenantLane("other", "shop-a"): {Queued: 4}, storage.TenantLane("other/crm", "shop-a"): {Queued: 1, InFlight: 1},
			storage.TenantLane("gen", "shop-a"): {Queued: 7}, storage.TenantLane("other", "shop-b"): {Queued: 9}, "other#3": {Queued: 5}}, Sources: map[string]operator.SourceCounts{
			"gen": {Queue: storage.Counts{Queued: 2, Dead: 1},
				Recent: map[string]int64{"accepted": 4, "duplicate": 1, "unauthorized": 1, "delivered": 3, "dead": 1, "attempts": 4,
					operator.DestinationCounter("delivered", "default"): 2, operator.DestinationCounter("delivered", "billing"): 1,
					operator.DestinationCounter("dead", "billing"): 1},
				AllTime: map[string]int64{"accepted": 10, "delivered": 10, "attempts": 12,
					operator.DestinationCounter("delivered", "default"): 7, operator.DestinationCounter("delivered", "billing"): 3}},
			"other": {Recent: nil, AllTime: map[string]int64{"accepted": 1, "invalid_json": 2}},
		}}
	var s operator.StatsAnswer
	decode(t, serve(t, api, "GET", "/webhooks/stats", ""), &s)
	if fmtJSON(s.PausedSources) != `["gen"]` || s.Queue != f.stats.Queue || len(s.Sources) != 2 {
		t.Fatalf("stats %+v", s)
	}
	byKey := map[string]operator.PauseInfo{}
	for _, p := range s.Pauses {
		byKey[storage.Pause{Source: p.Source, Destination: p.Destination, Tenant: p.Tenant}.Key()] = p
	}
	// a tenant's waiting deliveries: those in its own lanes, of its source
	if gen, crm, shop := byKey["gen"], byKey["other/crm"], byKey["other#shop-a"]; len(s.Pauses) != 3 ||
		gen.Waiting != 2+7 || gen.Mode != "refuse" || gen.Reason != "r" ||
		crm.Waiting != 3+1 || crm.Mode != "hold" ||
		shop.Tenant != "shop-a" || shop.Waiting != 4+1 || shop.Mode != "hold" {
		t.Errorf("pauses %s", fmtJSON(s.Pauses))
	}
	gen := s.Sources["gen"]
	if gen.Queue.Dead != 1 || gen.LastHour.Received != 4 || gen.LastHour.Duplicates != 1 || gen.LastHour.Rejected != 1 ||
		*gen.LastHour.SuccessRate != 0.75 || *gen.LastHour.DLQRate != 0.25 || *gen.LastHour.AvgAttempts != 1 {
		t.Errorf("gen last hour %s", fmtJSON(gen))
	}
	wantDest := map[string]operator.DestinationStats{
		"default": {LastHour: operator.DestinationCounts{Delivered: 2}, AllTime: operator.DestinationCounts{Delivered: 7}},
		"billing": {LastHour: operator.DestinationCounts{Delivered: 1, Dead: 1}, AllTime: operator.DestinationCounts{Delivered: 3}},
	}
	if fmtJSON(gen.Destinations) != fmtJSON(wantDest) || len(gen.LastHour.Counters) != 6 {
		t.Errorf("gen destinations %s, counters %v; want %s", fmtJSON(gen.Destinations), gen.LastHour.Counters, fmtJSON(wantDest))
	}
	if w := serve(t, api, "GET", "/webhooks/stats", ""); !strings.Contains(w.Body.String(),
		`"destinations":{"billing":{"all_time":{"dead":0,"delivered":3},"last_hour":{"dead":1,"delivered":1}},`) {
		t.Errorf("destinations on the wire: %s", w.Body)
	}
	if other := s.Sources["other"]; other.LastHour.Counters == nil || other.LastHour.SuccessRate != nil || other.AllTime.Rejected != 2 ||
		other.Destinations != nil || other.Types != nil {
		t.Errorf("other %s", fmtJSON(other))
	}
	if s.Total.AllTime.Received != 11 || s.Total.AllTime.Rejected != 2 || s.Total.LastHour.Delivered != 3 || *s.Total.AllTime.AvgAttempts != 1.2 {
		t.Errorf("total %s", fmtJSON(s.Total))
	}
}

func fmtJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestErase: DELETE /webhooks/events/{source}/{event_id} erases through
// the app and answers what was removed; the event is then not found, and
// a second erasure is a 404.
func TestErase(t *testing.T) {
	f := fakeWithEntries()
	f.events["gen/e-p"] = &storage.EventInfo{ID: "p", EventID: "e-p", Source: "gen", Status: storage.StatusDead,
		Deliveries: []storage.DeliveryInfo{{Destination: "default"}, {Destination: "billing"}}}
	f.dedupeUntil = time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)
	api := apiOver(f)

	w := serve(t, api, "DELETE", "/webhooks/events/gen/e-p", "")
	want := `{"erased":true,"source":"gen","event_id":"e-p","id":"p","deliveries":2,"dlq_entries":1,"dedupe_until":"2026-11-24T08:00:00Z"}` + "\n"
	if w.Code != http.StatusOK || w.Body.String() != want {
		t.Fatalf("erase: %d %s, want 200 %s", w.Code, w.Body, want)
	}
	checkHeaders(t, w)
	if !slices.Equal(f.erased, []string{"gen/e-p"}) || f.entries["p"] != nil {
		t.Errorf("the app erased %v; entry p left: %v", f.erased, f.entries["p"] != nil)
	}
	checkError(t, serve(t, api, "GET", "/webhooks/events/gen/e-p", ""), 404, "not found")
	checkError(t, serve(t, api, "DELETE", "/webhooks/events/gen/e-p", ""), 404, "not found")

	// an event with no claim kept: no dedupe_until; escaped names reach the app unescaped
	f.dedupeUntil = time.Time{}
	f.events["gen/ev 1/x"] = &storage.EventInfo{ID: "i-2", EventID: "ev 1/x", Source: "gen"}
	var a operator.EraseAnswer
	w = serve(t, api, "DELETE", "/webhooks/events/gen/ev%201%2Fx", "")
	decode(t, w, &a)
	if a != (operator.EraseAnswer{Erased: true, Source: "gen", EventID: "ev 1/x", ID: "i-2", Deliveries: 1}) || strings.Contains(w.Body.String(), "dedupe_until") {
		t.Errorf("erase: %s", w.Body)
	}
}
