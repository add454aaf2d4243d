package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hookline/hookline/internal/testing/browser"
	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage/storagetest"
)

// TestSpoolSealedAuditedAnnounced: with Redis down and a spool, an event
// is answered 202, its resend 200 "spooled"; the spool's files hold the
// body sealed (encryption_key), never in clear; the audit trail says
// received then spooled, and the events app gets webhook_spool_started;
// the alert URL gets an alert at once, Redis still down (alerts are queued
// in the store, which is down: this one is sent directly). Once Redis is
// back the event is delivered (opened), the events app gets
// webhook_spool_stopped and the alert URL an alert that it is over.
func TestSpoolSealedAuditedAnnounced(t *testing.T) {
	t.Setenv("HOOKLINE_E2E_KEY", e2eKey)
	srv := redistest.Start(t)
	logs, auditLog, eventsLog := auditLogs(t)
	spoolDir := filepath.Join(t.TempDir(), "spool")
	storageLine := fmt.Sprintf("storage redis {\n\t\t\taddress redis://%s/0\n\t\t\tkey_prefix spooled\n\t\t\tdial_timeout 200ms\n\t\t\tspool %s\n\t\t}\n\t\tencryption_key {env.HOOKLINE_E2E_KEY}\n\t\taudit",
		srv.Addr, spoolDir)
	// Caddy's whole log, to check that the alert URL never reaches it
	allLog := filepath.Join(t.TempDir(), "all.log")
	logs += fmt.Sprintf("\n\tlog all {\n\t\toutput file %s\n\t\tlevel DEBUG\n\t\tformat json\n\t}", allLog)
	alerts := make(chan string, 10)
	var slackCalls atomic.Int64
	slack := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slackCalls.Add(1) == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable) // the first try fails: tried again
			return
		}
		var m struct{ Text string }
		_ = json.NewDecoder(r.Body).Decode(&m)
		alerts <- m.Text
	}))
	defer slack.Close()
	storageLine += "\n\t\talert " + slack.URL + "/hook-secret-path"
	up := newUpstream(t)
	startCaddyWith(t, up, logs, storageLine, "")
	nextAlert := func(want string) {
		t.Helper()
		select {
		case text := <-alerts:
			if !strings.Contains(text, want) {
				t.Fatalf("alert %q, want one saying %q", text, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no alert saying %q within 10 s", want)
		}
	}

	srv.Stop()
	const marker = "spooled-body-marker-4721"
	body := []byte(`{"kind":"order.paid","note":"` + marker + `"}`)
	if resp, m := post(t, "/hooks/gen", body, signedHeaders(body, "spool-1")); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("with Redis down: %d %v, want 202", resp.StatusCode, m)
	}
	if resp, m := post(t, "/hooks/gen", body, signedHeaders(body, "spool-1")); resp.StatusCode != http.StatusOK || m["status"] != "spooled" {
		t.Fatalf("resend with Redis down: %d %v, want 200 spooled", resp.StatusCode, m)
	}
	raw, err := storagetest.ReadFiles(spoolDir)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), marker) {
		t.Fatal("the spool's files hold the body in clear")
	}
	if !strings.Contains(string(raw), "spool-1") {
		t.Fatal("the spool's files do not hold the event at all: the test looked at the wrong files")
	}
	names := map[string]bool{}
	waitFor(t, func() bool {
		for _, l := range logLines(t, eventsLog) {
			names[fmt.Sprint(l["name"])] = true
		}
		return names["webhook_spool_started"]
	})
	nextAlert("the store is unreachable (since ")

	srv.Restart()
	got := up.next(t, 15*time.Second)
	if !strings.Contains(string(got.Body), marker) {
		t.Fatalf("delivered body %q, want the event's, opened", got.Body)
	}
	waitFor(t, func() bool {
		for _, l := range logLines(t, eventsLog) {
			names[fmt.Sprint(l["name"])] = true
		}
		return names["webhook_spool_stopped"]
	})
	nextAlert("the store answers again; the 1 event(s) spooled since")
	if raw, err := os.ReadFile(allLog); err != nil || !strings.Contains(string(raw), "alert sent") || strings.Contains(string(raw), "hook-secret-path") {
		t.Fatalf("Caddy's log (%v): want \"alert sent\" and never the alert URL's secret path:\n%s", err, raw)
	}
	var steps []string
	waitFor(t, func() bool {
		steps = steps[:0]
		for _, l := range logLines(t, auditLog) {
			if l["event_id"] == "spool-1" {
				steps = append(steps, fmt.Sprint(l["step"]))
			}
		}
		return len(steps) >= 4
	})
	if want := "[received spooled attempt delivered]"; fmt.Sprint(steps) != want {
		t.Fatalf("audit steps %v, want %s", steps, want)
	}
}

