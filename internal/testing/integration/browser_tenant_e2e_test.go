package integration

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hookline/hookline/internal/testing/browser"
)

// TestTenantsInDashboard: the dashboard's event browser shows each
// event's tenant and filters by it, the DLQ table too, and "Erase
// tenant…" erases the Source and Tenant filters' account once the
// operator typed the tenant (a mistyped one erases nothing), following
// its progress to the end.
func TestTenantsInDashboard(t *testing.T) {
	up := newUpstream(t)
	up.setRespond(func(n int, w http.ResponseWriter) {
		up.mu.Lock()
		fail := strings.Contains(string(up.reqs[n-1].Body), `"fail"`)
		up.mu.Unlock()
		if fail {
			w.WriteHeader(http.StatusUnprocessableEntity)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	startCaddy(t, up, "", dashboardSite+shopIngress(up, ""))
	const gone, kept = "gone.myshopify.com", "kept.myshopify.com"
	for i, ev := range []struct{ id, shop, body string }{
		{"t-1", gone, `{"n":1}`}, {"t-2", gone, `{"n":2,"fail":1}`}, {"t-3", kept, `{"n":3}`}, {"t-4", kept, `{"n":4,"fail":1}`},
		{"t-5", kept, `{"n":5}`}, // kept's third: counted apart in the stats by tenant from now on
	} {
		h := map[string]string{
			"X-Shopify-Hmac-Sha256": base64.StdEncoding.EncodeToString(mac(sha256.New, shopifySecret, ev.body)),
			"X-Shopify-Webhook-Id":  ev.id, "X-Shopify-Topic": "orders/create", "X-Shopify-Shop-Domain": ev.shop,
		}
		if resp, m := post(t, "/hooks/shop", []byte(ev.body), h); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("event %d: %d %v", i, resp.StatusCode, m)
		}
	}
	dlqEntryOf(t, "t-2")
	dlqEntryOf(t, "t-4")
	waitFor(t, func() bool {
		_, page := admin(t, "GET", "/webhooks/events?status=queued", "")
		items, _ := page["items"].([]any)
		return len(items) == 0
	})
	waitFor(t, func() bool { // the stats by tenant flushed
		_, s := admin(t, "GET", "/webhooks/stats", "")
		src, _ := s["sources"].(map[string]any)["shop"].(map[string]any)
		tenants, _ := src["tenants"].([]any)
		return len(tenants) == 2
	})

	ctx, report := browser.Page(t)
	within := func(d time.Duration) context.Context {
		c, cancel := context.WithTimeout(ctx, d)
		t.Cleanup(cancel)
		return c
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("http://localhost:9080/dash/"),
		chromedp.WaitVisible(chromedp.CSS(`#evs-rows tr[data-event="t-4"]`))); err != nil {
		t.Fatalf("opening the page: %v", err)
	}
	// the tenant column: cells are received, source, event id, type, tenant
	for _, row := range eventRows(t, ctx) {
		cells := strings.Split(row, "|")
		want := map[string]string{"t-1": gone, "t-2": gone, "t-3": kept, "t-4": kept, "t-5": kept}[cells[0]]
		if len(cells) < 6 || cells[5] != want {
			t.Errorf("row %q: tenant cell, want %q", row, want)
		}
	}
	listed := func(js, what string, want ...string) {
		t.Helper()
		slices.Sort(want)
		var got []string
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			var err error
			if got, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](js)); err != nil {
				t.Fatal(err)
			}
			slices.Sort(got)
			if slices.Equal(got, want) {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Errorf("%s: %q, want %q", what, got, want)
	}
	// the busiest tenants: kept from its third event on, the rest (other)
	listed(`Array.from(document.querySelectorAll("#tenant-stats-rows tr")).map(r => Array.from(r.cells).slice(0, 3).map(c => c.textContent).join("|"))`,
		"busiest tenants table", "shop|"+kept+"|1", "shop|(other)|4")
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("evs-tenant").value = "`+gone+`"; `+
		`document.getElementById("evs-search").click(); true`)); err != nil {
		t.Fatal(err)
	}
	listed(`Array.from(document.querySelectorAll("#evs-rows tr")).map(r => r.dataset.event)`, "events of "+gone, "t-1", "t-2")
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("f-tenant").value = "`+kept+`"; `+
		`document.getElementById("apply-filters").click(); true`)); err != nil {
		t.Fatal(err)
	}
	listed(`Array.from(document.querySelectorAll("#dlq-rows tr")).map(r => r.dataset.eventId + "|" + r.cells[5].textContent)`,
		"DLQ of "+kept, "t-4|"+kept)

	// pause a tenant from the form (a hold), see it listed, resume it
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("pause-source").value = "shop"; `+
		`document.getElementById("pause-tenant").value = "`+kept+`"; document.getElementById("pause-reason").value = "from the page"; `+
		`document.getElementById("pause-accept").checked = true; document.getElementById("pause-btn").click(); true`)); err != nil {
		t.Fatal(err)
	}
	listed(`Array.from(document.querySelectorAll("#pauses-rows tr")).map(r => Array.from(r.cells).slice(0, 5).map(c => c.textContent).join("|"))`,
		"pauses table", "shop|all|"+kept+"|hold (accepting)|from the page")
	if _, st := admin(t, "GET", "/webhooks/stats", ""); !strings.Contains(fmt.Sprint(st["pauses"]), "tenant:"+kept) || st["paused_sources"] != nil {
		t.Errorf("stats after the page's tenant pause: pauses %v, paused sources %v", st["pauses"], st["paused_sources"])
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("resume-btn").click(); true`)); err != nil {
		t.Fatal(err)
	}
	listed(`Array.from(document.querySelectorAll("#pauses-rows tr")).map(r => r.dataset.tenant)`, "pauses table after the resume")
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("pause-tenant").value = ""; true`)); err != nil {
		t.Fatal(err)
	}

	// a mistyped confirmation erases nothing
	erase := func(typed string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.prompt = () => "`+typed+`"; `+
			`document.getElementById("evs-source").value = "shop"; document.getElementById("evs-erase-tenant").click(); true`)); err != nil {
			t.Fatal(err)
		}
	}
	erase("gone.myshopify")
	if _, err := chromedp.Run(within(10*time.Second), chromedp.Poll[bool](`document.getElementById("message").textContent.includes("does not match")`)); err != nil {
		t.Errorf("a mistyped tenant: %v", err)
	}
	if code, _ := admin(t, "GET", "/webhooks/tenants/shop/"+gone, ""); code != http.StatusNotFound {
		t.Fatalf("a mistyped tenant started an erasure: %d", code)
	}
	erase(gone)
	if _, err := chromedp.Run(within(15*time.Second), chromedp.Poll[bool](
		`document.getElementById("evs-tenant-progress").textContent.startsWith("Tenant `+gone+` of shop erased: 2 events erased")`)); err != nil {
		line, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("evs-tenant-progress").textContent`))
		t.Fatalf("the erasure's progress line: %v (%q)", err, line)
	}
	listed(`document.getElementById("evs-empty").hidden ? Array.from(document.querySelectorAll("#evs-rows tr")).map(r => r.dataset.event) : []`,
		"events of "+gone+" after its erasure")
	for id, want := range map[string]int{"t-1": 404, "t-2": 404, "t-3": 200, "t-4": 200, "t-5": 200} {
		if code, _ := admin(t, "GET", "/webhooks/events/shop/"+id, ""); code != want {
			t.Errorf("lookup of %s after the erasure: %d, want %d", id, code, want)
		}
	}
	if exceptions, _ := report(); len(exceptions) > 0 {
		t.Errorf("the page threw: %q", exceptions)
	}
}
