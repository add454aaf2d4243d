package ingress_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/redistest"
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
	alerts := make(chan string, 10)
	slack := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	nextAlert("the store is unreachable; events are accepted into this node's spool")

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
