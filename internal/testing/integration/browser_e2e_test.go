package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/hookline/hookline/internal/testing/browser"
	"github.com/hookline/hookline/internal/webhooks"
	"github.com/hookline/hookline/storage"
)

// screenshot saves the page in the temporary directory, named after the
// test and name, and logs where.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	shot := filepath.Join(os.TempDir(), strings.ReplaceAll(t.Name(), "/", "-")+"-"+name)
	if err := os.WriteFile(shot, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", shot)
}

// eventRows are the event browser's rows, each as its cells' texts
// joined by "|", in order, with the event id first.
func eventRows(t *testing.T, ctx context.Context) []string {
	t.Helper()
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll("#evs-rows tr")).map(r => r.dataset.event + "|" + Array.from(r.cells).map(c => c.textContent).join("|"))`))
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestEventBrowser: with known traffic (two configured sources, several
// types, delivered and dead events, and a fanned-out event with a dead
// delivery), the dashboard's event browser finds events by type, by id,
// by status and by a since/until window, shows an event's page with each
// destination's attempts, replays a delivered event from its page after a
// dry run (the upstream gets it again), bulk-replays the delivered events
// its filters select after a dry run naming exactly those (the upstream
// gets those and no other), retries a dead one from its page and erases
// one from it (gone from the listing, the DLQ and the lookup: 404); the
// DLQ table filters by type and by destination.
func TestEventBrowser(t *testing.T) {
	up := newUpstream(t)
	var failing atomic.Bool
	failing.Store(true)
	up.setRespond(func(n int, w http.ResponseWriter) {
		up.mu.Lock()
		body := up.reqs[n-1].Body
		up.mu.Unlock()
		if failing.Load() && bytes.Contains(body, []byte(`"fail":true`)) {
			w.WriteHeader(http.StatusUnprocessableEntity)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	startCaddy(t, up, "", dashboardSite)

	gen := []struct{ id, kind string }{{"gb-1", "invoice.paid"}, {"gb-2", "invoice.paid"}, {"gb-3", "charge.failed"}, {"gb-4", "customer.created"}}
	for _, ev := range gen {
		fail := ev.kind == "charge.failed"
		body := []byte(`{"kind":"` + ev.kind + `","id":"` + ev.id + `","fail":` + map[bool]string{true: "true", false: "false"}[fail] + `}`)
		if resp, _ := post(t, "/hooks/gen", body, signedHeaders(body, ev.id)); resp.StatusCode/100 != 2 {
			t.Fatalf("posting %s: %d", ev.id, resp.StatusCode)
		}
	}
	for _, b := range []string{`{"plain":1,"fail":false}`, `{"plain":2,"fail":true}`} {
		if resp, _ := post(t, "/hooks/plain", []byte(b), nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("posting to plain: %d", resp.StatusCode)
		}
	}
	fanOut(t, up, "fan-1")
	for _, ev := range gen {
		want := map[bool]string{true: "dead", false: "delivered"}[ev.kind == "charge.failed"]
		waitFor(t, func() bool {
			_, info := admin(t, "GET", "/webhooks/events/gen/"+ev.id, "")
			return info["status"] == want
		})
	}
	dlqEntryOf(t, "fan-1")
	waitFor(t, func() bool { // the plain events and fan-1's good delivery are done too
		_, page := admin(t, "GET", "/webhooks/events?status=queued", "")
		items, _ := page["items"].([]any)
		return len(items) == 0
	})

	ctx, report := browser.Page(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate("http://localhost:9080/dash/"),
		chromedp.WaitVisible(chromedp.CSS(`#evs-rows tr[data-event="gb-1"]`)),
	); err != nil {
		t.Fatalf("opening the page: %v", err)
	}
	if rows := eventRows(t, ctx); len(rows) != 7 {
		t.Fatalf("the browser lists %d events, want 7 (4 gen, 2 plain, 1 fan): %q", len(rows), rows)
	}

	// by type: the one charge.failed event, dead
	search := func(fields map[string]string, want ...string) []string {
		t.Helper()
		values, _ := json.Marshal(fields)
		js := `(v => { for (const id of ["evs-q", "evs-type", "evs-source", "evs-destination", "evs-status", "evs-since", "evs-until"]) ` +
			`document.getElementById(id).value = v[id] || ""; document.getElementById("evs-search").click(); return true; })(` + string(values) + `)`
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js)); err != nil {
			t.Fatalf("searching %v: %v", fields, err)
		}
		var rows []string
		deadline := time.Now().Add(10 * time.Second)
		for {
			rows = eventRows(t, ctx)
			var ids []string
			for _, r := range rows {
				ids = append(ids, strings.SplitN(r, "|", 2)[0])
			}
			if strings.Join(ids, ",") == strings.Join(want, ",") {
				return rows
			}
			if time.Now().After(deadline) {
				t.Fatalf("search %v lists %q, want the events %q", fields, rows, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	rows := search(map[string]string{"evs-type": "charge.failed"}, "gb-3")
	if !strings.Contains(rows[0], "|gen|gb-3|charge.failed||dead|default: dead") { // no tenant
		t.Errorf("the charge.failed row %q", rows[0])
	}
	screenshot(t, ctx, "hookline-events-by-type.png")
	search(map[string]string{"evs-type": "invoice.paid"}, "gb-2", "gb-1") // newest first
	search(map[string]string{"evs-type": "invoice.paid", "evs-source": "plain"})
	// by id (the provider's, or a prefix), by status, by destination
	search(map[string]string{"evs-q": "gb-4"}, "gb-4")
	search(map[string]string{"evs-q": "fan-"}, "fan-1")
	search(map[string]string{"evs-status": "dead", "evs-source": "gen"}, "gb-3")
	search(map[string]string{"evs-destination": "billing"}, "fan-1")
	// by time: the window from gb-2's reception to gb-3's holds those two
	// (both ends included), not the events received before or after it;
	// since alone and until alone cut the listing at an event
	received := func(source, id string) string {
		t.Helper()
		_, info := admin(t, "GET", "/webhooks/events/"+source+"/"+id, "")
		at, _ := info["received_at"].(string)
		if at == "" {
			t.Fatalf("%s/%s: no received_at in %v", source, id, info)
		}
		return at
	}
	_, plainPage := admin(t, "GET", "/webhooks/events?source=plain", "")
	var plainIDs []string // newest first
	for _, it := range plainPage["items"].([]any) {
		plainIDs = append(plainIDs, it.(map[string]any)["event_id"].(string))
	}
	if len(plainIDs) != 2 {
		t.Fatalf("plain's events %v, want 2", plainPage)
	}
	search(map[string]string{"evs-since": received("gen", "gb-2"), "evs-until": received("gen", "gb-3")}, "gb-3", "gb-2")
	search(map[string]string{"evs-since": received("gen", "gb-4")}, "fan-1", plainIDs[0], plainIDs[1], "gb-4")
	search(map[string]string{"evs-until": received("gen", "gb-1")}, "gb-1")
	search(map[string]string{"evs-since": received("gen", "gb-2"), "evs-until": received("gen", "gb-3"), "evs-type": "charge.failed"}, "gb-3")

	// the fanned-out event's page: each destination with its attempts
	search(map[string]string{"evs-q": "fan-1"}, "fan-1")
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#evs-rows tr[data-event="fan-1"]`)),
		chromedp.WaitVisible(chromedp.ID("evp")),
		chromedp.WaitVisible(chromedp.CSS(`#evp-delivery-rows tr[data-destination="billing"]`)),
	); err != nil {
		t.Fatalf("opening fan-1's page: %v", err)
	}
	deliveries, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll("#evp-delivery-rows tr")).map(r => Array.from(r.cells).map(c => c.textContent).join("|"))`))
	if err != nil || len(deliveries) != 2 || !strings.HasPrefix(deliveries[0], "default|delivered|1|") || !strings.HasSuffix(deliveries[0], "|Replay…") ||
		!strings.HasPrefix(deliveries[1], "billing|dead|1|") || !strings.HasSuffix(deliveries[1], "|Retry") {
		t.Errorf("fan-1's deliveries %q (%v), want default delivered (replay) and billing dead (retry), one attempt each", deliveries, err)
	}
	attempts, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll("#evp-attempt-rows tr")).map(r => Array.from(r.cells).map(c => c.textContent).join("|"))`))
	if err != nil || len(attempts) != 2 || !strings.HasPrefix(attempts[0], "default|1|") || !strings.Contains(attempts[0], "|200|") ||
		!strings.HasPrefix(attempts[1], "billing|1|") || !strings.Contains(attempts[1], "|422|") || !strings.HasSuffix(attempts[1], "|upstream answered 422 Unprocessable Entity") {
		t.Errorf("fan-1's attempts %q (%v), want default 200 and billing 422", attempts, err)
	}
	for _, a := range attempts {
		if !strings.Contains(a, " ms|") && !strings.Contains(a, " µs|") && !strings.Contains(a, " s|") {
			t.Errorf("attempt %q shows no duration", a)
		}
	}
	screenshot(t, ctx, "hookline-event-page.png")

	// replay from the event's page: a dry run names the event, the
	// confirmation sends it to the upstream again
	search(map[string]string{"evs-q": "gb-1"}, "gb-1")
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#evs-rows tr[data-event="gb-1"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#evp-delivery-rows button.evp-replay`)),
		chromedp.Click(chromedp.CSS(`#evp-delivery-rows button.evp-replay`)),
		chromedp.WaitVisible(chromedp.ID("evp-replay-panel")),
	); err != nil {
		t.Fatalf("replay dry run from gb-1's page: %v", err)
	}
	_, gb1 := admin(t, "GET", "/webhooks/events/gen/gb-1", "")
	listed, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("evp-replay-list")))
	if err != nil || !strings.Contains(listed, gb1["id"].(string)) || strings.Count(listed, "→") != 1 {
		t.Fatalf("the replay dry run lists %q (%v), want gb-1 (%v) alone", listed, err, gb1["id"])
	}
	before := upstreamCount(up, `"id":"gb-1"`)
	if before != 1 {
		t.Fatalf("gb-1 reached the upstream %d times before the replay, want 1", before)
	}
	if _, info := admin(t, "GET", "/webhooks/events/gen/gb-1", ""); len(info["attempts"].([]any)) != 1 {
		t.Fatalf("a dry run changed gb-1: %v", info)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("evp-replay-confirm"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return upstreamCount(up, `"id":"gb-1"`) == 2 })
	waitFor(t, func() bool {
		_, info := admin(t, "GET", "/webhooks/events/gen/gb-1", "")
		return info["status"] == "delivered" && len(info["attempts"].([]any)) == 2
	})
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("message").textContent.includes("Replaying 1 delivery")`)); err != nil {
		t.Errorf("message after the replay: %v", err)
	}

	// bulk replay from the browser's filters: the dry run of source gen
	// names its delivered events (gb-1, gb-2, gb-4; not the dead gb-3, not
	// another source's) and sends nothing; the confirmation sends exactly
	// those again
	// within bounds a step's waits, so that a broken step fails in
	// seconds, not at the browser's deadline
	within := func(d time.Duration) context.Context {
		c, cancel := context.WithTimeout(ctx, d)
		t.Cleanup(cancel)
		return c
	}
	search(map[string]string{"evs-source": "gen"}, "gb-4", "gb-3", "gb-2", "gb-1")
	if err := chromedp.Do(within(10*time.Second),
		chromedp.Click(chromedp.ID("evs-replay-btn")),
		chromedp.WaitVisible(chromedp.ID("evs-replay-panel")),
	); err != nil {
		t.Fatalf("bulk replay dry run: %v", err)
	}
	var wantPreview []string
	for _, id := range []string{"gb-1", "gb-2", "gb-4"} {
		_, info := admin(t, "GET", "/webhooks/events/gen/"+id, "")
		wantPreview = append(wantPreview, "gen "+id+" → default ("+info["id"].(string)+")")
	}
	preview, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll("#evs-replay-list li")).map(li => li.textContent)`))
	slices.Sort(preview)
	if err != nil || !slices.Equal(preview, wantPreview) {
		t.Fatalf("the bulk replay's dry run lists %q (%v), want %q", preview, err, wantPreview)
	}
	if summary, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("evs-replay-summary"))); err != nil ||
		summary != "Matched 3 delivered events of gen: 3 would be sent again." {
		t.Errorf("the bulk replay's summary %q (%v)", summary, err)
	}
	sent := map[string]int{}
	for _, id := range []string{"gb-1", "gb-2", "gb-3", "gb-4"} {
		sent[id] = upstreamCount(up, `"id":"`+id+`"`)
	}
	if want := map[string]int{"gb-1": 2, "gb-2": 1, "gb-3": 1, "gb-4": 1}; !maps.Equal(sent, want) {
		t.Fatalf("the upstream got %v after the dry run, want %v (a dry run sends nothing)", sent, want)
	}
	up.mu.Lock()
	total := len(up.reqs)
	up.mu.Unlock()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("evs-replay-confirm"))); err != nil {
		t.Fatal(err)
	}
	for id, attempts := range map[string]int{"gb-1": 3, "gb-2": 2, "gb-4": 2} {
		waitFor(t, func() bool {
			_, info := admin(t, "GET", "/webhooks/events/gen/"+id, "")
			a, _ := info["attempts"].([]any)
			return info["status"] == "delivered" && len(a) == attempts
		})
	}
	// gb-1's page, open since its own replay, follows the bulk replay by
	// itself (live while a delivery is on its way): no Refresh pressed
	if _, err := chromedp.Run(within(10*time.Second), chromedp.Poll[bool](
		`!document.getElementById("evp").hidden && document.getElementById("evp-id").textContent === "gb-1" && `+
			`document.querySelectorAll("#evp-attempt-rows tr").length === 3 && `+
			`document.querySelector('#evp-delivery-rows tr[data-destination="default"]').cells[1].textContent === "delivered"`)); err != nil {
		t.Errorf("the open event page did not follow the bulk replay to its 3rd attempt: %v", err)
	}
	for id, n := range sent {
		if id != "gb-3" {
			n++
		}
		if got := upstreamCount(up, `"id":"`+id+`"`); got != n {
			t.Errorf("the upstream got %s %d times after the bulk replay, want %d", id, got, n)
		}
	}
	up.mu.Lock()
	if len(up.reqs) != total+3 {
		t.Errorf("the bulk replay sent %d requests, want 3", len(up.reqs)-total)
	}
	up.mu.Unlock()
	if _, err := chromedp.Run(within(10*time.Second), chromedp.Poll[bool](`document.getElementById("message").textContent.includes("Replaying 3 deliveries")`)); err != nil {
		t.Errorf("message after the bulk replay: %v", err)
	}

	// the DLQ table by type and by destination (pending entries: gb-3 at
	// default, plain's dead event at default, fan-1 at billing)
	dlqFilter := func(typ, dest string, want ...string) {
		t.Helper()
		values, _ := json.Marshal(map[string]string{"f-type": typ, "f-destination": dest})
		// the rows and the "No entries." line are cleared first: only the
		// filtered list's load fills them again
		js := `(v => { for (const id of ["f-type", "f-destination"]) document.getElementById(id).value = v[id]; ` +
			`document.getElementById("dlq-rows").replaceChildren(); document.getElementById("dlq-empty").hidden = true; ` +
			`document.getElementById("apply-filters").click(); return true; })(` + string(values) + `)`
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js)); err != nil {
			t.Fatalf("filtering the DLQ by type %q and destination %q: %v", typ, dest, err)
		}
		slices.Sort(want)
		var rows []string
		deadline := time.Now().Add(10 * time.Second)
		for {
			var err error
			rows, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](
				`document.getElementById("dlq-empty").hidden ? Array.from(document.querySelectorAll("#dlq-rows tr")).map(r => r.dataset.eventId + "|" + r.cells[2].textContent + "|" + r.cells[4].textContent) : ["(empty)"]`))
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(rows)
			if len(want) == 0 && slices.Equal(rows, []string{"(empty)"}) || len(want) > 0 && slices.Equal(rows, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the DLQ filtered by type %q and destination %q lists %q, want %q", typ, dest, rows, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	dlqFilter("charge.failed", "", "gb-3|default|charge.failed")
	dlqFilter("fan.test", "", "fan-1|billing|fan.test")
	dlqFilter("", "billing", "fan-1|billing|fan.test")
	dlqFilter("", "default", "gb-3|default|charge.failed", plainIDs[0]+"|default|")
	dlqFilter("charge.failed", "billing")
	dlqFilter("", "", "gb-3|default|charge.failed", plainIDs[0]+"|default|", "fan-1|billing|fan.test")
	screenshot(t, ctx, "hookline-dlq-filtered.png")

	// retry from the event's page: the dead delivery's DLQ entry, once
	// the upstream is fixed
	failing.Store(false)
	search(map[string]string{"evs-q": "gb-3"}, "gb-3")
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#evs-rows tr[data-event="gb-3"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#evp-delivery-rows button.evp-retry`)),
		chromedp.Click(chromedp.CSS(`#evp-delivery-rows button.evp-retry`)),
	); err != nil {
		t.Fatalf("retry from gb-3's page: %v", err)
	}
	waitFor(t, func() bool {
		_, info := admin(t, "GET", "/webhooks/events/gen/gb-3", "")
		return info["status"] == "delivered"
	})
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](
		`(r => r !== null && r.cells[1].textContent === "delivered")(document.querySelector('#evp-delivery-rows tr[data-destination="default"]'))`)); err != nil {
		_ = chromedp.Do(ctx, chromedp.Click(chromedp.ID("evp-refresh")))
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](
			`(r => r !== null && r.cells[1].textContent === "delivered")(document.querySelector('#evp-delivery-rows tr[data-destination="default"]'))`)); err != nil {
			t.Errorf("gb-3's page after the retry: %v", err)
		}
	}
	screenshot(t, ctx, "hookline-event-page-after-retry.png")

	// erasure from the event's page, once confirmed: fan-1 (delivered at
	// default, dead at billing) leaves the listing and the DLQ table, its
	// lookup answers 404 and its DLQ entry is gone
	fan1Entry := dlqEntryOf(t, "fan-1")
	search(map[string]string{"evs-q": "fan-1"}, "fan-1")
	if err := chromedp.Do(within(15*time.Second),
		chromedp.Click(chromedp.CSS(`#evs-rows tr[data-event="fan-1"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#evp-delivery-rows tr[data-destination="billing"]`)),
		chromedp.Click(chromedp.ID("evp-erase")),
		chromedp.WaitNotVisible(chromedp.ID("evp")),
		chromedp.WaitVisible(chromedp.ID("evs-empty")), // the listing, reloaded, has no fan-1
		chromedp.WaitNotPresent(chromedp.CSS(`#dlq-rows tr[data-event-id="fan-1"]`)),
	); err != nil {
		t.Fatalf("erasing fan-1 from its page: %v", err)
	}
	if _, err := chromedp.Run(within(10*time.Second), chromedp.Poll[bool](`document.getElementById("message").textContent === "Erased fan-1: 2 deliveries, 1 DLQ entries"`)); err != nil {
		msg, _ := chromedp.Run(ctx, chromedp.Text(chromedp.ID("message")))
		t.Errorf("message after the erasure %q (%v)", msg, err)
	}
	search(map[string]string{}, plainIDs[0], plainIDs[1], "gb-4", "gb-3", "gb-2", "gb-1")
	if code, info := admin(t, "GET", "/webhooks/events/fan/fan-1", ""); code != http.StatusNotFound {
		t.Errorf("fan-1's lookup after the erasure: %d %v, want 404", code, info)
	}
	if code, _ := admin(t, "GET", "/webhooks/dlq/"+fan1Entry, ""); code != http.StatusNotFound {
		t.Errorf("fan-1's DLQ entry after the erasure: %d, want 404", code)
	}

	exceptions, dialogs := report()
	if len(exceptions) > 0 {
		t.Errorf("browser errors: %q", exceptions)
	}
	if len(dialogs) != 2 || !strings.HasPrefix(dialogs[0], "confirm: Re-enqueue event gb-3 (gen) for default?") ||
		!strings.HasPrefix(dialogs[1], "confirm: Erase event fan-1 (fan) everywhere") {
		t.Errorf("dialogs %q, want the retry's confirmation, then the erasure's", dialogs)
	}
}

