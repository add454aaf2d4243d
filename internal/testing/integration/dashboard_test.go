package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/hookline/hookline/internal/dashboard"
	"github.com/hookline/hookline/internal/testing/browser"
	"github.com/hookline/hookline/internal/webhooks"
	"github.com/hookline/hookline/storage"
)

// dashboardSite mounts the dashboard twice: stripped (handle_path) and
// unstripped (handle), as users may.
const dashboardSite = `handle_path /dash/* {
		webhook_dashboard
	}
	handle /ops* {
		webhook_dashboard
	}`

// dlqEntryOf waits for the pending DLQ entry of an event and returns its id.
func dlqEntryOf(t *testing.T, eventID string) string {
	t.Helper()
	var id string
	waitFor(t, func() bool {
		_, page := admin(t, "GET", "/webhooks/dlq?status=pending", "")
		entries, _ := page["entries"].([]any)
		for _, e := range entries {
			if m := e.(map[string]any); m["event_id"] == eventID {
				id = m["id"].(string)
				return true
			}
		}
		return false
	})
	return id
}

func pendingIDs(t *testing.T) []string {
	t.Helper()
	code, page := admin(t, "GET", "/webhooks/dlq?status=pending", "")
	if code != 200 {
		t.Fatalf("dlq list: %d %v", code, page)
	}
	var ids []string
	entries, _ := page["entries"].([]any)
	for _, e := range entries {
		ids = append(ids, e.(map[string]any)["id"].(string))
	}
	return ids
}

func TestDashboardBrowser(t *testing.T) {
	up := newUpstream(t)
	fail := up.failWith(http.StatusUnprocessableEntity, true)
	startCaddy(t, up, "", dashboardSite)
	body := []byte(`{"dash":1,"kind":"dash.test","note":"<img src=x onerror=alert(1)>"}`)
	post(t, "/hooks/gen", body, signedHeaders(body, "dash-1"))
	up.next(t, 5*time.Second)
	id := dlqEntryOf(t, "dash-1")

	ctx, report := browser.Page(t)

	row := chromedp.CSS(`tr[data-event-id="dash-1"]`)
	if err := chromedp.Do(ctx,
		chromedp.Navigate("http://localhost:9080/dash/"),
		chromedp.WaitVisible(row),
		chromedp.Click(row),
		chromedp.WaitVisible(chromedp.ID("detail")),
	); err != nil {
		t.Fatalf("opening the entry: %v", err)
	}
	for _, sel := range []string{`tr[data-event-id="dash-1"]`, `#d-fields`} { // the type, in the list and the entry
		if text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel))); err != nil || !strings.Contains(text, "dash.test") {
			t.Fatalf("%s shows %q (%v), want the type dash.test", sel, text, err)
		}
	}
	payload, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("d-payload")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(payload, `"dash": 1`) || !strings.Contains(payload, `<img src=x onerror=alert(1)>`) {
		t.Fatalf("payload shown: %q", payload)
	}
	if imgs, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("img").length`)); err != nil || imgs != 0 {
		t.Fatalf("payload was inserted as HTML: %d img elements (%v)", imgs, err)
	}

	// the operator fixes the upstream and retries from the page
	fail.Store(false)
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.ID("btn-retry")),
		chromedp.WaitNotPresent(row), // the list shows pending entries
	); err != nil {
		t.Fatalf("retrying: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("d-fields").textContent.includes("retried")`)); err != nil {
		t.Fatalf("entry status on the page after retry: %v", err)
	}
	r := up.next(t, 5*time.Second)
	if string(r.Body) != string(body) || r.Header.Get("X-Webhook-Attempt") != "2" {
		t.Fatalf("redelivery: attempt %s body %q", r.Header.Get("X-Webhook-Attempt"), r.Body)
	}
	waitFor(t, func() bool {
		_, ev := admin(t, "GET", "/webhooks/events/gen/dash-1", "")
		return ev["status"] == "delivered"
	})
	if _, full := admin(t, "GET", "/webhooks/dlq/"+id, ""); full["status"] != "retried" {
		t.Fatalf("entry after retry: %v", full)
	}
	for _, p := range pendingIDs(t) {
		if p == id {
			t.Fatalf("entry %s still pending after retry", id)
		}
	}

	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	shot := filepath.Join(os.TempDir(), "hookline-dashboard.png")
	if err := os.WriteFile(shot, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("dashboard screenshot: %s", shot)

	// bulk retry: a dry run lists what would be re-enqueued, then confirm
	fail.Store(true)
	body2 := []byte(`{"dash":2}`)
	post(t, "/hooks/gen", body2, signedHeaders(body2, "dash-2"))
	up.next(t, 5*time.Second)
	id2 := dlqEntryOf(t, "dash-2")
	row2 := chromedp.CSS(`tr[data-event-id="dash-2"]`)
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.ID("refresh")),
		chromedp.WaitVisible(row2),
		chromedp.Click(chromedp.ID("bulk-retry-btn")),
		chromedp.WaitVisible(chromedp.ID("bulk-panel")),
	); err != nil {
		t.Fatalf("bulk retry dry run: %v", err)
	}
	listed, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("bulk-list")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(listed, id2) {
		t.Fatalf("dry run lists %q, want %s", listed, id2)
	}
	if ids := pendingIDs(t); len(ids) != 1 || ids[0] != id2 {
		t.Fatalf("a dry run changed the DLQ: pending %v", ids)
	}
	fail.Store(false)
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.ID("bulk-confirm")),
		chromedp.WaitNotPresent(row2),
	); err != nil {
		t.Fatalf("bulk retry: %v", err)
	}
	waitFor(t, func() bool {
		_, ev := admin(t, "GET", "/webhooks/events/gen/dash-2", "")
		return ev["status"] == "delivered"
	})

	checkDashboardDestinations(t, ctx, up)

	exceptions, dialogs := report()
	if len(exceptions) > 0 {
		t.Errorf("browser errors: %q", exceptions)
	}
	if len(dialogs) != 2 || !strings.HasPrefix(dialogs[0], "confirm") || !strings.HasPrefix(dialogs[1], "confirm: Erase event fan-1 (fan)") {
		t.Errorf("dialogs %q, want the retry confirmation, then the erasure's", dialogs)
	}
}

