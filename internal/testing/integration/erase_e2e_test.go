package integration

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/storage/storagetest"
)

// TestErase (GDPR erasure, through Caddy): an event accepted and
// delivered, its body and a header carrying a marker, is erased with
// DELETE /webhooks/events/{source}/{event_id}: the answer counts what was
// removed, the event is then not found (a second DELETE is a 404), the
// provider's resend is answered 200 duplicate, status "erased", and is not
// delivered again; the audit log has the step "erased". On the embedded
// store the marker was in the file and is in none of its bytes after.
func TestErase(t *testing.T) {
	auditLog := filepath.Join(t.TempDir(), "audit.log")
	dbPath := ""
	storageLine := ""
	if storageOverride == nil { // the embedded store: its file is read
		dbPath = filepath.Join(t.TempDir(), "events.db")
		storageLine = "storage embedded " + dbPath
	}
	if storageLine == "" {
		storageLine = defaultStorage(t)
	}
	storageLine += "\n\t\taudit"
	up := newUpstream(t)
	startCaddyWith(t, up, fmt.Sprintf(`log audit {
		output file %s
		include webhooks.audit
		format json
	}`, auditLog), storageLine, "")

	const marker = "MARK-e2e-erase-5b7d"
	body := []byte(`{"kind":"person.updated","email":"` + marker + `-body@example.com"}`)
	hdr := signedHeaders(body, "erase-1")
	hdr["X-Marker"] = marker + "-header"
	resp, m := post(t, "/hooks/gen", body, hdr)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("accept: %d %v", resp.StatusCode, m)
	}
	if got := up.next(t, 5*time.Second); got.Header.Get("X-Marker") != marker+"-header" {
		t.Fatalf("delivered without the marked header: %v", got.Header)
	}
	waitFor(t, func() bool {
		code, ev := admin(t, "GET", "/webhooks/events/gen/erase-1", "")
		return code == 200 && ev["status"] == "delivered"
	})
	if dbPath != "" {
		if b, h := fileHolds(t, dbPath, marker); !b || !h {
			t.Fatalf("before the erasure the store file holds the marker in the body %v, in the header %v: the test proves nothing", b, h)
		}
	}

	// refusals first: bad names, unknown events
	if code, m := admin(t, "DELETE", "/webhooks/events/bad%20name/erase-1", ""); code != 400 || m["error"] != "invalid source name" {
		t.Errorf("bad source name: %d %v", code, m)
	}
	if code, m := admin(t, "DELETE", "/webhooks/events/gen/unknown-1", ""); code != 404 || m["error"] != "not found" {
		t.Errorf("unknown event: %d %v", code, m)
	}
	if code, _ := admin(t, "DELETE", "/webhooks/events/plain/erase-1", ""); code != 404 {
		t.Errorf("the event under another source: %d, want 404", code)
	}

	code, ans := admin(t, "DELETE", "/webhooks/events/gen/erase-1", "")
	if code != 200 || ans["erased"] != true || ans["source"] != "gen" || ans["event_id"] != "erase-1" ||
		ans["deliveries"] != float64(1) || ans["dlq_entries"] != float64(0) || ans["id"] == "" || ans["dedupe_until"] == nil {
		t.Fatalf("erase: %d %v", code, ans)
	}
	if code, _ := admin(t, "GET", "/webhooks/events/gen/erase-1", ""); code != 404 {
		t.Errorf("lookup after the erasure: %d, want 404", code)
	}
	if code, _ := admin(t, "DELETE", "/webhooks/events/gen/erase-1", ""); code != 404 {
		t.Errorf("a second erasure: %d, want 404", code)
	}

	// the provider resends: a duplicate, not delivered again
	resp, m = post(t, "/hooks/gen", body, hdr)
	if resp.StatusCode != 200 || m["message"] != "Webhook already processed" || m["event_id"] != "erase-1" || m["status"] != "erased" {
		t.Fatalf("resend after the erasure: %d %v", resp.StatusCode, m)
	}
	up.none(t, time.Second)

	if dbPath != "" {
		if b, h := fileHolds(t, dbPath, marker); b || h {
			t.Errorf("after the erasure the store file still holds the marker in the body %v, in the header %v", b, h)
		}
	}
	var erased map[string]any
	waitFor(t, func() bool {
		for _, l := range logLines(t, auditLog) {
			if l["step"] == "erased" {
				erased = l
				return true
			}
		}
		return false
	})
	if erased["source"] != "gen" || erased["event_id"] != "erase-1" || erased["id"] != ans["id"] ||
		erased["type"] != "person.updated" || erased["deliveries"] != float64(1) {
		t.Errorf("audit line of the erasure: %v", erased)
	}
	raw, _ := os.ReadFile(auditLog)
	if storagetest.HasMarker(raw, marker+"-body") || strings.Contains(string(raw), marker+"-header") {
		t.Errorf("the audit log holds the erased event's body or header")
	}
}

// fileHolds reports whether the store's files at path hold the marker's
// body and header forms (storagetest.MarkerForms).
func fileHolds(t *testing.T, path, marker string) (body, header bool) {
	t.Helper()
	raw, err := storagetest.ReadFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	return storagetest.HasMarker(raw, marker+"-body"), storagetest.HasMarker(raw, marker+"-header")
}
