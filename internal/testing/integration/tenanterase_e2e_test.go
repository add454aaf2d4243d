package integration

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage/storagetest"
)

// TestEraseTenant (a shop's redact, through Caddy, on both stores): a
// shop's events, delivered, dead and queued, are erased by DELETE
// /webhooks/tenants/{source}/{tenant}, a batch at a time, while another
// shop's stay: the progress says how many went, the event browser and
// the DLQ find none of them, their bytes are in no store file and no
// Redis value, a resend is answered "erased", and the audit log has the
// erasure's lines (no body in them).
func TestEraseTenant(t *testing.T) {
	srv := redistest.Start(t)
	for _, redisStore := range []bool{false, true} {
		name := "embedded"
		if redisStore {
			name = "redis"
		}
		t.Run(name, func(t *testing.T) {
			dbPath := filepath.Join(t.TempDir(), "events.db")
			storageLine := "storage embedded " + dbPath
			raw := func() [][]byte {
				db, err := storagetest.ReadFiles(dbPath)
				if err != nil {
					t.Fatal(err)
				}
				return [][]byte{db}
			}
			if redisStore {
				storageLine = fmt.Sprintf("storage redis {\n\t\t\taddress redis://%s/0\n\t\t\tkey_prefix tenanterase\n\t\t\tpartitions 4\n\t\t}", srv.Addr)
				raw = func() [][]byte { return redisValues(t, srv.Addr, "tenanterase") }
			}
			testEraseTenant(t, storageLine, raw)
		})
	}
}

func testEraseTenant(t *testing.T, storageLine string, raw func() [][]byte) {
	logs, auditLog, _ := auditLogs(t)
	up := newUpstream(t)
	up.setRespond(func(n int, w http.ResponseWriter) {
		up.mu.Lock()
		body := string(up.reqs[n-1].Body)
		up.mu.Unlock()
		switch {
		case strings.Contains(body, `"fail"`):
			w.WriteHeader(http.StatusUnprocessableEntity) // dead at once
		case strings.Contains(body, `"wait"`):
			w.Header().Set("Retry-After", "3600") // queued for an hour
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			w.WriteHeader(http.StatusOK)
		}
	})
	startCaddyWith(t, up, logs, storageLine+"\n\t\taudit", shopIngress(up, ""))
	const gone, kept = "gone.myshopify.com", "kept.myshopify.com"
	headers, send := shopHeaders, func(id, shop, body string) { sendShop(t, id, shop, body) }
	const n = 30
	for i := range n {
		outcome := []string{"ok", "fail", "wait"}[i%3]
		send(fmt.Sprintf("g-%d", i), gone, fmt.Sprintf(`{"email":"MARK-gone-%02d-3f9c@example.com","%s":1}`, i, outcome))
	}
	for i := range 3 {
		send(fmt.Sprintf("k-%d", i), kept, fmt.Sprintf(`{"email":"MARK-kept-%02d-3f9c@example.com","fail":1}`, i))
	}
	for range n + 3 {
		up.next(t, 5*time.Second)
	}
	waitFor(t, func() bool {
		_, page := admin(t, "GET", "/webhooks/dlq?limit=100", "")
		entries, _ := page["entries"].([]any)
		return len(entries) == n/3+3
	})
	holds := func(marker string) bool {
		for _, v := range raw() {
			if storagetest.HasMarker(v, marker) {
				return true
			}
		}
		return false
	}
	for _, m := range []string{"MARK-gone-00-3f9c", "MARK-gone-01-3f9c", "MARK-gone-02-3f9c", "MARK-kept-00-3f9c"} {
		if !holds(m) {
			t.Fatalf("before the erasure the store lacks %s: the test proves nothing", m)
		}
	}

	code, ans := admin(t, "DELETE", "/webhooks/tenants/shop/"+gone, `{"batch":7,"pause":"10ms"}`)
	if code != http.StatusAccepted || ans["started"] != true || ans["tenant"] != gone || ans["state"] != "running" {
		t.Fatalf("DELETE: %d %v", code, ans)
	}
	var p map[string]any
	waitFor(t, func() bool {
		_, p = admin(t, "GET", "/webhooks/tenants/shop/"+gone, "")
		return p["state"] != "running"
	})
	if p["state"] != "done" || p["erased"] != float64(n) || p["dlq_entries"] != float64(n/3) || p["finished_at"] == nil {
		t.Fatalf("progress: %v", p)
	}
	for tenant, want := range map[string]int{gone: 0, kept: 3} {
		_, page := admin(t, "GET", "/webhooks/events?limit=100&tenant="+tenant, "")
		if items, _ := page["items"].([]any); len(items) != want {
			t.Errorf("events of %s after the erasure: %d, want %d", tenant, len(items), want)
		}
		_, page = admin(t, "GET", "/webhooks/dlq?limit=100&tenant="+tenant, "")
		if entries, _ := page["entries"].([]any); len(entries) != min(want, 3) {
			t.Errorf("DLQ entries of %s after the erasure: %d", tenant, len(entries))
		}
	}
	for i := range n {
		if m := fmt.Sprintf("MARK-gone-%02d-3f9c", i); holds(m) {
			t.Errorf("after the erasure the store still holds %s", m)
		}
	}
	if !holds("MARK-kept-00-3f9c") {
		t.Errorf("the erasure took another shop's event")
	}
	// a resend is a duplicate of an erased event, not delivered again
	body := `{"email":"MARK-gone-00-3f9c@example.com","ok":1}`
	if resp, m := post(t, "/hooks/shop", []byte(body), headers("g-0", gone, body)); resp.StatusCode != 200 || m["status"] != "erased" {
		t.Errorf("resend after the erasure: %d %v", resp.StatusCode, m)
	}
	up.none(t, 500*time.Millisecond)

	steps := map[string]int{}
	var done map[string]any
	waitFor(t, func() bool {
		steps, done = map[string]int{}, nil
		for _, l := range logLines(t, auditLog) {
			steps[fmt.Sprint(l["step"])]++
			if l["step"] == "tenant_erased" {
				done = l
			}
		}
		return done != nil && steps["erased"] == n
	})
	if steps["tenant_erase_started"] != 1 || done["tenant"] != gone || done["erased"] != float64(n) {
		t.Errorf("audit: steps %v, end %v", steps, done)
	}
	if raw, _ := os.ReadFile(auditLog); strings.Contains(string(raw), "MARK-gone") {
		t.Errorf("the audit log holds an erased event's body")
	}
}