// checkDashboardDestinations: with two events of two destinations each
// (fan-1 dead at billing, fan-2 dead at default), the DLQ table names each
// entry's destination and filters by it, a bulk retry sends the filter, the
// event lookup shows one row per delivery, and the stats one per
// destination. The events are stored as the ingress stores a fanned-out
// event, for a source of no config (its deliveries go to their stored
// upstreams).
func checkDashboardDestinations(t *testing.T, ctx context.Context, up *upstream) {
	t.Helper()
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnprocessableEntity)
	}))
	defer bad.Close()
	v, err := caddy.ActiveContext().AppIfConfigured("webhooks")
	if err != nil {
		t.Fatal(err)
	}
	app := v.(*webhooks.App)
	st, err := app.Store()
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []struct{ id, defaultURL, billingURL string }{
		{"fan-1", up.URL + "/in/fan", bad.URL + "/in/billing"},
		{"fan-2", bad.URL + "/in/fan", up.URL + "/in/billing"},
	} {
		id, _ := uuid.NewV7()
		e := &storage.Event{ID: id.String(), EventID: ev.id, Dedupe: true, Source: "fan", Type: "fan.test", Body: []byte(`{"fan":1}`),
			ReceivedAt: time.Now(), Upstream: ev.defaultURL,
			Deliveries: []storage.Delivery{{Destination: "default", Upstream: ev.defaultURL}, {Destination: "billing", Upstream: ev.billingURL}}}
		if _, err := st.Enqueue(t.Context(), e, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	app.Notify()
	fan1 := dlqEntryOf(t, "fan-1")
	fan2 := dlqEntryOf(t, "fan-2")
	if !strings.HasSuffix(fan1, "~billing") || strings.Contains(fan2, "~") {
		t.Fatalf("DLQ entries %s and %s: want fan-1's billing delivery and fan-2's default one", fan1, fan2)
	}
	waitFor(t, func() bool { // both good deliveries done, the counts flushed to the store
		_, s := admin(t, "GET", "/webhooks/stats", "")
		fan, _ := s["sources"].(map[string]any)["fan"].(map[string]any)
		dests, _ := fan["destinations"].(map[string]any)
		return len(dests) == 2 && fmt.Sprint(dests["billing"]) == "map[all_time:map[dead:1 delivered:1] last_hour:map[dead:1 delivered:1]]"
	})

	row1 := chromedp.CSS(`#dlq-rows tr[data-event-id="fan-1"]`)
	row2 := chromedp.CSS(`#dlq-rows tr[data-event-id="fan-2"]`)
	// the DLQ table: a destination column, and its filter
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.ID("refresh")),
		chromedp.WaitVisible(row1),
		chromedp.WaitVisible(row2),
	); err != nil {
		t.Fatalf("the fan-out entries in the DLQ table: %v", err)
	}
	for _, tc := range []struct{ event, dest string }{{"fan-1", "billing"}, {"fan-2", "default"}} {
		cell, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#dlq-rows tr[data-event-id="`+tc.event+`"] td.dest`)))
		if err != nil || cell != tc.dest {
			t.Errorf("%s's destination cell %q (%v), want %q", tc.event, cell, err, tc.dest)
		}
	}
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.ID("f-destination"), "billing"),
		chromedp.Click(chromedp.ID("apply-filters")),
		chromedp.WaitNotPresent(row2),
		chromedp.WaitVisible(row1),
		chromedp.SetValue(chromedp.ID("f-destination"), "default"),
		chromedp.Click(chromedp.ID("apply-filters")),
		chromedp.WaitNotPresent(row1),
		chromedp.WaitVisible(row2),
	); err != nil {
		t.Fatalf("filtering the DLQ by destination: %v", err)
	}

	// a bulk retry of the billing entries only: the dry run lists fan-1's
	// (not fan-2's), the retry re-sends it (and it dies again, attempt 2)
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.ID("f-destination"), "billing"),
		chromedp.Click(chromedp.ID("apply-filters")),
		chromedp.WaitNotPresent(row2),
		chromedp.Click(chromedp.ID("bulk-retry-btn")),
		chromedp.WaitVisible(chromedp.ID("bulk-panel")),
	); err != nil {
		t.Fatalf("bulk retry by destination, dry run: %v", err)
	}
	listed, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("bulk-list")))
	if err != nil || !strings.Contains(listed, fan1) || strings.Contains(listed, fan2) {
		t.Fatalf("dry run by destination lists %q (%v), want %s and not %s", listed, err, fan1, fan2)
	}
	if summary, _ := chromedp.Run(ctx, chromedp.Text(chromedp.ID("bulk-summary"))); !strings.Contains(summary, "to destination billing") {
		t.Errorf("bulk summary %q does not name the destination", summary)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("bulk-confirm"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		_, e := admin(t, "GET", "/webhooks/dlq/"+fan1, "")
		attempts, _ := e["attempts"].([]any)
		return e["status"] == "pending" && len(attempts) == 2
	})
	if _, e := admin(t, "GET", "/webhooks/dlq/"+fan2, ""); e["status"] != "pending" || len(e["attempts"].([]any)) != 1 {
		t.Errorf("fan-2's default entry was touched by a bulk retry of billing: %v", e)
	}

	// the event lookup: one row per destination
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.ID("ev-source"), "fan"),
		chromedp.SetValue(chromedp.ID("ev-id"), "fan-1"),
		chromedp.Click(chromedp.ID("ev-lookup")),
		chromedp.WaitVisible(chromedp.CSS(`#ev-delivery-rows tr[data-destination="billing"]`)),
	); err != nil {
		t.Fatalf("event lookup: %v", err)
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll("#ev-delivery-rows tr")).map(r => Array.from(r.cells).map(c => c.textContent).join("|"))`))
	if err != nil || len(rows) != 2 || !strings.HasPrefix(rows[0], "default|delivered|1|") ||
		!strings.HasPrefix(rows[1], "billing|dead|2|") || !strings.HasSuffix(rows[1], "|422: upstream answered 422 Unprocessable Entity") {
		t.Errorf("deliveries table %q (%v), want default delivered after 1 attempt and billing dead after 2 with a 422", rows, err)
	}

	// the stats: one row per destination of each source
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("refresh"))); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](
		`(r => r !== null && r.textContent === "fanbilling1212")(document.querySelector('#dest-stats-rows tr[data-source="fan"][data-destination="billing"]'))`)); err != nil {
		t.Errorf("fan's billing row in the stats: %v", err)
	}
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#dest-stats-rows tr[data-source="fan"][data-destination="default"]`)))
	if err != nil || strings.Join(strings.Fields(text), " ") != "fan default 1 1 1 1" {
		t.Errorf("fan's default row in the stats %q (%v)", text, err)
	}
	if buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
		shot := filepath.Join(os.TempDir(), "hookline-dashboard-destinations.png")
		if err := os.WriteFile(shot, buf, 0o644); err == nil {
			t.Logf("dashboard screenshot with destinations: %s", shot)
		}
	}

	// erasure from the event's page, once confirmed: the event, its
	// deliveries and its DLQ entry are gone
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.ID("ev-erase")),
		chromedp.WaitNotVisible(chromedp.ID("ev-result")),
	); err != nil {
		t.Fatalf("erase from the page: %v", err)
	}
	if msg, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("message"))); err != nil || !strings.Contains(msg, "Erased fan-1: 2 deliveries, 1 DLQ entries") {
		t.Errorf("message after the erasure %q (%v)", msg, err)
	}
	if code, _ := admin(t, "GET", "/webhooks/events/fan/fan-1", ""); code != http.StatusNotFound {
		t.Errorf("lookup after the page's erasure: %d, want 404", code)
	}
	if code, _ := admin(t, "GET", "/webhooks/dlq/"+fan1, ""); code != http.StatusNotFound {
		t.Errorf("fan-1's DLQ entry after the page's erasure: %d, want 404", code)
	}
}

