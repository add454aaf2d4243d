package integration

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hookline/hookline/internal/testing/browser"
)

// TestSignatureFailureReasons: each way a request fails its check is
// answered with its documented code (unchanged) and counted by reason in
// caddy_webhooks_signature_failures_total; the stats list the source's
// last failures, newest first, with the measured skew of a timestamp out
// of tolerance (its sign tells a clock behind from one ahead); a good
// request counts nowhere. The dashboard lists them, and `caddy webhooks
// stats` prints them (internal/webhooks TestPrintStatsStore).
func TestSignatureFailureReasons(t *testing.T) {
	up := newUpstream(t)
	route := `webhook_ingress /hooks/clocked clocked {
		verify hmac ` + secret + ` {
			header X-Signature
			timestamp_header X-Timestamp
		}
		forward_to ` + up.URL + `/in/clocked
	}`
	startCaddy(t, up, "", route+"\n\t"+dashboardSite)
	body := []byte(`{"c":1}`)
	signedAt := func(at time.Time, key string) map[string]string {
		ts := strconv.FormatInt(at.Unix(), 10)
		m := hmac.New(sha256.New, []byte(key))
		m.Write([]byte(ts + "." + string(body)))
		return map[string]string{"X-Timestamp": ts, "X-Signature": hex.EncodeToString(m.Sum(nil))}
	}
	for _, tc := range []struct {
		name    string
		headers map[string]string
		code    string
	}{
		{"missing", map[string]string{"X-Timestamp": strconv.FormatInt(time.Now().Unix(), 10)}, "INVALID_SIGNATURE_FORMAT"},
		{"malformed", map[string]string{"X-Timestamp": strconv.FormatInt(time.Now().Unix(), 10), "X-Signature": "zz"}, "INVALID_SIGNATURE_FORMAT"},
		{"behind", signedAt(time.Now().Add(-10*time.Minute), secret), "INVALID_TIMESTAMP"},
		{"ahead", signedAt(time.Now().Add(time.Hour), secret), "INVALID_TIMESTAMP"},
		{"mismatch", signedAt(time.Now(), "another-secret"), "UNAUTHORIZED"},
	} {
		if resp, m := post(t, "/hooks/clocked", body, tc.headers); resp.StatusCode != 401 || m["code"] != tc.code {
			t.Fatalf("%s: %d %v, want 401 %s", tc.name, resp.StatusCode, m, tc.code)
		}
	}
	if resp, m := post(t, "/hooks/clocked", body, signedAt(time.Now(), secret)); resp.StatusCode != 202 {
		t.Fatalf("a good request: %d %v", resp.StatusCode, m)
	}
	metrics := scrape(t)
	for _, want := range []string{
		`caddy_webhooks_signature_failures_total{reason="missing",source="clocked"} 1`,
		`caddy_webhooks_signature_failures_total{reason="malformed",source="clocked"} 1`,
		`caddy_webhooks_signature_failures_total{reason="timestamp",source="clocked"} 2`,
		`caddy_webhooks_signature_failures_total{reason="mismatch",source="clocked"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s\n%s", want, grepLines(metrics, "signature_failures"))
		}
	}
	code, stats := admin(t, "GET", "/webhooks/stats", "")
	failures, _ := stats["signature_failures"].(map[string]any)["clocked"].([]any)
	if code != 200 || len(failures) < 5 {
		t.Fatalf("stats: %d, the source's failures %v, want 5 (or more: this test's earlier runs)", code, stats["signature_failures"])
	}
	var got []string
	for _, f := range failures[:5] {
		f := f.(map[string]any)
		entry := f["reason"].(string)
		if skew, ok := f["skew_seconds"].(float64); ok {
			entry += " " + strconv.FormatFloat(skew, 'f', 0, 64)
		}
		if ip, _ := f["client_ip"].(string); ip == "" || f["at"] == nil {
			t.Errorf("failure without its client or time: %v", f)
		}
		got = append(got, entry)
	}
	// newest first; the skews within a second or two of the times sent
	want := []string{"mismatch", "timestamp 3600", "timestamp -600", "malformed", "missing"}
	for i := range want {
		w, g := want[i], got[i]
		if strings.HasPrefix(w, "timestamp") {
			ws, _ := strconv.Atoi(strings.Fields(w)[1])
			gs, err := strconv.Atoi(strings.TrimPrefix(g, "timestamp "))
			if err != nil || gs < ws-2 || gs > ws+2 {
				t.Errorf("failure %d: %q, want %q (±2 s)", i, g, w)
			}
			continue
		}
		if g != w {
			t.Errorf("failure %d: %q, want %q", i, g, w)
		}
	}

	// the dashboard's table of them
	ctx, report := browser.Page(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate("http://localhost:9080/dash/"),
		chromedp.WaitVisible(chromedp.ID("sig-failures")),
	); err != nil {
		t.Fatalf("opening the dashboard: %v", err)
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#sig-failures-rows tr[data-source=clocked]")].map(r => r.getAttribute("data-reason") + " | " + r.children[3].textContent)`))
	if err != nil || len(rows) != 5 || !strings.HasPrefix(rows[0], "mismatch | —") || !strings.HasPrefix(rows[1], "timestamp | +") ||
		!strings.Contains(rows[1], "(ahead)") || !strings.HasPrefix(rows[2], "timestamp | −") || !strings.Contains(rows[2], "(behind, or a replay)") {
		t.Errorf("the dashboard's failures %q (%v)", rows, err)
	}
	if exceptions, _ := report(); len(exceptions) > 0 {
		t.Errorf("browser errors: %q", exceptions)
	}
}