// TestDashboardSpool: with Redis down, the dashboard's health section
// shows the store unavailable and this node's spool (the event spooled),
// the queue's counts unknown, and no error; once Redis is back and the
// spool moved, a refresh shows the store available, the spool empty, and
// the per-source table again.
func TestDashboardSpool(t *testing.T) {
	srv := redistest.Start(t)
	storageLine := fmt.Sprintf("storage redis {\n\t\t\taddress redis://%s/0\n\t\t\tkey_prefix dashspool\n\t\t\tdial_timeout 200ms\n\t\t\tspool %s\n\t\t}",
		srv.Addr, filepath.Join(t.TempDir(), "spool"))
	up := newUpstream(t)
	startCaddy(t, up, storageLine, dashboardSite)

	srv.Stop()
	body := []byte(`{"kind":"order.paid"}`)
	if resp, m := post(t, "/hooks/gen", body, signedHeaders(body, "dash-spool-1")); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("with Redis down: %d %v, want 202", resp.StatusCode, m)
	}
	ctx, report := browser.Page(t)
	text := func(id string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID(id)))
		if err != nil {
			t.Fatalf("#%s: %v", id, err)
		}
		return strings.TrimSpace(s)
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate("http://localhost:9080/dash/"),
		chromedp.WaitVisible(chromedp.ID("store-health")),
	); err != nil {
		t.Fatalf("opening the dashboard with Redis down: %v", err)
	}
	if s := text("store-state"); !strings.HasPrefix(s, "unavailable") {
		t.Errorf("store state %q, want unavailable", s)
	}
	if s := text("spool-oldest"); !regexp.MustCompile(`^20\d\d-\d\d-\d\d \d\d:\d\d:\d\d UTC \(\d+ s ago\)$`).MatchString(s) {
		t.Errorf("oldest spooled %q, want its time and age", s)
	}
	if s := text("spool-events"); s != "1" {
		t.Errorf("spooled events %q, want 1", s)
	}
	if s := text("spool-bytes"); !strings.HasSuffix(s, "B") || s == "0 B" {
		t.Errorf("spool size %q, want some bytes", s)
	}
	if s := text("health-empty"); !strings.Contains(s, "did not answer") {
		t.Errorf("the per-source table says %q, want that the store did not answer", s)
	}
	if s := text("stat-queued"); s != "–" {
		t.Errorf("queued %q with the store down, want unknown (–)", s)
	}
	if cls, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("store-row").className`)); err != nil || cls != "unhealthy" {
		t.Errorf("the store's row class %q (%v), want unhealthy", cls, err)
	}
	if hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("charts-error").hidden`)); err != nil || !hidden {
		t.Errorf("the page reports an error with the store down: %q", text("charts-error"))
	}
	if hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("charts").hidden`)); err != nil || !hidden {
		t.Errorf("the charts are shown with the store down (%v): they would be stale", err)
	}
	shot(t, ctx, "hookline-dashboard-spooling.png")

	srv.Restart()
	up.next(t, 15*time.Second) // moved, then delivered
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.ID("refresh")),
		chromedp.WaitVisible(chromedp.CSS(`#health-rows tr[data-source="gen"]`)),
	); err != nil {
		t.Fatalf("refreshing once Redis is back: %v", err)
	}
	if s := text("store-state"); s != "available" {
		t.Errorf("store state %q once Redis is back, want available", s)
	}
	if s := text("spool-events"); s != "0" {
		t.Errorf("spooled events %q once moved, want 0", s)
	}
	if hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("charts").hidden`)); err != nil || hidden {
		t.Errorf("the charts are hidden once the store is back (%v)", err)
	}
	// the lists the store holds (DLQ, events) answered 503 while it was
	// down, as documented; nothing else failed
	var other []string
	exceptions, _ := report()
	for _, e := range exceptions {
		if !strings.Contains(e, "status of 503") {
			other = append(other, e)
		}
	}
	if len(other) > 0 {
		t.Errorf("browser errors: %q", other)
	}
}