func TestDashboardAPI(t *testing.T) {
	up := newUpstream(t)
	startCaddy(t, up, "", dashboardSite)
	get := func(path string) (*http.Response, string) {
		t.Helper()
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := c.Get("http://localhost:9080" + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}

	// the page, with its security headers, on both mounts
	for _, p := range []string{"/dash/", "/ops/", "/dash/index.html"} {
		resp, b := get(p)
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
			!strings.Contains(b, `src="app.js"`) {
			t.Fatalf("GET %s: %d %s %.80q", p, resp.StatusCode, resp.Header.Get("Content-Type"), b)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
			t.Errorf("GET %s: CSP %q", p, csp)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff", p)
		}
	}
	if resp, _ := get("/ops"); resp.StatusCode != http.StatusPermanentRedirect || resp.Header.Get("Location") != "/ops/" {
		t.Errorf("GET /ops: %d %q, want a redirect to /ops/", resp.StatusCode, resp.Header.Get("Location"))
	}
	for p, ct := range map[string]string{"/dash/app.js": "text/javascript", "/ops/app.css": "text/css"} {
		if resp, b := get(p); resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), ct) || len(b) < 100 {
			t.Errorf("GET %s: %d %q", p, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}

	// the API, on both mounts
	for _, p := range []string{"/dash/api/stats", "/ops/api/stats"} {
		resp, m := do(t, mustReq(t, "GET", p, "", nil))
		if resp.StatusCode != 200 || m["queue"] == nil {
			t.Errorf("GET %s: %d %v", p, resp.StatusCode, m)
		}
	}
	csrf := map[string]string{dashboard.DashboardCSRFHeader: "1"}
	big := `{"reason":"` + strings.Repeat("x", 70<<10) + `"}`
	for _, tc := range []struct {
		method, path, body string
		hdr                map[string]string
		status             int
	}{
		{"POST", "/dash/api/dlq/retry", `{"dry_run":true}`, nil, http.StatusForbidden},
		{"POST", "/dash/api/sources/gen/pause", "", nil, http.StatusForbidden},
		{"POST", "/dash/api/dlq/retry", `{"dry_run":true}`, csrf, http.StatusOK},
		{"GET", "/dash/api/nope", "", nil, http.StatusNotFound},
		{"POST", "/dash/api/nope/x", "", csrf, http.StatusNotFound},
		{"GET", "/dash/api/", "", nil, http.StatusNotFound},
		{"GET", "/dash/api/dlq/does-not-exist", "", nil, http.StatusNotFound},
		{"POST", "/dash/api/dlq/does-not-exist/retry", "", csrf, http.StatusNotFound},
		{"GET", "/dash/api/dlq?status=bogus", "", nil, http.StatusBadRequest},
		{"GET", "/dash/api/dlq/retry/x", "", nil, http.StatusNotFound},
		{"POST", "/dash/api/stats", "", csrf, http.StatusMethodNotAllowed},
		{"PUT", "/dash/api/stats", "", csrf, http.StatusMethodNotAllowed},
		{"DELETE", "/dash/api/events/gen/nope", "", nil, http.StatusForbidden},
		{"DELETE", "/dash/api/events/gen/nope", "", csrf, http.StatusNotFound},
		{"POST", "/dash/api/dlq/abc/discard", big, csrf, http.StatusRequestEntityTooLarge},
	} {
		resp, m := do(t, mustReq(t, tc.method, tc.path, tc.body, tc.hdr))
		if resp.StatusCode != tc.status || m["error"] == nil && tc.status >= 400 {
			t.Errorf("%s %s: %d %v, want %d", tc.method, tc.path, resp.StatusCode, m, tc.status)
		}
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("%s %s: Content-Type %q", tc.method, tc.path, ct)
		}
	}
	// pause and resume through the dashboard
	if resp, m := do(t, mustReq(t, "POST", "/dash/api/sources/gen/pause", "", csrf)); resp.StatusCode != 200 || m["paused"] != true {
		t.Fatalf("pause: %d %v", resp.StatusCode, m)
	}
	if _, st := admin(t, "GET", "/webhooks/stats", ""); !strings.Contains(strings.Join(toStrings(st["paused_sources"]), ","), "gen") {
		t.Fatalf("stats after pause: %v", st)
	}
	// the page's pause form: a hold with a reason and an end
	if resp, m := do(t, mustReq(t, "POST", "/dash/api/sources/gen/pause", `{"reason":"from the page","for":"1h","accept":true}`, csrf)); resp.StatusCode != 200 || m["paused"] != true {
		t.Fatalf("pause with a body: %d %v", resp.StatusCode, m)
	}
	if _, st := admin(t, "GET", "/webhooks/stats", ""); !strings.Contains(fmt.Sprint(st["pauses"]), "from the page") || !strings.Contains(fmt.Sprint(st["pauses"]), "hold") {
		t.Fatalf("stats after the page's pause: %v", st)
	}
	if resp, m := do(t, mustReq(t, "POST", "/ops/api/sources/gen/resume", "", csrf)); resp.StatusCode != 200 || m["paused"] != false {
		t.Fatalf("resume: %d %v", resp.StatusCode, m)
	}
}

