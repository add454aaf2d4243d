package ingress_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// logLines reads the JSON lines of a log file (none when it is missing).
func logLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: not a JSON line: %q", path, sc.Text())
		}
		out = append(out, m)
	}
	return out
}

// TestAuditTrail routes the webhooks.audit logger to a file of its own
// with Caddy's log config and follows one event that is retried,
// dead-lettered, retried from the DLQ and delivered: one line per step, in
// order, each with the event's ids, type and the ingress request's id, and
// never its body. The events app gets webhook_dead, the pause events and
// webhook_client_blocked.
func TestAuditTrail(t *testing.T) {
	logs, auditLog, eventsLog := auditLogs(t)
	up := newUpstream(t)
	fail := up.failWith(http.StatusServiceUnavailable, true)
	startCaddyWith(t, up, logs, "", fmt.Sprintf(`
	webhook_ingress /hooks/audited audited {
		verify hmac %s {
			header X-Signature
			prefix sha256=
		}
		forward_to %s/in/audited
		id_from header Idempotency-Key
		type_from json kind
		block_failures 2 1m 1m
		retry {
			max_attempts 2
			backoff 100ms 100ms jitter 0
		}
	}`, secret, up.URL))

	body := []byte(`{"kind":"order.paid","secret_body_marker":"do-not-log"}`)
	post(t, "/hooks/audited", body, signedHeaders(body, "audit-1"))
	up.next(t, 5*time.Second)
	up.next(t, 5*time.Second) // second and last attempt: dead
	id := dlqEntryOf(t, "audit-1")
	fail.Store(false)
	if code, m := admin(t, "POST", "/webhooks/dlq/"+id+"/retry", ""); code != 200 {
		t.Fatalf("retry: %d %v", code, m)
	}
	up.next(t, 5*time.Second)
	if code, m := admin(t, "POST", "/webhooks/sources/audited/pause", ""); code != 200 {
		t.Fatalf("pause: %d %v", code, m)
	}
	if code, m := admin(t, "POST", "/webhooks/sources/audited/resume", ""); code != 200 {
		t.Fatalf("resume: %d %v", code, m)
	}

	// a client failing its signature twice is blocked
	for range 2 {
		post(t, "/hooks/audited", body, map[string]string{"X-Signature": sign([]byte("forged")), "Content-Type": "application/json"})
	}

	want := []string{"received", "attempt", "attempt", "dead", "retried", "attempt", "delivered"}
	var steps []string
	var lines []map[string]any
	var pauseSteps []string
	waitFor(t, func() bool {
		lines, pauseSteps = lines[:0], pauseSteps[:0]
		steps = steps[:0]
		for _, l := range logLines(t, auditLog) {
			if l["step"] == "paused" || l["step"] == "resumed" {
				pauseSteps = append(pauseSteps, fmt.Sprint(l["step"], " ", l["source"], " ", l["mode"]))
				continue
			}
			lines = append(lines, l)
			steps = append(steps, fmt.Sprint(l["step"]))
		}
		return len(steps) >= len(want) && len(pauseSteps) >= 2
	})
	if want := []string{"paused audited refuse", "resumed audited refuse"}; !slices.Equal(pauseSteps, want) {
		t.Errorf("pause audit lines %v, want %v", pauseSteps, want)
	}
	if !slices.Equal(steps, want) {
		t.Fatalf("audit steps %v, want %v", steps, want)
	}
	requestID, _ := lines[0]["request_id"].(string)
	if len(requestID) != 36 {
		t.Fatalf("received line's request_id %q, want Caddy's request uuid", requestID)
	}
	var results []string
	for i, l := range lines {
		if l["logger"] != "webhooks.audit" || l["source"] != "audited" || l["event_id"] != "audit-1" || l["id"] != id ||
			l["type"] != "order.paid" || l["request_id"] != requestID {
			t.Errorf("line %d: %v", i, l)
		}
		if l["step"] == "attempt" {
			results = append(results, fmt.Sprint(l["result"]))
		}
	}
	if want := []string{"retry", "dead", "delivered"}; !slices.Equal(results, want) {
		t.Errorf("attempt results %v, want %v", results, want)
	}
	if raw, _ := os.ReadFile(auditLog); strings.Contains(string(raw), "do-not-log") || strings.Contains(string(raw), secret) {
		t.Fatal("the audit log holds the body or the secret")
	}

	names := map[string]bool{}
	waitFor(t, func() bool {
		for _, l := range logLines(t, eventsLog) {
			names[fmt.Sprint(l["name"])] = true
		}
		return names["webhook_dead"] && names["webhook_source_paused"] && names["webhook_source_resumed"] && names["webhook_client_blocked"]
	})
}

// auditLogs is the global option block that routes the webhooks.audit
// logger and Caddy's events to files of their own (JSON), and the two
// files' paths.
func auditLogs(t *testing.T) (global, auditLog, eventsLog string) {
	dir := t.TempDir()
	auditLog, eventsLog = filepath.Join(dir, "audit.log"), filepath.Join(dir, "events.log")
	return fmt.Sprintf(`log audit {
		output file %s
		include webhooks.audit
		format json
	}
	log events {
		output file %s
		include events
		level DEBUG
		format json
	}`, auditLog, eventsLog), auditLog, eventsLog
}
