package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/testing/redistest"
)

// adminDo calls the node's admin API and decodes its JSON answer into v
// (nil: not decoded).
func adminDo(t *testing.T, adminP int, method, path, body string, v any) int {
	t.Helper()
	req, _ := http.NewRequest(method, fmt.Sprintf("http://127.0.0.1:%d%s", adminP, path), strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if v != nil {
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, raw, err)
		}
	}
	return resp.StatusCode
}

// rekeyState is the part of GET /webhooks/rekey the test reads.
type rekeyState struct {
	State    string
	Started  bool
	KeyID    string `json:"key_id"`
	Scanned  int
	Resealed int
	Failed   int
	Error    string
}

// bodyUpstream answers 400 (a permanent failure: dead-lettered) to the
// events whose id starts with "dead-" and 200 to the others, keeping the
// body each id was delivered with.
type bodyUpstream struct {
	*httptest.Server
	mu     sync.Mutex
	bodies map[string][]byte
}

func newBodyUpstream(t *testing.T) *bodyUpstream {
	u := &bodyUpstream{bodies: make(map[string][]byte)}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		id := r.Header.Get("Webhook-Id")
		if strings.HasPrefix(id, "dead-") {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		u.mu.Lock()
		u.bodies[id] = body
		u.mu.Unlock()
	}))
	t.Cleanup(u.Close)
	return u
}

// rekeyBody is the body of event id: a marker that must come back intact
// through every re-encryption.
func rekeyBody(id string) string { return fmt.Sprintf(`{"id":%q,"marker":"rekey-kill9-%s"}`, id, id) }

// postEvents posts the events prefix-0..n-1 with rekeyBody and returns the
// ids answered 202.
func postEvents(t *testing.T, httpP int, prefix string, n int) []string {
	t.Helper()
	var acked []string
	client := &http.Client{Timeout: 5 * time.Second}
	for i := range n {
		id := fmt.Sprintf("%s-%d", prefix, i)
		req, _ := http.NewRequest("POST", fmt.Sprintf("http://127.0.0.1:%d/hooks/t", httpP), strings.NewReader(rekeyBody(id)))
		req.Header.Set("Idempotency-Key", id)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("posting %s: %v", id, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("posting %s: %d", id, resp.StatusCode)
		}
		acked = append(acked, id)
	}
	return acked
}