func toStrings(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

func mustReq(t *testing.T, method, path, body string, hdr map[string]string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, "http://localhost:9080"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return req
}

// TestDashboardEscapedEventID: an event id holding "/" (WhatsApp's are
// base64) travels escaped ("%2F") from the page to the operator API, on
// both mounts, for the lookup and the erasure: the dashboard rebuilt the
// API path from the decoded path, so "wa/a%2Fb" was a 404.
func TestDashboardEscapedEventID(t *testing.T) {
	up := newUpstream(t)
	startCaddy(t, up, "", dashboardSite)
	const id = "wamid.HBgL//MTU1NTAx+Mj==/c/" // base64 may hold "//", and end in "/"
	body := []byte(`{"kind":"message"}`)
	if resp, m := post(t, "/hooks/gen", body, signedHeaders(body, id)); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("posting: %d %v", resp.StatusCode, m)
	}
	up.next(t, 5*time.Second)
	escaped := url.PathEscape(id)
	if !strings.Contains(escaped, "%2F") {
		t.Fatalf("the id does not need escaping: %s", escaped)
	}
	for _, mount := range []string{"/dash", "/ops"} {
		waitFor(t, func() bool {
			resp, m := do(t, mustReq(t, "GET", mount+"/api/events/gen/"+escaped, "", nil))
			return resp.StatusCode == http.StatusOK && m["event_id"] == id && m["status"] == "delivered"
		})
	}
	csrf := map[string]string{dashboard.DashboardCSRFHeader: "1"}
	if resp, m := do(t, mustReq(t, "DELETE", "/dash/api/events/gen/"+escaped, "", csrf)); resp.StatusCode != http.StatusOK {
		t.Fatalf("erasing through the dashboard: %d %v", resp.StatusCode, m)
	}
	if code, m := admin(t, "GET", "/webhooks/events/gen/"+escaped, ""); code != http.StatusNotFound {
		t.Fatalf("after the erasure, the admin API's lookup: %d %v", code, m)
	}
	// escaped dot segments reach no API route: Caddy resolves them (the
	// page, or no route of the site at all) or the dashboard refuses them
	// (a JSON 404); never a 200 JSON answer of the API
	for _, p := range []string{"/dash/api/..%2F..%2Fconfig%2F", "/dash/api/%2E%2E/stats", "/dash/api/events/..%2F..%2Fstats", "/dash/api/%2E%2E%2Fstats"} {
		resp, err := http.DefaultClient.Do(mustReq(t, "GET", p, "", nil))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Errorf("GET %s: %d %.100q, an API answer", p, resp.StatusCode, b)
		}
	}
}
