package integration

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hookline/hookline/internal/testing/browser"
)

// TestSecretMatches: a source rotating its secret (three in effect, the
// old one first) counts which one verified each request, by position,
// never by value: in caddy_webhooks_signature_matches_total{source,secret},
// and in the stats (every node's, through the store), where each secret in
// effect is listed with when it last matched, the one never used too. The
// dashboard says "secret 2 of 3" and how long ago it last matched.
func TestSecretMatches(t *testing.T) {
	up := newUpstream(t)
	const oldSecret, newSecret, spare = "rotating-old-secret", "rotating-new-secret", "rotating-spare-secret"
	route := `webhook_ingress /hooks/rotating rotating {
		verify hmac ` + oldSecret + ` ` + newSecret + ` ` + spare + ` {
			header X-Signature
		}
		forward_to ` + up.URL + `/in/rotating
	}`
	startCaddy(t, up, "", route+"\n\t"+dashboardSite)
	send := func(key string, n int) {
		for i := range n {
			body := []byte(fmt.Sprintf(`{"n":%d,"key":%q,"at":%d}`, i, key[:12], time.Now().UnixNano()))
			m := hmac.New(sha256.New, []byte(key))
			m.Write(body)
			if resp, got := post(t, "/hooks/rotating", body, map[string]string{"X-Signature": hex.EncodeToString(m.Sum(nil))}); resp.StatusCode != 202 {
				t.Fatalf("signed with %s: %d %v", key[:12], resp.StatusCode, got)
			}
		}
	}
	before := time.Now().Add(-time.Second)
	send(oldSecret, 1)
	send(newSecret, 3)
	metrics := scrape(t)
	for _, want := range []string{
		`caddy_webhooks_signature_matches_total{secret="1",source="rotating"} 1`,
		`caddy_webhooks_signature_matches_total{secret="2",source="rotating"} 3`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s\n%s", want, grepLines(metrics, "signature_matches"))
		}
	}
	if strings.Contains(metrics, `secret="3",source="rotating"`) || strings.Contains(metrics, oldSecret) || strings.Contains(metrics, newSecret) {
		t.Errorf("metrics count the spare secret, or name a secret:\n%s", grepLines(metrics, "signature_matches"))
	}

	// the stats: written to the store every 2 s
	var secrets []any
	waitFor(t, func() bool {
		_, stats := admin(t, "GET", "/webhooks/stats", "")
		src, _ := stats["sources"].(map[string]any)["rotating"].(map[string]any)
		secrets, _ = src["secrets"].([]any)
		if len(secrets) != 3 {
			return false
		}
		s2 := secrets[1].(map[string]any)
		return s2["matches_all_time"] == float64(3)
	})
	for i, want := range []struct {
		matches float64
		matched bool
	}{{1, true}, {3, true}, {0, false}} {
		s := secrets[i].(map[string]any)
		if s["position"] != float64(i+1) || s["matches_all_time"] != want.matches || s["matches_last_hour"] != want.matches {
			t.Errorf("secret %d: %v, want %v matches", i+1, s, want.matches)
		}
		last, has := s["last_matched"].(string)
		if has != want.matched {
			t.Errorf("secret %d: last_matched %q, want it present: %v", i+1, last, want.matched)
			continue
		}
		if at, err := time.Parse(time.RFC3339, last); has && (err != nil || at.Before(before.Truncate(time.Second)) || at.After(time.Now())) {
			t.Errorf("secret %d: last_matched %q (%v), want between %v and now", i+1, last, err, before)
		}
	}
	if _, stats := admin(t, "GET", "/webhooks/stats", ""); strings.Contains(fmt.Sprint(stats), oldSecret) {
		t.Error("the stats name a secret")
	}

	// the dashboard's table
	ctx, report := browser.Page(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate("http://localhost:9080/dash/"),
		chromedp.WaitVisible(chromedp.ID("secrets")),
	); err != nil {
		t.Fatalf("opening the dashboard: %v", err)
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#secrets-rows tr[data-source=rotating]")].map(r => [...r.children].map(c => c.textContent).join(" | "))`))
	if err != nil || len(rows) != 3 || !strings.HasPrefix(rows[1], "rotating | secret 2 of 3 | ") || !strings.Contains(rows[1], " s ago (") ||
		!strings.HasSuffix(rows[1], "| 3 | 3") || !strings.Contains(rows[2], "never matched") {
		t.Errorf("the dashboard's secrets %q (%v)", rows, err)
	}
	if exceptions, _ := report(); len(exceptions) > 0 {
		t.Errorf("browser errors: %q", exceptions)
	}
}