// upstreamCount counts the requests the upstream received whose body
// holds s.
func upstreamCount(up *upstream, s string) int {
	up.mu.Lock()
	defer up.mu.Unlock()
	n := 0
	for _, r := range up.reqs {
		if bytes.Contains(r.Body, []byte(s)) {
			n++
		}
	}
	return n
}

// fanOut stores the event eventID of source "fan" (no config: its
// deliveries go to their stored upstreams) as the ingress stores a
// fanned-out event: its default delivery to up, its billing one to a
// server answering 422.
func fanOut(t *testing.T, up *upstream, eventID string) {
	t.Helper()
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnprocessableEntity)
	}))
	t.Cleanup(bad.Close)
	v, err := caddy.ActiveContext().AppIfConfigured("webhooks")
	if err != nil {
		t.Fatal(err)
	}
	app := v.(*webhooks.App)
	st, err := app.Store()
	if err != nil {
		t.Fatal(err)
	}
	id, _ := uuid.NewV7()
	e := &storage.Event{ID: id.String(), EventID: eventID, Dedupe: true, Source: "fan", Type: "fan.test", Body: []byte(`{"fan":1}`),
		ReceivedAt: time.Now(), Upstream: up.URL + "/in/fan",
		Deliveries: []storage.Delivery{{Destination: "default", Upstream: up.URL + "/in/fan"}, {Destination: "billing", Upstream: bad.URL + "/in/billing"}}}
	if _, err := st.Enqueue(t.Context(), e, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	app.Notify()
}
