package ingress_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"
)

// TestSecretHeadersNeverStoredCredentialsRedacted (DESIGN "Data at rest"):
// GitLab's X-Gitlab-Token, the configured secret itself, is dropped once
// verified: never stored, forwarded or shown. Authorization and Cookie are
// stored and forwarded, but the admin API (and so the CLI and the
// dashboard, which read it) shows them as [redacted], and the user info of
// a forward_to URL too.
func TestSecretHeadersNeverStoredCredentialsRedacted(t *testing.T) {
	const token = "gl-token-e2e-7f3a9c"
	up := newUpstream(t)
	up.setRespond(func(n int, w http.ResponseWriter) { w.WriteHeader(http.StatusUnprocessableEntity) }) // to the DLQ
	dbPath := filepath.Join(t.TempDir(), "events.db")
	withCreds := strings.Replace(up.URL, "http://", "http://hookuser:hookpass@", 1)
	startCaddy(t, up, "storage embedded "+dbPath, `webhook_ingress /hooks/gl gl {
		verify gitlab `+token+`
		forward_to `+withCreds+`/in/gl
	}
	`+dashboardSite)
	body := []byte(`{"object_kind":"push","ref":"refs/heads/main"}`)
	resp, m := post(t, "/hooks/gl", body, map[string]string{
		"Content-Type":        "application/json",
		"X-Gitlab-Token":      token,
		"X-Gitlab-Event":      "Push Hook",
		"X-Gitlab-Event-UUID": "gl-uuid-1",
		"Authorization":       "Bearer upstream-needs-this",
		"Cookie":              "session=upstream-cookie",
	})
	if resp.StatusCode != 202 {
		t.Fatalf("%d %v", resp.StatusCode, m)
	}
	got := up.next(t, 5*time.Second)
	if v := got.Header.Get("X-Gitlab-Token"); v != "" {
		t.Fatalf("the upstream got X-Gitlab-Token %q", v)
	}
	if got.Header.Get("Cookie") != "session=upstream-cookie" || got.Header.Get("X-Gitlab-Event") != "Push Hook" {
		t.Fatalf("stored headers not forwarded: %v", got.Header)
	}
	if a := got.Header.Get("Authorization"); a != "Bearer upstream-needs-this" {
		t.Fatalf("the upstream got Authorization %q", a)
	}

	eventID, _ := m["event_id"].(string) // the default id rule decides it
	id := dlqEntryOf(t, eventID)
	checkEntry := func(where string, e map[string]any) {
		t.Helper()
		raw := fmt.Sprint(e)
		for _, secret := range []string{token, "upstream-needs-this", "upstream-cookie", "hookpass", "hookuser"} {
			if strings.Contains(raw, secret) {
				t.Errorf("%s shows %q: %v", where, secret, e)
			}
		}
		if up, _ := e["upstream"].(string); up != strings.Replace(withCreds, "hookuser:hookpass", "[redacted]", 1)+"/in/gl" {
			t.Errorf("%s: upstream %q", where, up)
		}
	}
	code, entry := admin(t, "GET", "/webhooks/dlq/"+id, "")
	if code != 200 {
		t.Fatalf("dlq get: %d %v", code, entry)
	}
	checkEntry("GET /webhooks/dlq/{id}", entry)
	hdrs, _ := entry["headers"].(map[string]any)
	want := map[string]string{"Authorization": "[redacted]", "Cookie": "[redacted]", "X-Gitlab-Event": "Push Hook"}
	for k, v := range want {
		if vv, _ := hdrs[k].([]any); len(vv) != 1 || vv[0] != v {
			t.Errorf("entry header %s = %v, want [%s]", k, hdrs[k], v)
		}
	}
	if _, ok := hdrs["X-Gitlab-Token"]; ok {
		t.Errorf("the stored event has X-Gitlab-Token: %v", hdrs)
	}
	_, page := admin(t, "GET", "/webhooks/dlq?source=gl", "")
	entries, _ := page["entries"].([]any)
	if len(entries) != 1 {
		t.Fatalf("dlq list: %v", page)
	}
	checkEntry("GET /webhooks/dlq", entries[0].(map[string]any))
	// the dashboard reads the same API
	resp, dm := do(t, mustGet(t, fmt.Sprintf("http://localhost:%d/dash/api/dlq/%s", httpPort, id)))
	if resp.StatusCode != 200 {
		t.Fatalf("dashboard api: %d %v", resp.StatusCode, dm)
	}
	checkEntry("dashboard", dm)
	if code, ev := admin(t, "GET", "/webhooks/events/gl/"+url.PathEscape(eventID), ""); code != 200 || strings.Contains(fmt.Sprint(ev), token) {
		t.Errorf("event lookup: %d %v", code, ev)
	}
	// nowhere in the store file (no encryption_key: stored in clear)
	db, err := os.ReadFile(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(db, []byte("upstream-cookie")) {
		t.Fatal("the store file does not hold the event: the check below proves nothing")
	}
	if bytes.Contains(db, []byte(token)) {
		t.Fatal("the GitLab token is in the store file")
	}
}

// TestShortLeaseWithoutTimeout: `lease 5s` with no `timeout` anywhere is a
// valid config (the default timeout fits itself to the lease) and events
// are delivered; an explicit timeout that does not fit is refused.
func TestShortLeaseWithoutTimeout(t *testing.T) {
	up := newUpstream(t)
	cfg := func(timeout string) string {
		return fmt.Sprintf(`{
	admin localhost:2999
	http_port %d
	https_port 9443
	grace_period 1ns
	skip_install_trust
	webhooks {
		%s
		lease 5s
		alert %s/alerts
	}
}
http://localhost:%d {
	webhook_ingress /hooks/short short {
		verify none
		forward_to %s/in/short
		%s
	}
}
`, httpPort, defaultStorage(t), up.URL, httpPort, up.URL, timeout)
	}
	tester := caddytest.NewTester(t)
	tester.InitServer(cfg(""), "caddyfile")
	resp, m := post(t, "/hooks/short", []byte(`{"s":1}`), map[string]string{"Idempotency-Key": "short-1"})
	if resp.StatusCode != 202 {
		t.Fatalf("%d %v", resp.StatusCode, m)
	}
	if r := up.next(t, 5*time.Second); r.Path != "/in/short" || r.Header.Get("X-Webhook-Attempt") != "1" {
		t.Fatalf("delivery %s attempt %s", r.Path, r.Header.Get("X-Webhook-Attempt"))
	}
	waitFor(t, func() bool {
		_, ev := admin(t, "GET", "/webhooks/events/short/short-1", "")
		return ev["status"] == "delivered"
	})

	// an explicit conflict is refused, naming the source and both values
	req, _ := http.NewRequest(http.MethodPost, adminAddr+"/load", strings.NewReader(cfg("timeout 10s")))
	req.Header.Set("Content-Type", "text/caddyfile")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode == 200 || !strings.Contains(buf.String(), "webhook_ingress short") ||
		!strings.Contains(buf.String(), "timeout 10s must be shorter than the webhooks lease 5s") {
		t.Fatalf("explicit timeout 10s with lease 5s: %d %s", resp.StatusCode, buf.String())
	}
}
