package integration

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

	"github.com/hookline/hookline/internal/delivery"
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
	startCaddyWith(t, up, logs, auditOn(t), fmt.Sprintf(`
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

// auditOn is the webhooks block's storage line with the audit trail on.
func auditOn(t *testing.T) string { return defaultStorage(t) + "\n\t\taudit" }

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

// TestAuditOffByDefault: without the webhooks app's audit option, the
// webhooks.audit logger writes nothing, even where a log includes it: an
// event received, delivered and another dead-lettered leave the audit file
// empty (Caddy's default log would otherwise get three lines an event).
func TestAuditOffByDefault(t *testing.T) {
	logs, auditLog, _ := auditLogs(t)
	up := newUpstream(t)
	up.setRespond(func(n int, w http.ResponseWriter) {
		if n == 2 {
			w.WriteHeader(http.StatusUnprocessableEntity) // the second to the DLQ
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	startCaddyWith(t, up, logs, "", "")
	for _, eventID := range []string{"quiet-1", "quiet-2"} {
		body := []byte(`{"kind":"order.paid"}`)
		if resp, m := post(t, "/hooks/gen", body, signedHeaders(body, eventID)); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("%s: %d %v", eventID, resp.StatusCode, m)
		}
		up.next(t, 5*time.Second)
	}
	dlqEntryOf(t, "quiet-2")
	if lines := logLines(t, auditLog); len(lines) != 0 {
		t.Fatalf("audit lines without the audit option: %v", lines)
	}
}

// TestAuditResolvedDiscarded: a DLQ entry resolved and another discarded
// through the admin API each get their audit line (step resolved,
// discarded) naming the entry, its event and the id of the ingress request
// that accepted it, with the operator's text.
func TestAuditResolvedDiscarded(t *testing.T) {
	logs, auditLog, _ := auditLogs(t)
	up := newUpstream(t)
	up.setRespond(func(n int, w http.ResponseWriter) { w.WriteHeader(http.StatusUnprocessableEntity) }) // to the DLQ
	startCaddyWith(t, up, logs, auditOn(t), "")

	ids := map[string]string{} // event id: DLQ entry id
	for _, eventID := range []string{"settle-resolved", "settle-discarded"} {
		body := []byte(`{"kind":"order.paid"}`)
		if resp, m := post(t, "/hooks/gen", body, signedHeaders(body, eventID)); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("%s: %d %v", eventID, resp.StatusCode, m)
		}
		ids[eventID] = dlqEntryOf(t, eventID)
	}
	if code, m := admin(t, "POST", "/webhooks/dlq/"+ids["settle-resolved"]+"/resolve", `{"resolution":"fixed by hand"}`); code != 200 {
		t.Fatalf("resolve: %d %v", code, m)
	}
	if code, m := admin(t, "POST", "/webhooks/dlq/"+ids["settle-discarded"]+"/discard", `{"reason":"test order"}`); code != 200 {
		t.Fatalf("discard: %d %v", code, m)
	}

	// the request id of each event is its received line's
	requestIDs := map[string]string{}
	settled := map[string]map[string]any{} // step: line
	defer func() {
		if t.Failed() {
			t.Logf("operator steps audited: %v", settled)
		}
	}()
	waitFor(t, func() bool {
		for _, l := range logLines(t, auditLog) {
			switch l["step"] {
			case "received":
				requestIDs[fmt.Sprint(l["event_id"])], _ = l["request_id"].(string)
			case "resolved", "discarded":
				settled[fmt.Sprint(l["step"])] = l
			}
		}
		return len(settled) == 2
	})
	for step, want := range map[string]struct{ eventID, note string }{
		"resolved":  {"settle-resolved", "fixed by hand"},
		"discarded": {"settle-discarded", "test order"},
	} {
		l := settled[step]
		if len(requestIDs[want.eventID]) != 36 {
			t.Fatalf("received line of %s: request_id %q, want Caddy's request uuid", want.eventID, requestIDs[want.eventID])
		}
		if l["logger"] != "webhooks.audit" || l["source"] != "gen" || l["event_id"] != want.eventID || l["id"] != ids[want.eventID] ||
			l["type"] != "order.paid" || l["request_id"] != requestIDs[want.eventID] || l["note"] != want.note {
			t.Errorf("%s line: %v, want event %s, entry %s, request %s, note %q",
				step, l, want.eventID, ids[want.eventID], requestIDs[want.eventID], want.note)
		}
	}
}

// TestBreakerEvents (docs/reference.md, "Logs and events", "Upstream
// requests"): an upstream failing five times in a row opens its circuit
// breaker, and once it recovers the breaker's trial closes it again; the
// events app gets webhook_breaker_open and then webhook_breaker_closed,
// naming the destination's breaker (delivery.BreakerName). The event is delivered without
// spending attempts while the breaker was open (its audit trail: five
// failed attempts, then the delivered one).
func TestBreakerEvents(t *testing.T) {
	logs, auditLog, eventsLog := auditLogs(t)
	up := newUpstream(t)
	fail := up.failWith(http.StatusServiceUnavailable, true)
	startCaddyWith(t, up, logs, auditOn(t), fmt.Sprintf(`
	webhook_ingress /hooks/flaky flaky {
		verify none
		forward_to %s/in/flaky
		id_from header Idempotency-Key
		retry {
			max_attempts 20
			backoff 50ms 50ms jitter 0
		}
	}`, up.URL))
	if resp, m := post(t, "/hooks/flaky", []byte(`{"n":1}`), map[string]string{"Idempotency-Key": "flaky-1"}); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("%d %v", resp.StatusCode, m)
	}
	// five consecutive transient failures open the breaker (default: 5; a trial every 2s)
	for range 5 {
		up.next(t, 5*time.Second)
	}
	breakerEvents := func() (names []string, data []map[string]any) {
		for _, l := range logLines(t, eventsLog) {
			if n := fmt.Sprint(l["name"]); strings.HasPrefix(n, "webhook_breaker_") {
				names = append(names, n)
				d, _ := l["data"].(map[string]any)
				data = append(data, d)
			}
		}
		return names, data
	}
	waitFor(t, func() bool { names, _ := breakerEvents(); return len(names) > 0 })
	fail.Store(false)

	// the trial, once the breaker has been open 2s, delivers and closes it
	if r := up.next(t, 20*time.Second); r.Header.Get("X-Webhook-Attempt") != "6" {
		t.Errorf("the trial is attempt %s, want 6 (no attempt spent while open)", r.Header.Get("X-Webhook-Attempt"))
	}
	var names []string
	var data []map[string]any
	defer func() {
		if t.Failed() {
			t.Logf("breaker events: %v %v", names, data)
		}
	}()
	waitFor(t, func() bool { names, data = breakerEvents(); return len(names) >= 2 })
	if want := []string{"webhook_breaker_open", "webhook_breaker_closed"}; !slices.Equal(names, want) {
		t.Fatalf("breaker events %v, want %v", names, want)
	}
	for i, d := range data {
		if want := delivery.BreakerName(up.URL + "/in/flaky"); d["upstream"] != want { // a breaker per destination
			t.Errorf("%s: data %v, want upstream %s", names[i], d, want)
		}
	}

	want := []string{"received <nil>"}
	for range 5 {
		want = append(want, "attempt retry")
	}
	want = append(want, "attempt delivered", "delivered <nil>")
	var steps []string
	waitFor(t, func() bool {
		steps = steps[:0]
		for _, l := range logLines(t, auditLog) {
			if l["event_id"] == "flaky-1" {
				steps = append(steps, fmt.Sprint(l["step"], " ", l["result"]))
			}
		}
		return len(steps) >= len(want)
	})
	if !slices.Equal(steps, want) {
		t.Errorf("audit steps %v, want %v", steps, want)
	}
}

// TestBreakerPerDestinationThroughCaddy: two sources behind one local
// reverse proxy (one host:port, paths /in/a and /in/b); /in/a answers 500
// until its breaker opens; /in/b's events keep being delivered at once
// meanwhile, and only /in/a's breaker is open in the metrics.
func TestBreakerPerDestinationThroughCaddy(t *testing.T) {
	up := newUpstream(t)
	up.setRespondByPath(func(path string, w http.ResponseWriter) {
		if path == "/in/a" {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	startCaddyWith(t, up, "", "", fmt.Sprintf(`
	webhook_ingress /hooks/a a {
		verify none
		forward_to %[1]s/in/a
		id_from header Idempotency-Key
		retry {
			max_attempts 50
			backoff 20ms 20ms jitter 0
		}
	}
	webhook_ingress /hooks/b b {
		verify none
		forward_to %[1]s/in/b
		id_from header Idempotency-Key
	}`, up.URL))
	if resp, m := post(t, "/hooks/a", []byte(`{}`), map[string]string{"Idempotency-Key": "a-1"}); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("%d %v", resp.StatusCode, m)
	}
	for range 5 { // five consecutive failures open /in/a's breaker
		up.next(t, 5*time.Second)
	}
	time.Sleep(100 * time.Millisecond)
	for i := range 10 {
		sent := time.Now()
		if resp, m := post(t, "/hooks/b", []byte(`{}`), map[string]string{"Idempotency-Key": fmt.Sprintf("b-%d", i)}); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("%d %v", resp.StatusCode, m)
		}
		r := up.next(t, 5*time.Second)
		for r.Path != "/in/b" { // /in/a's trial may come in between
			r = up.next(t, 5*time.Second)
		}
		if took := r.At.Sub(sent); took > time.Second {
			t.Fatalf("b's event %d reached its upstream %v after the 202, while a's breaker was open on the same host", i, took)
		}
	}
	metrics := scrape(t)
	for _, want := range []string{
		fmt.Sprintf(`caddy_webhooks_breaker_open{upstream="%s"} 1`, delivery.BreakerName(up.URL+"/in/a")),
		fmt.Sprintf(`caddy_webhooks_breaker_open{upstream="%s"} 0`, delivery.BreakerName(up.URL+"/in/b")),
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
