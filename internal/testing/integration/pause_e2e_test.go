package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// alertSink is a Slack-compatible endpoint recording the alerts' texts.
func alertSink(t *testing.T) (url string, texts chan string) {
	texts = make(chan string, 50)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]string
		_ = json.NewDecoder(r.Body).Decode(&m)
		texts <- m["text"]
	}))
	t.Cleanup(srv.Close)
	return srv.URL, texts
}

// nextAlert waits for an alert containing want.
func nextAlert(t *testing.T, texts chan string, want string) string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case text := <-texts:
			if strings.Contains(text, want) {
				return text
			}
		case <-deadline:
			t.Fatalf("no alert containing %q", want)
		}
	}
}

// TestPauseHold: a hold keeps answering 202 and storing while nothing is
// delivered; stats, alert, audit line and Caddy event show it with its
// reason. On resume everything is delivered within a second, in acceptance
// order, at the catch-up pace (the source has no rate_limit).
func TestPauseHold(t *testing.T) {
	logs, auditLog, eventsLog := auditLogs(t)
	alertURL, alerts := alertSink(t)
	up := newUpstream(t)
	startCaddyWith(t, up, logs, auditOn(t)+"\n\t\tworkers 1\n\t\talert "+alertURL, "")

	if code, m := admin(t, "POST", "/webhooks/sources/gen/pause", `{"reason":"upstream deploy","accept":true}`); code != 200 ||
		m["pause"].(map[string]any)["mode"] != "hold" {
		t.Fatalf("pause: %d %v", code, m)
	}
	text := nextAlert(t, alerts, "paused")
	if !strings.Contains(text, `source "gen"`) || !strings.Contains(text, "upstream deploy") || !strings.Contains(text, "holding") {
		t.Errorf("pause alert %q", text)
	}
	const n = 30
	for i := range n {
		body := []byte(fmt.Sprintf(`{"kind":"k","n":%d}`, i))
		if resp, m := post(t, "/hooks/gen", body, signedHeaders(body, fmt.Sprintf("hold-%02d", i))); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("event %d during a hold: %d %v", i, resp.StatusCode, m)
		}
	}
	up.none(t, 1500*time.Millisecond)
	_, st := admin(t, "GET", "/webhooks/stats", "")
	pauses, _ := st["pauses"].([]any)
	if fmt.Sprint(st["paused_sources"]) != "[gen]" || len(pauses) != 1 {
		t.Fatalf("stats during the hold: %v", st)
	}
	p := pauses[0].(map[string]any)
	if p["source"] != "gen" || p["mode"] != "hold" || p["reason"] != "upstream deploy" || p["waiting"] != float64(n) || p["since"] == nil || p["until"] != nil {
		t.Errorf("stats pause %v", p)
	}

	resumed := time.Now()
	if code, m := admin(t, "POST", "/webhooks/sources/gen/resume", ""); code != 200 || m["paused"] != false {
		t.Fatalf("resume: %d %v", code, m)
	}
	var got []recorded
	for range n {
		got = append(got, up.next(t, 10*time.Second))
	}
	if first := got[0].At.Sub(resumed); first > time.Second {
		t.Errorf("first delivery %v after the resume, want within a second", first)
	}
	// 100/s with bursts of 10: 30 deliveries take at least 200ms
	if span := got[n-1].At.Sub(got[0].At); span < 150*time.Millisecond {
		t.Errorf("%d held deliveries within %v: not paced", n, span)
	}
	for i, r := range got {
		if id := r.Header.Get("Webhook-Id"); id != fmt.Sprintf("hold-%02d", i) {
			t.Fatalf("delivery %d is %s: not in acceptance order", i, id)
		}
	}
	nextAlert(t, alerts, "resumed by an operator")

	var steps []map[string]any
	waitFor(t, func() bool {
		steps = steps[:0]
		for _, l := range logLines(t, auditLog) {
			if l["step"] == "paused" || l["step"] == "resumed" {
				steps = append(steps, l)
			}
		}
		return len(steps) == 2
	})
	if steps[0]["step"] != "paused" || steps[0]["mode"] != "hold" || steps[0]["reason"] != "upstream deploy" ||
		steps[1]["step"] != "resumed" || steps[1]["automatic"] != false || steps[1]["source"] != "gen" {
		t.Errorf("audit lines %v", steps)
	}
	waitFor(t, func() bool {
		var names []string
		for _, l := range logLines(t, eventsLog) {
			if l["name"] == "webhook_source_paused" {
				if data, _ := l["data"].(map[string]any); data != nil && data["mode"] != "hold" {
					t.Errorf("paused event %v", l)
				}
			}
			names = append(names, fmt.Sprint(l["name"]))
		}
		return slices.Contains(names, "webhook_source_paused") && slices.Contains(names, "webhook_source_resumed")
	})
}

