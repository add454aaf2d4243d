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
	"testing"
	"time"
)

// TestPauseForSurvivesRestart: a hold set with `caddy webhooks pause --for
// 2s --accept` is kept in the store: the event accepted during it is not
// delivered before the pause's end although the node is killed and started
// again meanwhile, and it is delivered right after, with no resume.
func TestPauseForSurvivesRestart(t *testing.T) {
	arrived := make(chan time.Time, 10)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		arrived <- time.Now()
	}))
	defer up.Close()
	dir := t.TempDir()
	adminP, httpP := freePort(t), freePort(t)
	cfg := writeConfig(t, dir, adminP, httpP, up.URL, "", "")
	n := startNode(t, dir, cfg, adminP, httpP)
	cli := func(args ...string) (string, error) {
		args = append(append([]string{"webhooks"}, args...), "--address", fmt.Sprintf("127.0.0.1:%d", adminP))
		out, err := exec.Command(n.bin, args...).CombinedOutput()
		return string(out), err
	}

	out, err := cli("pause", "t", "--for", "2s", "--accept", "--reason", "deploy", "--json")
	var ans struct {
		Pause struct {
			Mode  string
			Until time.Time
		}
	}
	if err != nil || json.Unmarshal([]byte(out), &ans) != nil || ans.Pause.Mode != "hold" || ans.Pause.Until.IsZero() {
		t.Fatalf("pause: %s %v", out, err)
	}
	if out, err := cli("stats"); err != nil || !strings.Contains(out, "hold") || !strings.Contains(out, "deploy") {
		t.Errorf("stats does not show the pause: %s %v", out, err)
	}
	req, _ := http.NewRequest("POST", fmt.Sprintf("http://127.0.0.1:%d/hooks/t", httpP), bytes.NewBufferString(`{}`))
	req.Header.Set("Idempotency-Key", "held-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 202 {
		t.Fatalf("post during the hold: %v %v", resp, err)
	}
	resp.Body.Close()

	n.kill()
	n = startNode(t, dir, cfg, adminP, httpP)
	restarted := time.Now()
	select {
	case at := <-arrived:
		if at.Before(ans.Pause.Until) {
			t.Fatalf("delivered %v before the pause's end (restarted %v before it)", ans.Pause.Until.Sub(at), ans.Pause.Until.Sub(restarted))
		}
		if late := at.Sub(ans.Pause.Until); late > 3*time.Second {
			t.Errorf("delivered %v after the pause's end", late)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the held event was not delivered after the pause's end; logs:\n%s", n.logs)
	}
	t.Logf("restarted %v before the pause's end", ans.Pause.Until.Sub(restarted))
	if out, err := cli("stats", "--json"); err != nil || !strings.Contains(out, `"pauses": []`) {
		t.Errorf("stats after the automatic resume: %s %v", out, err)
	}
}