// TestRekeyKill9 (issue "Protect the data"): a rekey killed with SIGKILL
// midway, on the embedded store and on Redis, then started again, leaves
// every record readable under the new key alone. Before: events queued
// (held by a pause) and dead-lettered under key A. The node restarts with
// keys B, A; a paced rekey runs while events keep arriving, and the node
// is killed once part of the records are re-encrypted. Restarted, the
// rekey resumes where it stopped (its saved progress), finishes with no
// failure; the node restarts with key B alone: every DLQ entry reads with
// its exact payload and every accepted event is delivered with its exact
// body, none dead-lettered for a missing key.
func TestRekeyKill9(t *testing.T) {
	keyA := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xa1}, 32))
	keyB := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xb2}, 32))
	t.Setenv("HOOKLINE_KEY_A", keyA)
	t.Setenv("HOOKLINE_KEY_B", keyB)
	for _, tc := range []struct {
		name    string
		storage func(t *testing.T, dir string) string
	}{
		{"embedded", func(t *testing.T, dir string) string { return "" }},
		{"redis", func(t *testing.T, dir string) string { return redisStorage(redistest.Start(t).Addr) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newBodyUpstream(t)
			dir := t.TempDir()
			store := tc.storage(t, dir)
			if store == "" {
				store = "storage embedded " + dir + "/events.db"
			}
			adminP, httpP := freePort(t), freePort(t)
			config := func(keys string) string {
				// a rate_limit of its own: the backlog does not drain at
				// the catch-up pace of a resumed pause (100/s)
				return writeConfig(t, dir, adminP, httpP, up.URL, store+"\n\t\tencryption_key "+keys, "rate_limit 5000/s")
			}
			// start runs the node and waits for its webhooks app (Caddy
			// may start it after the HTTP server)
			start := func(keys string) *node {
				n := startNode(t, dir, config(keys), adminP, httpP)
				waitFor(t, 20*time.Second, func() bool {
					return adminDo(t, adminP, "GET", "/webhooks/stats", "", nil) == 200
				}, "the webhooks app")
				return n
			}

			// under key A: 10 dead letters, then 1500 events held by a pause
			n := start("{env.HOOKLINE_KEY_A}")
			dead := postEvents(t, httpP, "dead", 10)
			waitFor(t, 20*time.Second, func() bool {
				var page struct{ Entries []json.RawMessage }
				adminDo(t, adminP, "GET", "/webhooks/dlq?source=t&limit=100", "", &page)
				return len(page.Entries) == len(dead)
			}, "the dead letters")
			if code := adminDo(t, adminP, "POST", "/webhooks/sources/t/pause", `{"accept":true,"reason":"rekey test"}`, nil); code != 200 {
				t.Fatalf("pause: %d", code)
			}
			acked := postEvents(t, httpP, "held", 1500)
			n.kill()

			// keys B, A: a paced rekey, killed midway while events arrive
			n = start("{env.HOOKLINE_KEY_B} {env.HOOKLINE_KEY_A}")
			var st rekeyState
			if code := adminDo(t, adminP, "POST", "/webhooks/rekey", `{"batch":5,"pause":"5ms"}`, &st); code != 202 || !st.Started {
				t.Fatalf("rekey: %d %+v", code, st)
			}
			live := make(chan []string)
			stop := make(chan struct{})
			go func() { live <- send(sendOpts{ports: []int{httpP}, prefix: "live", n: 100000, conc: 2, stop: stop}) }()
			waitFor(t, 60*time.Second, func() bool {
				adminDo(t, adminP, "GET", "/webhooks/rekey", "", &st)
				return st.Resealed >= 300 || st.State != "running"
			}, "the rekey's first 300 records")
			n.kill()
			close(stop)
			acked = append(acked, <-live...)
			if st.State != "running" {
				t.Fatalf("the rekey ended before the kill: %+v", st)
			}
			t.Logf("killed at %d records scanned, %d re-encrypted", st.Scanned, st.Resealed)

			n = start("{env.HOOKLINE_KEY_B} {env.HOOKLINE_KEY_A}")
			var resumed rekeyState
			if code := adminDo(t, adminP, "POST", "/webhooks/rekey", "", &resumed); code != 202 || !resumed.Started || resumed.Scanned < st.Scanned {
				t.Fatalf("rekey after the kill: %d %+v, want it resumed from %d scanned", code, resumed, st.Scanned)
			}
			waitFor(t, 60*time.Second, func() bool {
				adminDo(t, adminP, "GET", "/webhooks/rekey", "", &st)
				return st.State != "running"
			}, "the resumed rekey")
			if st.State != "done" || st.Failed != 0 || st.Error != "" || st.Resealed < 1500 {
				t.Fatalf("resumed rekey: %+v", st)
			}
			n.kill()

			// key B alone: everything reads and is delivered as it was sent
			n = start("{env.HOOKLINE_KEY_B}")
			var page struct {
				Entries []struct {
					ID      string `json:"id"`
					EventID string `json:"event_id"`
				}
			}
			adminDo(t, adminP, "GET", "/webhooks/dlq?source=t&limit=100", "", &page)
			if len(page.Entries) != len(dead) {
				t.Fatalf("%d DLQ entries after the rekey, want the %d dead letters", len(page.Entries), len(dead))
			}
			for _, e := range page.Entries {
				var view struct{ Payload string }
				if code := adminDo(t, adminP, "GET", "/webhooks/dlq/"+e.ID, "", &view); code != 200 || view.Payload != rekeyBody(e.EventID) {
					t.Fatalf("DLQ entry %s under key B alone: %d %+v", e.ID, code, view)
				}
			}
			if code := adminDo(t, adminP, "POST", "/webhooks/sources/t/resume", "", nil); code != 200 {
				t.Fatalf("resume: %d", code)
			}
			missing := func() (ids []string) {
				up.mu.Lock()
				defer up.mu.Unlock()
				for _, id := range acked {
					if up.bodies[id] == nil {
						ids = append(ids, id)
					}
				}
				return ids
			}
			deadline := time.Now().Add(60 * time.Second)
			for m := missing(); len(m) > 0; m = missing() {
				if time.Now().After(deadline) {
					var ev map[string]any
					code := adminDo(t, adminP, "GET", "/webhooks/events/t/"+m[0], "", &ev)
					var stats map[string]any
					adminDo(t, adminP, "GET", "/webhooks/stats", "", &stats)
					t.Fatalf("%d of %d accepted events never delivered (first %v); %s: %d %v\nstats %v\nlogs:\n%s", len(m), len(acked), m[:min(5, len(m))], m[0], code, ev, stats, n.logs)
				}
				time.Sleep(50 * time.Millisecond)
			}
			up.mu.Lock()
			defer up.mu.Unlock()
			for _, id := range acked {
				want := rekeyBody(id)
				if strings.HasPrefix(id, "live-") { // send's body
					var i int
					fmt.Sscanf(id, "live-%d", &i)
					want = fmt.Sprintf(`{"id":%q,"pad":"%0500d"}`, id, i)
				}
				if got := string(up.bodies[id]); got != want {
					t.Fatalf("event %s delivered with %q, want %q", id, got, want)
				}
			}
			adminDo(t, adminP, "GET", "/webhooks/dlq?source=t&limit=100", "", &page)
			if len(page.Entries) != len(dead) {
				t.Fatalf("%d DLQ entries after the deliveries, want only the %d dead letters (a key missing?)", len(page.Entries), len(dead))
			}
			t.Logf("%d events (%d during the rekey) delivered intact, %d dead letters read under the new key alone", len(acked), len(acked)-1500, len(dead))
		})
	}
}

// waitFor polls cond every 20ms until it holds, failing after within.
func waitFor(t *testing.T, within time.Duration, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: not after %v", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