// TestPauseRefuse: a refusing pause answers 503 with Retry-After (the time
// left of its `for`, else 60s); changed to a hold it accepts without a
// resume; `for 2s` resumes by itself, announced once. Bad bodies are 400,
// an unknown destination 404.
func TestPauseRefuse(t *testing.T) {
	alertURL, alerts := alertSink(t)
	up := newUpstream(t)
	startCaddy(t, up, defaultStorage(t)+"\n\t\talert "+alertURL, "")
	body := []byte(`{"kind":"k"}`)

	for _, bad := range []string{`{"for":"soon"}`, `{"reason":"x","color":"red"}`, `{"accept":"yes"}`} {
		if code, m := admin(t, "POST", "/webhooks/sources/gen/pause", bad); code != 400 {
			t.Errorf("pause %s: %d %v, want 400", bad, code, m)
		}
	}
	if code, m := admin(t, "POST", "/webhooks/sources/gen/destinations/nope/pause", ""); code != 404 {
		t.Errorf("unknown destination: %d %v, want 404", code, m)
	}

	if code, m := admin(t, "POST", "/webhooks/sources/gen/pause", `{"reason":"maintenance"}`); code != 200 {
		t.Fatalf("pause: %d %v", code, m)
	}
	resp, m := post(t, "/hooks/gen", body, signedHeaders(body, "ref-1"))
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "60" || m["code"] != "SERVICE_UNAVAILABLE" {
		t.Fatalf("refused: %d Retry-After %q %v", resp.StatusCode, resp.Header.Get("Retry-After"), m)
	}
	// changed without resuming: now a hold
	if code, m := admin(t, "POST", "/webhooks/sources/gen/pause", `{"reason":"maintenance","accept":true}`); code != 200 {
		t.Fatalf("change: %d %v", code, m)
	}
	if resp, m := post(t, "/hooks/gen", body, signedHeaders(body, "ref-2")); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("after the change to hold: %d %v", resp.StatusCode, m)
	}
	up.none(t, 500*time.Millisecond)

	// refuse for 2s: Retry-After counts down, then it resumes by itself
	if code, m := admin(t, "POST", "/webhooks/sources/gen/pause", `{"for":"2s"}`); code != 200 {
		t.Fatalf("pause for 2s: %d %v", code, m)
	}
	resp, _ = post(t, "/hooks/gen", body, signedHeaders(body, "ref-3"))
	if ra, _ := strconv.Atoi(resp.Header.Get("Retry-After")); resp.StatusCode != 503 || ra < 1 || ra > 2 {
		t.Fatalf("refused for 2s: %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if r := up.next(t, 5*time.Second); r.Header.Get("Webhook-Id") != "ref-2" {
		t.Fatalf("after the automatic resume got %s, want the held ref-2", r.Header.Get("Webhook-Id"))
	}
	if resp, m := post(t, "/hooks/gen", body, signedHeaders(body, "ref-3")); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("after the automatic resume: %d %v", resp.StatusCode, m)
	}
	up.next(t, 5*time.Second)
	nextAlert(t, alerts, "resumed automatically")
	_, st := admin(t, "GET", "/webhooks/stats", "")
	if pauses, _ := st["pauses"].([]any); len(pauses) != 0 || st["paused_sources"] != nil {
		t.Errorf("stats after the automatic resume: %v", st)
	}
	select {
	case text := <-alerts:
		if strings.Contains(text, "resumed") {
			t.Errorf("a second resume alert: %q", text)
		}
	case <-time.After(1500 * time.Millisecond):
	}
}

// TestPauseDestination: pausing one destination holds its deliveries only
// (the ingress keeps accepting, the other destination keeps flowing);
// stats count what waits for it; its resume delivers them.
func TestPauseDestination(t *testing.T) {
	a, b := newUpstream(t), newUpstream(t)
	startCaddy(t, a, "", fmt.Sprintf(`
	webhook_ingress /hooks/fan2 fan2 {
		verify none
		id_from header Idempotency-Key
		destination a %s/in/a
		destination b %s/in/b
	}`, a.URL, b.URL))
	// a refusing pause of a destination is a hold: other destinations flow
	if code, m := admin(t, "POST", "/webhooks/sources/fan2/destinations/b/pause", `{"reason":"b is down","for":"1h"}`); code != 200 {
		t.Fatalf("pause b: %d %v", code, m)
	}
	for i := range 3 {
		if resp, m := post(t, "/hooks/fan2", []byte(`{}`), map[string]string{"Idempotency-Key": fmt.Sprintf("d-%d", i)}); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("event %d: %d %v", i, resp.StatusCode, m)
		}
	}
	for range 3 {
		if r := a.next(t, 5*time.Second); r.Path != "/in/a" {
			t.Fatalf("a got %s", r.Path)
		}
	}
	b.none(t, 1500*time.Millisecond)
	_, st := admin(t, "GET", "/webhooks/stats", "")
	pauses, _ := st["pauses"].([]any)
	if len(pauses) != 1 || st["paused_sources"] != nil {
		t.Fatalf("stats: %v", st)
	}
	if p := pauses[0].(map[string]any); p["destination"] != "b" || p["mode"] != "hold" || p["waiting"] != float64(3) || p["until"] == nil {
		t.Errorf("stats pause %v", p)
	}
	if code, m := admin(t, "POST", "/webhooks/sources/fan2/destinations/b/resume", ""); code != 200 || m["resumed"] == nil {
		t.Fatalf("resume b: %d %v", code, m)
	}
	for range 3 {
		if r := b.next(t, 5*time.Second); r.Path != "/in/b" {
			t.Fatalf("b got %s", r.Path)
		}
	}
}
