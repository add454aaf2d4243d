package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestCLI drives `caddy webhooks ...` against a running Caddy: an event
// dead-lettered by a 422 is listed, shown, retried and then delivered.
func TestCLI(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	delivered := make(chan string, 10)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if fail.Load() {
			w.WriteHeader(http.StatusUnprocessableEntity)
			return
		}
		delivered <- r.Header.Get("Webhook-Id")
	}))
	defer up.Close()
	dir := t.TempDir()
	adminP, httpP := freePort(t), freePort(t)
	cfg := writeConfig(t, dir, adminP, httpP, up.URL, "", "")
	n := startNode(t, dir, cfg, adminP, httpP)
	addr := fmt.Sprintf("127.0.0.1:%d", adminP)

	cli := func(args ...string) (string, error) {
		args = append(append([]string{"webhooks"}, args...), "--address", addr)
		out, err := exec.Command(n.bin, args...).CombinedOutput()
		return string(out), err
	}
	req, _ := http.NewRequest("POST", fmt.Sprintf("http://127.0.0.1:%d/hooks/t", httpP), bytes.NewBufferString(`{"cli":"payload-marker"}`))
	req.Header.Set("Idempotency-Key", "cli-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 202 {
		t.Fatalf("post: %v %v", resp, err)
	}
	resp.Body.Close()

	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := cli("stats", "--json")
		var st struct{ Queue struct{ Dead int } }
		if err == nil && json.Unmarshal([]byte(out), &st) == nil && st.Queue.Dead == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stats never showed the dead event: %s %v", out, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var out string
	deadline = time.Now().Add(10 * time.Second)
	for { // counts reach the store within a couple of seconds
		js, err := cli("stats", "--json")
		var st struct {
			Sources map[string]struct {
				LastHour struct{ Received, Dead int } `json:"last_hour"`
			}
		}
		if err == nil && json.Unmarshal([]byte(js), &st) == nil && st.Sources["t"].LastHour.Dead == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	out, err = cli("stats")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || len(lines) < 8 || !strings.HasPrefix(lines[0], "QUEUED") || strings.Join(strings.Fields(lines[1]), " ") != "0 0 1 -" ||
		strings.Join(strings.Fields(lines[4]), " ") != "t 0 0 1" ||
		!strings.HasPrefix(lines[6], "SOURCE") || strings.Join(strings.Fields(lines[7]), " ") != "t last hour 1 0 0 0 1 0.0% 100.0% 1.00" {
		t.Fatalf("stats table: %v\n%s", err, out)
	}
	// the window's counters, by source with health
	out, err = cli("stats", "--from", "1h", "--source", "t")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); err != nil || len(lines) < 5 || !strings.HasPrefix(lines[3], "SOURCE") ||
		!strings.HasPrefix(strings.Join(strings.Fields(lines[4]), " "), "t 1 0 0 1 1 0 0.00 0.0% 100.0% 1 ") {
		t.Fatalf("stats --from 1h --source t: %v\n%s", err, out)
	}
	out, err = cli("dlq", "list", "--source", "t", "--status", "pending")
	if err != nil || !strings.Contains(out, "cli-1") || !strings.Contains(out, "pending") || !strings.Contains(out, "422") {
		t.Fatalf("dlq list: %v\n%s", err, out)
	}
	out, err = cli("dlq", "list", "--json")
	var page struct {
		Entries []struct{ ID, EventID string } `json:"entries"`
	}
	if err != nil || json.Unmarshal([]byte(out), &page) != nil || len(page.Entries) != 1 {
		t.Fatalf("dlq list --json: %v\n%s", err, out)
	}
	id := page.Entries[0].ID
	out, err = cli("dlq", "show", id)
	if err != nil || !strings.Contains(out, "payload-marker") || !strings.Contains(out, "upstream answered 422") {
		t.Fatalf("dlq show: %v\n%s", err, out)
	}

	fail.Store(false)
	out, err = cli("dlq", "retry", id)
	if err != nil || !strings.Contains(out, id+": retried") {
		t.Fatalf("dlq retry: %v\n%s", err, out)
	}
	select {
	case got := <-delivered:
		if got != "cli-1" {
			t.Fatalf("delivered %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the retried event was not delivered")
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		out, err = cli("events", "t", "cli-1")
		if err == nil && strings.Contains(out, "delivered") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("events: %v\n%s", err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// pause, bulk retry, resume
	if out, err := cli("pause", "t"); err != nil || !strings.Contains(out, "t: paused") {
		t.Fatalf("pause: %v\n%s", err, out)
	}
	if out, err := cli("stats", "--json"); err != nil || !strings.Contains(out, `"t"`) {
		t.Fatalf("stats while paused: %v\n%s", err, out)
	}
	if out, err := cli("resume", "t"); err != nil || !strings.Contains(out, "t: resumed") {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	if out, err := cli("dlq", "retry", "--source", "t", "--dry-run"); err != nil || !strings.Contains(out, "matched 0") {
		t.Fatalf("bulk dry run with nothing pending: %v\n%s", err, out)
	}
	if out, err := cli("dlq", "discard", "no-such-id", "--reason", "x"); err == nil || !strings.Contains(out, "404") {
		t.Fatalf("discard of an unknown id: %v\n%s", err, out)
	}
	if out, err := cli("dlq", "retry", id); err == nil || !strings.Contains(out, "409") {
		t.Fatalf("second retry: %v\n%s", err, out)
	}
}
