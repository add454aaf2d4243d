package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hookline/hookline/internal/testing/browser"
)

// TestDashboardCharts: with known traffic (three events delivered at
// their first attempt, one dead at once with a 422), the page's health
// table has a row per configured source, gen's with its success rate and
// open DLQ entry, and each
// of the six charts over the 15-minute window has the series' points:
// one per minute for the time charts, one attempt number, the 422 in the
// top errors. Screenshots go to the test's log.
func TestDashboardCharts(t *testing.T) {
	up := newUpstream(t)
	fail := up.failWith(http.StatusUnprocessableEntity, false)
	startCaddy(t, up, "", dashboardSite)
	for i := range 3 {
		body := fmt.Appendf(nil, `{"chart":%d}`, i)
		post(t, "/hooks/gen", body, signedHeaders(body, fmt.Sprint("chart-ok-", i)))
		up.next(t, 5*time.Second)
	}
	fail.Store(true)
	body := []byte(`{"chart":"dead"}`)
	post(t, "/hooks/gen", body, signedHeaders(body, "chart-dead"))
	up.next(t, 5*time.Second)
	dlqEntryOf(t, "chart-dead")
	// the counters reach the store with the next flush (2s)
	waitFor(t, func() bool {
		_, rs := admin(t, "GET", "/webhooks/stats?from=15m&source=gen", "")
		return rs["total"] == float64(4) && rs["completed"] == float64(3) && rs["dead_letter"] == float64(1)
	})
	var series struct {
		Points []struct {
			SuccessRate *float64 `json:"success_rate"`
		} `json:"points"`
	}
	code, m := admin(t, "GET", "/webhooks/stats/series?from=15m", "")
	b, _ := json.Marshal(m)
	if code != 200 || json.Unmarshal(b, &series) != nil || len(series.Points) < 15 || len(series.Points) > 16 {
		t.Fatalf("series of 15m: %d, %d points: %v", code, len(series.Points), m)
	}
	withRate := 0
	for _, p := range series.Points {
		if p.SuccessRate != nil {
			withRate++
		}
	}

	ctx, report := browser.Page(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate("http://localhost:9080/dash/"),
		chromedp.WaitVisible(chromedp.CSS(`#health-rows tr[data-source="gen"]`)),
		chromedp.Click(chromedp.CSS(`#window-buttons button[data-window="15m"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#charts[data-window="15m"]`)),
	); err != nil {
		t.Fatalf("opening the charts: %v", err)
	}
	// the series may gain a point at a minute's turn: compare with a
	// fresh read if the first one differs
	for _, id := range []string{"chart-success", "chart-errors", "chart-latency", "chart-dlq"} {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`document.getElementById(%q).getAttribute("data-points")`, id)))
		if err != nil || (n != fmt.Sprint(len(series.Points)) && n != fmt.Sprint(len(series.Points)+1)) {
			t.Errorf("%s has %q points (%v), want the series' %d", id, n, err, len(series.Points))
		}
	}
	for sel, want := range map[string]int{
		`#chart-success circle`:                 withRate,         // a dot per minute with a finished delivery
		`#chart-errors rect.s1`:                 1,                // the 422, a 4xx
		`#chart-attempts g.bar`:                 1,                // every delivery ended at attempt 1
		`#health-rows tr`:                       3,                // the configured sources: gen, plain, ts
		`#top-errors-rows tr`:                   1,                // the 422
		`#chart-latency path.line.s0`:           min(1, withRate), // p50, one stretch of minutes
		`#chart-dlq circle`:                     -1,               // at least one sample: checked below
		`#window-buttons [aria-pressed="true"]`: 1,
	} {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, sel)))
		if err != nil || (want >= 0 && n != want) || (want < 0 && n < 1) {
			t.Errorf("%s: %d elements (%v), want %d", sel, n, err, want)
		}
	}
	row, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#health-rows tr[data-source="gen"]`)))
	if fields := strings.Fields(row); err != nil || len(fields) < 9 || fields[0] != "gen" || fields[2] != "75.0" || fields[4] != "1" ||
		fields[len(fields)-3] != "no" || fields[len(fields)-2] != "closed" || fields[len(fields)-1] != "off" {
		t.Errorf("gen's health row %q (%v), want gen, 75.0 %%, 1 open DLQ entry, not paused, breaker closed, encryption off (no key)", row, err)
	}
	if text, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("top-errors-rows"))); err != nil || !strings.Contains(text, "upstream answered 422 Unprocessable Entity") {
		t.Errorf("top errors %q (%v)", text, err)
	}
	shot(t, ctx, "hookline-dashboard-charts-15m.png")

	// a week: one point per hour
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#window-buttons button[data-window="7d"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#charts[data-window="7d"]`)),
	); err != nil {
		t.Fatalf("the week's charts: %v", err)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("chart-success").getAttribute("data-points")`)); err != nil || (n != "168" && n != "169") {
		t.Errorf("the week's success chart has %q points (%v), want 168 or 169", n, err)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#health-rows tr").length`)); err != nil || n != 3 {
		t.Errorf("the week's health table: %d rows (%v)", n, err)
	}
	if text, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("charts-error"))); err == nil && text != "" {
		t.Errorf("the page reports %q", text)
	}
	shot(t, ctx, "hookline-dashboard-charts-7d.png")
	if exceptions, _ := report(); len(exceptions) > 0 {
		t.Errorf("browser errors: %q", exceptions)
	}
}

// shot saves a screenshot of the page's health and charts section in the
// system's temporary directory (HOOKLINE_DOCS_SHOTS=dir: in dir) and logs
// where.
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	buf, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.ID("health-section")))
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	dir := os.TempDir()
	if d := os.Getenv("HOOKLINE_DOCS_SHOTS"); d != "" {
		dir = d
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, buf, 0o644); err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	t.Logf("dashboard screenshot: %s", p)
}