// shopIngress is the Caddyfile of the source shop at /hooks/shop:
// Shopify's scheme (its default tenant, the shop's domain), delivered to
// up, with more directives lines (may be "").
func shopIngress(up *upstream, lines string) string {
	return fmt.Sprintf(`
	webhook_ingress /hooks/shop shop {
		verify shopify %s
		forward_to %s/in/shop
		%s
	}`, shopifySecret, up.URL, lines)
}

// shopHeaders are the headers of a Shopify webhook of shop with id and
// body, signed with shopifySecret.
func shopHeaders(id, shop, body string) map[string]string {
	return map[string]string{
		"X-Shopify-Hmac-Sha256": base64.StdEncoding.EncodeToString(mac(sha256.New, shopifySecret, body)),
		"X-Shopify-Webhook-Id":  id, "X-Shopify-Topic": "customers/update", "X-Shopify-Shop-Domain": shop,
	}
}

// sendShop posts a Shopify webhook of shop to /hooks/shop, wanting 202.
func sendShop(t *testing.T, id, shop, body string) {
	t.Helper()
	if resp, m := post(t, "/hooks/shop", []byte(body), shopHeaders(id, shop, body)); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("%s: %d %v", id, resp.StatusCode, m)
	}
}

// TestTenantErasureReloadAndCap: at most four tenants' erasures run at
// once on a node (the fifth is refused with 429, a second DELETE of a
// running one answers it as it is); a reload stops the running ones,
// saved as failed with why and an audit line each, and a DELETE resumes
// one where it stopped, to its end.
func TestTenantErasureReloadAndCap(t *testing.T) {
	logs, auditLog, _ := auditLogs(t)
	up := newUpstream(t)
	up.setRespond(func(_ int, w http.ResponseWriter) {
		w.Header().Set("Retry-After", "3600") // every event stays queued
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	storageLine := defaultStorage(t)
	load := func(timeout int) { // a config that differs: Caddy skips loading an unchanged one
		startCaddyWith(t, up, logs, storageLine+"\n\t\taudit", shopIngress(up, fmt.Sprintf("timeout %ds", timeout)))
	}
	load(10)
	shops := []string{"slow.myshopify.com", "t1.myshopify.com", "t2.myshopify.com", "t3.myshopify.com", "t4.myshopify.com"}
	const slowEvents = 6
	for i, shop := range shops {
		n := 2
		if i == 0 {
			n = slowEvents
		}
		for j := range n {
			sendShop(t, fmt.Sprintf("%d-%d", i, j), shop, fmt.Sprintf(`{"n":%d}`, j))
		}
	}
	// four erasures, each pausing 10s after its first batch of one event
	for _, shop := range shops[:4] {
		code, ans := admin(t, "DELETE", "/webhooks/tenants/shop/"+shop, `{"batch":1,"pause":"10s"}`)
		if code != http.StatusAccepted || ans["started"] != true {
			t.Fatalf("DELETE %s: %d %v", shop, code, ans)
		}
	}
	if code, ans := admin(t, "DELETE", "/webhooks/tenants/shop/"+shops[4], ""); code != http.StatusTooManyRequests || ans["error"] == nil {
		t.Errorf("a fifth erasure at once: %d %v, want 429 with an error", code, ans)
	}
	if code, ans := admin(t, "DELETE", "/webhooks/tenants/shop/"+shops[0], ""); code != http.StatusAccepted || ans["started"] != false || ans["state"] != "running" {
		t.Errorf("DELETE of a running erasure: %d %v, want 202, started false", code, ans)
	}
	waitFor(t, func() bool {
		_, p := admin(t, "GET", "/webhooks/tenants/shop/"+shops[0], "")
		return p["erased"] == float64(1)
	})

	load(11) // stops the old app: its erasures are saved as interrupted
	_, p := admin(t, "GET", "/webhooks/tenants/shop/"+shops[0], "")
	if p["state"] != "failed" || p["erased"] != float64(1) || !strings.Contains(fmt.Sprint(p["error"]), "interrupted") {
		t.Fatalf("after a reload: %v, want failed (interrupted), 1 erased", p)
	}
	code, ans := admin(t, "DELETE", "/webhooks/tenants/shop/"+shops[0], `{"batch":100}`)
	if code != http.StatusAccepted || ans["started"] != true || ans["erased"] != float64(1) {
		t.Fatalf("resuming: %d %v", code, ans)
	}
	waitFor(t, func() bool {
		_, p = admin(t, "GET", "/webhooks/tenants/shop/"+shops[0], "")
		return p["state"] != "running"
	})
	if p["state"] != "done" || p["erased"] != float64(slowEvents) || p["until"] != ans["until"] {
		t.Fatalf("the resumed erasure: %v, want done, %d erased, the first cutoff %v", p, slowEvents, ans["until"])
	}
	_, page := admin(t, "GET", "/webhooks/events?limit=100&tenant="+shops[0], "")
	if items, _ := page["items"].([]any); len(items) != 0 {
		t.Errorf("events of the erased shop left: %d", len(items))
	}

	var stopped, started, resumed int
	waitFor(t, func() bool {
		stopped, started, resumed = 0, 0, 0
		for _, l := range logLines(t, auditLog) {
			switch l["step"] {
			case "tenant_erase_stopped":
				stopped++
			case "tenant_erase_started":
				started++
				if l["resumed"] == true {
					resumed++
				}
			}
		}
		return stopped == 4 && started == 5
	})
	if resumed != 1 {
		t.Errorf("audit: %d starts marked resumed, want 1", resumed)
	}
}
