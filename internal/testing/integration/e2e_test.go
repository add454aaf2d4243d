package integration

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddytest"

	_ "github.com/caddyserver/caddy/v2/modules/standard"
	_ "github.com/hookline/hookline"
	"github.com/hookline/hookline/internal/storagemodules"
	"github.com/hookline/hookline/internal/testing/caddyrun"
	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded"
)

// Ports of this package's Caddy (caddytest's admin port is 2999).
const (
	adminPort = 2999
	adminAddr = "http://localhost:2999"
	httpPort  = 9080
	secret    = "e2e-secret"
)

// upstream is a real HTTP server standing in for the user's app. respond
// decides each answer; every request is recorded.
type upstream struct {
	*httptest.Server
	mu      sync.Mutex
	reqs    []recorded
	arrived chan recorded
	respond atomic.Pointer[func(n int, w http.ResponseWriter)]
}

type recorded struct {
	At     time.Time
	Header http.Header
	Body   []byte
	Path   string
	TLS    *tls.ConnectionState // over https: the connection's state
}

func newUpstream(t testing.TB) *upstream {
	u := &upstream{arrived: make(chan recorded, 1000)}
	u.Server = httptest.NewServer(u.handler())
	t.Cleanup(u.Close)
	return u
}

// handler records each request and answers it as respond says.
func (u *upstream) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec := recorded{At: time.Now(), Header: r.Header.Clone(), Body: body, Path: r.URL.Path, TLS: r.TLS}
		u.mu.Lock()
		u.reqs = append(u.reqs, rec)
		n := len(u.reqs)
		u.mu.Unlock()
		if f := u.respond.Load(); f != nil {
			(*f)(n, w)
		} else {
			w.WriteHeader(http.StatusOK)
		}
		u.arrived <- rec
	})
}

func (u *upstream) setRespond(f func(n int, w http.ResponseWriter)) { u.respond.Store(&f) }

// setRespondByPath answers each request as f says for its path (one
// upstream standing for several apps behind one reverse proxy).
func (u *upstream) setRespondByPath(f func(path string, w http.ResponseWriter)) {
	u.setRespond(func(n int, w http.ResponseWriter) {
		u.mu.Lock()
		path := u.reqs[n-1].Path
		u.mu.Unlock()
		f(path, w)
	})
}

// failWith makes the upstream answer status while the returned switch is
// on (it starts as failing says) and 200 once it is turned off: the
// operator fixing the app.
func (u *upstream) failWith(status int, failing bool) *atomic.Bool {
	fail := new(atomic.Bool)
	fail.Store(failing)
	u.setRespond(func(n int, w http.ResponseWriter) {
		if fail.Load() {
			w.WriteHeader(status)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	return fail
}

func (u *upstream) next(t testing.TB, within time.Duration) recorded {
	t.Helper()
	select {
	case r := <-u.arrived:
		return r
	case <-time.After(within):
		t.Fatalf("no upstream request within %s", within)
	}
	return recorded{}
}

func (u *upstream) none(t *testing.T, within time.Duration) {
	t.Helper()
	select {
	case r := <-u.arrived:
		t.Fatalf("unexpected upstream request with attempt %s", r.Header.Get("X-Webhook-Attempt"))
	case <-time.After(within):
	}
}

func sign(body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// startCaddy loads a config with a generic HMAC source, an unsigned
// source and a timestamped one, all forwarding to up.
func startCaddy(t testing.TB, up *upstream, storageLine, extra string) *caddytest.Tester {
	t.Helper()
	return startCaddyWith(t, up, "", storageLine, extra)
}

// startCaddyWith is startCaddy with more global options (global), such as
// log blocks.
func startCaddyWith(t testing.TB, up *upstream, global, storageLine, extra string) *caddytest.Tester {
	t.Helper()
	tester := caddytest.NewTester(t)
	if storageLine == "" {
		storageLine = defaultStorage(t)
	}
	cfg := fmt.Sprintf(`{
	admin localhost:2999
	http_port %d
	https_port 9443
	grace_period 1ns
	skip_install_trust
	%s
	webhooks {
		%s
		lease 30s
	}
}
http://localhost:%d {
	webhook_ingress /hooks/gen gen {
		verify hmac %s {
			header X-Signature
			prefix sha256=
		}
		forward_to %s/in/gen
		id_from header Idempotency-Key
		type_from json kind
		max_body 1KB
		require_json
		timeout 2s
		block_failures off  # guards outlive reloads: the tests' deliberate failures would add up
		retry {
			max_attempts 3
			backoff 200ms 400ms jitter 0
		}
	}
	webhook_ingress /hooks/ts ts {
		verify hmac %s {
			header X-Signature
			timestamp_header X-Timestamp
			tolerance 1m
		}
		forward_to %s/in/ts
	}
	webhook_ingress /hooks/plain plain {
		verify none
		forward_to %s/in/plain
		ack_status 200
	}
	%s
}
`, httpPort, global, storageLine, httpPort, secret, up.URL, secret, up.URL, up.URL, extra)
	tester.InitServer(cfg, "caddyfile")
	caddyrun.UnloadAtEnd(t, adminPort)
	return tester
}

// storageOverride, when set, gives the storage line of startCaddy's
// configs (TestEndToEndOnRedis runs the tests again on Redis).
var storageOverride func(t testing.TB) string

func defaultStorage(t testing.TB) string {
	if storageOverride != nil {
		return storageOverride(t)
	}
	return "storage embedded " + filepath.Join(t.TempDir(), "events.db")
}

// TestEndToEndOnRedis runs the end-to-end tests again with the Redis store,
// on a throwaway redis-server.
func TestEndToEndOnRedis(t *testing.T) {
	srv := redistest.Start(t)
	n := 0
	storageOverride = func(testing.TB) string {
		n++ // a fresh key space per test
		return fmt.Sprintf("storage redis {\n\t\t\taddress redis://%s/0\n\t\t\tkey_prefix e2e%d\n\t\t\tpartitions 4\n\t\t}", srv.Addr, n)
	}
	defer func() { storageOverride = nil }()
	for _, tc := range []struct {
		name string
		fn   func(*testing.T)
	}{
		{"HappyPathByteExact", TestHappyPathByteExact},
		{"Duplicate", TestDuplicate},
		{"ErrorCodes", TestErrorCodes},
		{"RetriesWithBackoff", TestRetriesWithBackoff},
		{"RetryAfterHonoured", TestRetryAfterHonoured},
		{"PermanentToDLQAndAdminRetry", TestPermanentToDLQAndAdminRetry},
		{"EventTypes", TestEventTypes},
		{"Replay", TestReplay},
		{"ReplayLaneLeavesLiveTrafficAlone", TestReplayLaneLeavesLiveTrafficAlone},
		{"FanOut", TestFanOut},
		{"OrderedBlocksOnDead", TestOrderedBlocksOnDead},
		{"PauseHold", TestPauseHold},
		{"PauseRefuse", TestPauseRefuse},
		{"PauseDestination", TestPauseDestination},
		{"Erase", TestErase},
		{"EventBrowser", TestEventBrowser},
		{"Tenants", TestTenants},
		{"TenantFilters", TestTenantFilters},
		{"FairTenants", TestFairTenants},
		{"TenantStats", TestTenantStats},
		{"TenantPause", TestTenantPause},
		{"EncryptionKeyMissing", TestEncryptionKeyMissing},
	} {
		t.Run(tc.name, tc.fn)
	}
}

func post(t testing.TB, path string, body []byte, hdr map[string]string) (*http.Response, map[string]any) {
	t.Helper()
	return do(t, newPost(t, path, body, hdr))
}

// postRaw is post for an answer that is not JSON (a handshake's text):
// its body as sent.
func postRaw(t testing.TB, path string, body []byte, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(newPost(t, path, body, hdr))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp, raw
}

// newPost is a POST of body to path on the test Caddy, with hdr.
func newPost(t testing.TB, path string, body []byte, hdr map[string]string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("http://localhost:%d%s", httpPort, path), bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return req
}

func do(t testing.TB, req *http.Request) (*http.Response, map[string]any) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%s %s: body is not JSON: %q", req.Method, req.URL, raw)
		}
	}
	return resp, m
}

func admin(t *testing.T, method, path string, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, adminAddr+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, m := do(t, req)
	return resp.StatusCode, m
}

func signedHeaders(body []byte, id string) map[string]string {
	h := map[string]string{"Content-Type": "application/json", "X-Signature": sign(body), "X-Custom": "kept"}
	if id != "" {
		h["Idempotency-Key"] = id
	}
	return h
}

func TestHappyPathByteExact(t *testing.T) {
	up := newUpstream(t)
	startCaddy(t, up, "", "")
	body := []byte(`{"type":"invoice.paid", "amount": 42,` + "\n" + `"note":"caf\u00e9 ☕"}`)
	resp, m := post(t, "/hooks/gen", body, signedHeaders(body, "evt_1"))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("status %d, body %v", resp.StatusCode, m)
	}
	if m["message"] != "Webhook accepted for processing" || m["event_id"] != "evt_1" {
		t.Fatalf("body %v", m)
	}
	got := up.next(t, 5*time.Second)
	if !bytes.Equal(got.Body, body) {
		t.Fatalf("upstream body %q, want %q", got.Body, body)
	}
	if got.Path != "/in/gen" {
		t.Errorf("path %q", got.Path)
	}
	want := map[string]string{
		"Webhook-Id":        "evt_1",
		"X-Webhook-Source":  "gen",
		"X-Webhook-Attempt": "1",
		"X-Custom":          "kept",
		"X-Signature":       sign(body),
		"Content-Type":      "application/json",
		"Idempotency-Key":   "evt_1",
	}
	for k, v := range want {
		if got.Header.Get(k) != v {
			t.Errorf("upstream header %s = %q, want %q", k, got.Header.Get(k), v)
		}
	}
	ra, err := time.Parse(time.RFC3339, got.Header.Get("X-Webhook-Received-At"))
	if err != nil || time.Since(ra) > time.Minute {
		t.Errorf("X-Webhook-Received-At %q: %v", got.Header.Get("X-Webhook-Received-At"), err)
	}
	if got.Header.Get("Connection") == "close" {
		t.Errorf("hop-by-hop header forwarded")
	}
	up.none(t, 300*time.Millisecond)

	// the event is visible as delivered
	waitFor(t, func() bool {
		code, ev := admin(t, "GET", "/webhooks/events/gen/evt_1", "")
		return code == 200 && ev["status"] == "delivered"
	})

	// ack_status 200 and an event without id (generated, never deduplicated)
	for i := 0; i < 2; i++ {
		resp, m = post(t, "/hooks/plain", []byte("plain text"), nil)
		if resp.StatusCode != http.StatusOK || m["message"] != "Webhook accepted for processing" || m["event_id"] == "" {
			t.Fatalf("plain: %d %v", resp.StatusCode, m)
		}
		if r := up.next(t, 5*time.Second); string(r.Body) != "plain text" {
			t.Fatalf("plain body %q", r.Body)
		}
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestDuplicate(t *testing.T) {
	up := newUpstream(t)
	hold := make(chan struct{})
	up.setRespond(func(n int, w http.ResponseWriter) { <-hold; w.WriteHeader(200) })
	startCaddy(t, up, "", "")
	body := []byte(`{"a":1}`)
	resp, _ := post(t, "/hooks/gen", body, signedHeaders(body, "dup-1"))
	if resp.StatusCode != 202 {
		t.Fatalf("first: %d", resp.StatusCode)
	}
	// while the first delivery hangs, the duplicate is "queued"
	resp, m := post(t, "/hooks/gen", body, signedHeaders(body, "dup-1"))
	if resp.StatusCode != 200 || m["message"] != "Webhook already processed" || m["event_id"] != "dup-1" || m["status"] != "queued" {
		t.Fatalf("duplicate: %d %v", resp.StatusCode, m)
	}
	close(hold)
	up.next(t, 5*time.Second)
	waitFor(t, func() bool {
		resp, m := post(t, "/hooks/gen", body, signedHeaders(body, "dup-1"))
		return resp.StatusCode == 200 && m["status"] == "delivered"
	})
	up.none(t, 300*time.Millisecond)
	// the same id in another source is another event
	resp, _ = post(t, "/hooks/plain", body, map[string]string{"Idempotency-Key": "dup-1"})
	if resp.StatusCode != 200 {
		t.Fatalf("other source: %d", resp.StatusCode)
	}
	if r := up.next(t, 5*time.Second); r.Path != "/in/plain" {
		t.Fatalf("path %q", r.Path)
	}
}

func TestErrorCodes(t *testing.T) {
	up := newUpstream(t)
	startCaddy(t, up, "", "")
	okBody := []byte(`{"a":1}`)
	big := bytes.Repeat([]byte("x"), 2048)
	now := strconv.FormatInt(time.Now().Unix(), 10)
	stale := strconv.FormatInt(time.Now().Add(-2*time.Minute).Unix(), 10)
	tsSig := func(ts string, body []byte) string {
		m := hmac.New(sha256.New, []byte(secret))
		m.Write([]byte(ts + "." + string(body)))
		return hex.EncodeToString(m.Sum(nil))
	}
	tests := []struct {
		name   string
		method string
		path   string
		body   io.Reader
		hdr    map[string]string
		status int
		code   string
	}{
		{"get", "GET", "/hooks/gen", nil, nil, 405, "METHOD_NOT_ALLOWED"},
		{"put", "PUT", "/hooks/gen", bytes.NewReader(okBody), nil, 405, "METHOD_NOT_ALLOWED"},
		{"too large by length", "POST", "/hooks/gen", bytes.NewReader(big), signedHeaders(big, ""), 413, "PAYLOAD_TOO_LARGE"},
		{"too large streamed", "POST", "/hooks/gen", io.MultiReader(bytes.NewReader(big)), signedHeaders(big, ""), 413, "PAYLOAD_TOO_LARGE"},
		{"missing signature", "POST", "/hooks/gen", bytes.NewReader(okBody), map[string]string{"Content-Type": "application/json"}, 401, "INVALID_SIGNATURE_FORMAT"},
		{"wrong prefix", "POST", "/hooks/gen", bytes.NewReader(okBody), map[string]string{"X-Signature": strings.Replace(sign(okBody), "sha256=", "sha1=", 1)}, 401, "INVALID_SIGNATURE_FORMAT"},
		{"wrong signature", "POST", "/hooks/gen", bytes.NewReader(okBody), map[string]string{"X-Signature": sign([]byte(`{"a":2}`))}, 401, "UNAUTHORIZED"},
		{"not json", "POST", "/hooks/gen", bytes.NewReader([]byte("not json")), map[string]string{"X-Signature": sign([]byte("not json"))}, 400, "INVALID_JSON"},
		{"stale timestamp", "POST", "/hooks/ts", bytes.NewReader(okBody), map[string]string{"X-Timestamp": stale, "X-Signature": tsSig(stale, okBody)}, 401, "INVALID_TIMESTAMP"},
		{"bad timestamp", "POST", "/hooks/ts", bytes.NewReader(okBody), map[string]string{"X-Timestamp": "yesterday", "X-Signature": tsSig("yesterday", okBody)}, 401, "INVALID_SIGNATURE_FORMAT"},
		{"fresh timestamp", "POST", "/hooks/ts", bytes.NewReader(okBody), map[string]string{"X-Timestamp": now, "X-Signature": tsSig(now, okBody)}, 202, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, fmt.Sprintf("http://localhost:%d%s", httpPort, tc.path), tc.body)
			if tc.name == "too large streamed" {
				req.ContentLength = -1 // chunked: the limit must hold without a length
			}
			for k, v := range tc.hdr {
				req.Header.Set(k, v)
			}
			resp, m := do(t, req)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d (%v)", resp.StatusCode, tc.status, m)
			}
			if tc.code != "" {
				if m["code"] != tc.code || m["error"] == "" {
					t.Fatalf("body %v, want code %s", m, tc.code)
				}
				if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("content-type %q", ct)
				}
			}
			if tc.status == 405 && resp.Header.Get("Allow") != "POST" {
				t.Errorf("Allow %q", resp.Header.Get("Allow"))
			}
		})
	}
	// only the accepted one reached the upstream
	if r := up.next(t, 5*time.Second); r.Path != "/in/ts" {
		t.Fatalf("unexpected delivery to %s", r.Path)
	}
	up.none(t, 300*time.Millisecond)
}

func TestRetriesWithBackoff(t *testing.T) {
	up := newUpstream(t)
	up.setRespond(func(n int, w http.ResponseWriter) {
		if n < 3 {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	startCaddy(t, up, "", "")
	body := []byte(`{"retry":true}`)
	if resp, m := post(t, "/hooks/gen", body, signedHeaders(body, "r-1")); resp.StatusCode != 202 {
		t.Fatalf("%d %v", resp.StatusCode, m)
	}
	var times []time.Time
	for i := 1; i <= 3; i++ {
		r := up.next(t, 5*time.Second)
		if a := r.Header.Get("X-Webhook-Attempt"); a != strconv.Itoa(i) {
			t.Fatalf("attempt header %q, want %d", a, i)
		}
		if !bytes.Equal(r.Body, body) {
			t.Fatalf("retry body changed: %q", r.Body)
		}
		times = append(times, r.At)
	}
	// backoff 200ms then 400ms, no jitter
	if d := times[1].Sub(times[0]); d < 190*time.Millisecond || d > 900*time.Millisecond {
		t.Errorf("second attempt after %s, want about 200ms", d)
	}
	if d := times[2].Sub(times[1]); d < 390*time.Millisecond {
		t.Errorf("third attempt after %s, want >= 400ms", d)
	}
	up.none(t, 500*time.Millisecond)
	waitFor(t, func() bool {
		code, ev := admin(t, "GET", "/webhooks/events/gen/r-1", "")
		atts, _ := ev["attempts"].([]any)
		return code == 200 && ev["status"] == "delivered" && len(atts) == 3
	})
}

func TestRetryAfterHonoured(t *testing.T) {
	up := newUpstream(t)
	up.setRespond(func(n int, w http.ResponseWriter) {
		if n == 1 {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	startCaddy(t, up, "", "")
	body := []byte(`{"ra":1}`)
	post(t, "/hooks/gen", body, signedHeaders(body, "ra-1"))
	first := up.next(t, 5*time.Second)
	second := up.next(t, 6*time.Second)
	if d := second.At.Sub(first.At); d < 1900*time.Millisecond {
		t.Fatalf("retried %s after a Retry-After of 2s (backoff alone would be 200ms)", d)
	}
}

func TestPermanentToDLQAndAdminRetry(t *testing.T) {
	up := newUpstream(t)
	fail := up.failWith(http.StatusUnprocessableEntity, true)
	startCaddy(t, up, "", "")
	body := []byte(`{"perm":1}`)
	post(t, "/hooks/gen", body, signedHeaders(body, "p-1"))
	up.next(t, 5*time.Second)
	up.none(t, 700*time.Millisecond) // a 422 is not retried

	var entry map[string]any
	waitFor(t, func() bool {
		code, page := admin(t, "GET", "/webhooks/dlq?source=gen&status=pending", "")
		entries, _ := page["entries"].([]any)
		if code != 200 || len(entries) != 1 {
			return false
		}
		entry = entries[0].(map[string]any)
		return true
	})
	if entry["event_id"] != "p-1" || entry["last_status"] != float64(422) || entry["source"] != "gen" {
		t.Fatalf("entry %v", entry)
	}
	id := entry["id"].(string)
	code, full := admin(t, "GET", "/webhooks/dlq/"+id, "")
	if code != 200 || full["payload"] != string(body) || len(full["attempts"].([]any)) != 1 {
		t.Fatalf("get: %d %v", code, full)
	}
	if resp, m := post(t, "/hooks/gen", body, signedHeaders(body, "p-1")); resp.StatusCode != 200 || m["status"] != "dead" {
		t.Fatalf("duplicate of a dead event: %d %v", resp.StatusCode, m)
	}

	// the operator fixes the upstream and retries
	fail.Store(false)
	if code, m := admin(t, "POST", "/webhooks/dlq/"+id+"/retry", ""); code != 200 {
		t.Fatalf("retry: %d %v", code, m)
	}
	r := up.next(t, 5*time.Second)
	if !bytes.Equal(r.Body, body) || r.Header.Get("X-Webhook-Attempt") != "2" {
		t.Fatalf("redelivery: attempt %s body %q", r.Header.Get("X-Webhook-Attempt"), r.Body)
	}
	waitFor(t, func() bool {
		_, ev := admin(t, "GET", "/webhooks/events/gen/p-1", "")
		return ev["status"] == "delivered"
	})
	if code, full = admin(t, "GET", "/webhooks/dlq/"+id, ""); full["status"] != "retried" {
		t.Fatalf("entry after retry: %v", full)
	}
	if code, _ := admin(t, "POST", "/webhooks/dlq/"+id+"/retry", ""); code != http.StatusConflict {
		t.Fatalf("second retry: %d, want 409", code)
	}

	// the queue is empty again; one DLQ entry was retried, none is open
	if code, st := admin(t, "GET", "/webhooks/stats", ""); code != 200 ||
		fmt.Sprint(st["queue"]) != "map[dead:0 in_flight:0 queued:0]" {
		t.Fatalf("stats: %d %v", code, st)
	}

	// exhausted retries land in the DLQ too, and can be discarded
	fail.Store(false)
	up.setRespond(func(n int, w http.ResponseWriter) { w.WriteHeader(http.StatusServiceUnavailable) })
	body2 := []byte(`{"perm":2}`)
	post(t, "/hooks/gen", body2, signedHeaders(body2, "p-2"))
	for i := 0; i < 3; i++ {
		up.next(t, 5*time.Second)
	}
	var id2 string
	waitFor(t, func() bool {
		_, page := admin(t, "GET", "/webhooks/dlq?status=pending", "")
		entries, _ := page["entries"].([]any)
		if len(entries) != 1 {
			return false
		}
		id2 = entries[0].(map[string]any)["id"].(string)
		return strings.Contains(entries[0].(map[string]any)["error"].(string), "gave up after 3 attempts")
	})
	if code, m := admin(t, "POST", "/webhooks/dlq/"+id2+"/investigate", `{"note":"looking"}`); code != 200 || m["status"] != "investigating" {
		t.Fatalf("investigate: %d %v", code, m)
	}
	if code, m := admin(t, "POST", "/webhooks/dlq/"+id2+"/resolve", `{"resolution":"fixed by hand"}`); code != 200 || m["status"] != "resolved" {
		t.Fatalf("resolve: %d %v", code, m)
	}
	if _, full := admin(t, "GET", "/webhooks/dlq/"+id2, ""); full["resolution"] != "fixed by hand" {
		t.Fatalf("resolved entry %v", full)
	}
	if code, m := admin(t, "POST", "/webhooks/dlq/"+id2+"/discard", `{"reason":"test event"}`); code != 200 {
		t.Fatalf("discard: %d %v", code, m)
	}
	_, full = admin(t, "GET", "/webhooks/dlq/"+id2, "")
	if full["status"] != "discarded" || full["reason"] != "test event" {
		t.Fatalf("discarded entry %v", full)
	}
	// the DLQ gauge, read at scrape time (first scrape of this config)
	if m := scrape(t); !strings.Contains(m, `caddy_webhooks_dlq_entries{source="gen",status="discarded"} 1`) ||
		!strings.Contains(m, `caddy_webhooks_dlq_entries{source="gen",status="retried"} 1`) {
		t.Errorf("dlq_entries metric missing or wrong:\n%s", grepLines(m, "dlq_entries"))
	}
	// bad admin input
	for _, tc := range []struct {
		method, path, body string
		status             int
	}{
		{"GET", "/webhooks/dlq/does-not-exist", "", 404},
		{"POST", "/webhooks/dlq/does-not-exist/retry", "", 404},
		{"POST", "/webhooks/dlq/" + id2 + "/resolve", `{not json`, 400},
		{"GET", "/webhooks/dlq?limit=0", "", 400},
		{"GET", "/webhooks/dlq?status=bogus", "", 400},
		{"GET", "/webhooks/dlq?cursor=%21%21", "", 400},
		{"GET", "/webhooks/events/gen/unknown", "", 404},
		{"DELETE", "/webhooks/dlq", "", 405},
		{"GET", "/webhooks/dlq/" + id2 + "/retry", "", 405},
		{"GET", "/webhooks/nothing-here", "", 404},
		{"GET", "/webhooks/dlq/retry", "", 405},
		{"POST", "/webhooks/dlq/" + id2 + "/discard", strings.Repeat("x", 70_000), 413},
	} {
		if code, m := admin(t, tc.method, tc.path, tc.body); code != tc.status || m["error"] == nil {
			t.Errorf("%s %s: %d %v, want %d with an error", tc.method, tc.path, code, m, tc.status)
		}
	}
}

// faultyStorage is a test backend: the embedded store, whose writes fail
// while failWrites is set (a full disk, a dead Redis).
type faultyStorage struct {
	Path string `json:"path"`
}

var failWrites atomic.Bool

func init() { caddy.RegisterModule(faultyStorage{}) }

func (faultyStorage) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "webhooks.storage.faulty", New: func() caddy.Module { return new(faultyStorage) }}
}
func (f *faultyStorage) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next()
	if !d.AllArgs(&f.Path) {
		return d.ArgErr()
	}
	return nil
}
func (f *faultyStorage) Key() string      { return "faulty:" + f.Path }
func (f *faultyStorage) Describe() string { return "faulty " + f.Path }
func (f *faultyStorage) Open() (storage.Store, error) {
	s, err := embedded.Open(f.Path, embedded.Options{})
	return faultyStore{s}, err
}

type faultyStore struct{ *embedded.Store }

func (s faultyStore) Enqueue(ctx context.Context, ev *storage.Event, until time.Time) (storage.EnqueueResult, error) {
	if failWrites.Load() {
		return storage.EnqueueResult{}, fmt.Errorf("%w: injected write failure /var/secret/path", storage.ErrUnavailable)
	}
	return s.Store.Enqueue(ctx, ev, until)
}

var _ storagemodules.Backend = (*faultyStorage)(nil)

func TestStoreFailureAnswers503(t *testing.T) {
	up := newUpstream(t)
	startCaddy(t, up, "storage faulty "+filepath.Join(t.TempDir(), "f.db"), "")
	failWrites.Store(true)
	defer failWrites.Store(false)
	body := []byte(`{"x":1}`)
	resp, m := post(t, "/hooks/gen", body, signedHeaders(body, "f-1"))
	if resp.StatusCode != 503 || m["code"] != "SERVICE_UNAVAILABLE" || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("%d %v retry-after=%q", resp.StatusCode, m, resp.Header.Get("Retry-After"))
	}
	if strings.Contains(fmt.Sprint(m), "secret") || strings.Contains(fmt.Sprint(m), "injected") {
		t.Fatalf("internals leaked: %v", m)
	}
	up.none(t, 300*time.Millisecond)
	// the provider retries once the store is back: accepted, delivered once
	failWrites.Store(false)
	if resp, m = post(t, "/hooks/gen", body, signedHeaders(body, "f-1")); resp.StatusCode != 202 {
		t.Fatalf("after recovery: %d %v", resp.StatusCode, m)
	}
	up.next(t, 5*time.Second)
}

// TestImplicitApp: with no webhooks global option, webhook_ingress gets the
// app with its defaults, the embedded store under Caddy's data directory.
func TestImplicitApp(t *testing.T) {
	dataHome := t.TempDir()
	t.Setenv("XDG_DATA_HOME", dataHome)
	up := newUpstream(t)
	tester := caddytest.NewTester(t)
	tester.InitServer(fmt.Sprintf(`{
	admin localhost:2999
	http_port %d
	https_port 9443
	grace_period 1ns
	skip_install_trust
}
http://localhost:%d {
	webhook_ingress /hooks/plain plain {
		verify none
		forward_to %s/in
	}
}
`, httpPort, httpPort, up.URL), "caddyfile")
	caddyrun.UnloadAtEnd(t, adminPort) // the store is under dataHome
	resp, m := post(t, "/hooks/plain", []byte("hello"), map[string]string{"Idempotency-Key": "implicit-1"})
	if resp.StatusCode != 202 {
		t.Fatalf("%d %v", resp.StatusCode, m)
	}
	if r := up.next(t, 5*time.Second); string(r.Body) != "hello" {
		t.Fatalf("body %q", r.Body)
	}
	if _, err := os.Stat(filepath.Join(dataHome, "caddy", "hookline", "events.db")); err != nil {
		t.Fatalf("default store file: %v", err)
	}
	// the admin API finds the implicit app
	if code, ev := admin(t, "GET", "/webhooks/events/plain/implicit-1", ""); code != 200 || ev["event_id"] != "implicit-1" {
		t.Fatalf("admin on the implicit app: %d %v", code, ev)
	}
}

// TestSignatureFailuresBlockAndMetrics: a client failing signatures past
// block_failures gets 429 + Retry-After for its failing requests, while its
// validly signed ones are still accepted (behind a load balancer every
// provider shares one client IP); the block survives a reload; another
// source is unaffected; metrics count the traffic.
func TestSignatureFailuresBlockAndMetrics(t *testing.T) {
	up := newUpstream(t)
	guarded := `webhook_ingress /hooks/guarded guarded {
		verify hmac ` + secret + ` {
			header X-Signature
			prefix sha256=
		}
		forward_to ` + up.URL + `/in/guarded
		block_failures 3 1m 4s
	}`
	storageLine := defaultStorage(t)
	startCaddy(t, up, storageLine, guarded)
	body := []byte(`{"g":1}`)
	bad := map[string]string{"X-Signature": sign([]byte("other"))}
	for i := range 3 {
		if resp, m := post(t, "/hooks/guarded", body, bad); resp.StatusCode != 401 {
			t.Fatalf("failure %d: %d %v", i, resp.StatusCode, m)
		}
	}
	blockedAt := time.Now()
	// the client is blocked: a validly signed webhook from it is still accepted...
	if resp, m := post(t, "/hooks/guarded", body, signedHeaders(body, "g-1")); resp.StatusCode != 202 {
		t.Fatalf("valid webhook from a blocked client: %d %v", resp.StatusCode, m)
	}
	if r := up.next(t, 5*time.Second); r.Path != "/in/guarded" {
		t.Fatalf("delivered to %s", r.Path)
	}
	// ...and a failing one gets 429 + Retry-After instead of 401
	resp, m := post(t, "/hooks/guarded", body, bad)
	if resp.StatusCode != 429 || m["code"] != "RATE_LIMIT_EXCEEDED" || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("failing request of a blocked client: %d %v Retry-After=%q", resp.StatusCode, m, resp.Header.Get("Retry-After"))
	}
	// the guard is per source
	if resp, m := post(t, "/hooks/gen", body, signedHeaders(body, "g-2")); resp.StatusCode != 202 {
		t.Fatalf("other source: %d %v", resp.StatusCode, m)
	}
	up.next(t, 5*time.Second)
	// a reload (the config changes elsewhere) does not lift the block
	startCaddy(t, up, storageLine, guarded+"\n\trespond /reloaded 204")
	if resp, m := post(t, "/hooks/guarded", body, bad); resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("after a reload: %d %v (the reload lifted the block?)", resp.StatusCode, m)
	}
	// after the cool-down the client's failures are 401 again
	time.Sleep(time.Until(blockedAt.Add(4100 * time.Millisecond)))
	if resp, m := post(t, "/hooks/guarded", body, bad); resp.StatusCode != 401 {
		t.Fatalf("after cool-down: %d %v", resp.StatusCode, m)
	}
	if resp, m := post(t, "/hooks/guarded", body, signedHeaders(body, "g-1")); resp.StatusCode != 200 { // duplicate
		t.Fatalf("duplicate: %d %v", resp.StatusCode, m)
	}

	waitFor(t, func() bool {
		m := scrape(t)
		return strings.Contains(m, `caddy_webhooks_deliveries_total{result="delivered",source="guarded"} 1`)
	})
	metrics := scrape(t)
	for _, want := range []string{
		`caddy_webhooks_received_total{outcome="accepted",source="guarded"} 1`,
		`caddy_webhooks_received_total{outcome="duplicate",source="guarded"} 1`,
		`caddy_webhooks_received_total{outcome="unauthorized",source="guarded"} 4`,
		`caddy_webhooks_received_total{outcome="rate_limit_exceeded",source="guarded"} 2`,
		`caddy_webhooks_signature_failures_total{reason="mismatch",source="guarded"} 6`,
		`caddy_webhooks_delivery_duration_seconds_count{source="guarded"} 1`,
		`caddy_webhooks_queue_depth{state="queued"} 0`,
		`caddy_webhooks_queue_depth{state="dead"} 0`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s\n%s", want, grepLines(metrics, "guarded"))
		}
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func scrape(t *testing.T) string {
	t.Helper()
	resp, err := http.Get(adminAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestPauseResume: a paused source answers 503 + Retry-After and its queued
// deliveries wait; after resume both flow again.
func TestPauseResume(t *testing.T) {
	up := newUpstream(t)
	up.setRespond(func(n int, w http.ResponseWriter) {
		w.WriteHeader(http.StatusServiceUnavailable) // the job stays queued, retried every ~200-400ms
	})
	startCaddy(t, up, "", "")
	body := []byte(`{"p":1}`)
	if resp, m := post(t, "/hooks/gen", body, signedHeaders(body, "pz-1")); resp.StatusCode != 202 {
		t.Fatalf("%d %v", resp.StatusCode, m)
	}
	up.next(t, 5*time.Second)
	if code, m := admin(t, "POST", "/webhooks/sources/gen/pause", ""); code != 200 || m["paused"] != true {
		t.Fatalf("pause: %d %v", code, m)
	}
	// an attempt already under way may still arrive; then nothing
	drain := time.After(600 * time.Millisecond)
drained:
	for {
		select {
		case <-up.arrived:
		case <-drain:
			break drained
		}
	}
	// from now on the upstream accepts: only the pause holds pz-1 back
	up.setRespond(func(n int, w http.ResponseWriter) { w.WriteHeader(200) })
	resp, m := post(t, "/hooks/gen", body, signedHeaders(body, "pz-2"))
	if resp.StatusCode != 503 || m["code"] != "SERVICE_UNAVAILABLE" || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("paused source: %d %v", resp.StatusCode, m)
	}
	// other sources are not paused
	if resp, _ := post(t, "/hooks/plain", []byte("x"), nil); resp.StatusCode != 200 {
		t.Fatalf("other source: %d", resp.StatusCode)
	}
	if r := up.next(t, 5*time.Second); r.Path != "/in/plain" {
		t.Fatalf("delivered %s while gen is paused", r.Path)
	}
	// the queued retry of pz-1 waits while paused
	up.none(t, 1500*time.Millisecond)
	if code, st := admin(t, "GET", "/webhooks/stats", ""); code != 200 || fmt.Sprint(st["paused_sources"]) != "[gen]" {
		t.Fatalf("stats: %v", st)
	}
	if code, m := admin(t, "POST", "/webhooks/sources/gen/resume", ""); code != 200 || m["paused"] != false {
		t.Fatalf("resume: %d %v", code, m)
	}
	if r := up.next(t, 20*time.Second); r.Header.Get("Webhook-Id") != "pz-1" {
		t.Fatalf("after resume: %s", r.Header.Get("Webhook-Id"))
	}
	waitFor(t, func() bool {
		_, ev := admin(t, "GET", "/webhooks/events/gen/pz-1", "")
		return ev["status"] == "delivered"
	})
	if resp, m := post(t, "/hooks/gen", body, signedHeaders(body, "pz-2")); resp.StatusCode != 202 {
		t.Fatalf("after resume: %d %v", resp.StatusCode, m)
	}
	if code, _ := admin(t, "POST", "/webhooks/sources/bad%20name/pause", ""); code != 400 {
		t.Fatalf("bad source name: %d", code)
	}
}

// TestBulkRetry: dry run lists what would be re-enqueued; the real run
// re-enqueues them spaced out and skips none; bad bodies are refused.
func TestBulkRetry(t *testing.T) {
	up := newUpstream(t)
	fail := up.failWith(http.StatusBadRequest, true)
	startCaddy(t, up, "", "")
	for i := range 3 {
		body := []byte(fmt.Sprintf(`{"b":%d}`, i))
		post(t, "/hooks/gen", body, signedHeaders(body, fmt.Sprintf("bulk-%d", i)))
		up.next(t, 5*time.Second)
	}
	waitFor(t, func() bool {
		_, page := admin(t, "GET", "/webhooks/dlq?status=pending", "")
		e, _ := page["entries"].([]any)
		return len(e) == 3
	})
	code, m := admin(t, "POST", "/webhooks/dlq/retry", `{"source":"gen","dry_run":true}`)
	if code != 200 || m["matched"] != float64(3) || len(m["retried"].([]any)) != 3 || m["dry_run"] != true {
		t.Fatalf("dry run: %d %v", code, m)
	}
	up.none(t, 300*time.Millisecond) // a dry run changes nothing
	fail.Store(false)
	sent := time.Now()
	code, m = admin(t, "POST", "/webhooks/dlq/retry", `{"source":"gen","limit":2}`)
	if code != 200 || len(m["retried"].([]any)) != 2 {
		t.Fatalf("bulk retry: %d %v", code, m)
	}
	up.next(t, 5*time.Second)
	second := up.next(t, 5*time.Second)
	// paced (100ms): the second is due a pace after the first, which is
	// due at the earliest when the retry was asked for; the gap between
	// their arrivals is no measure, as a slow first delivery (a loaded CI
	// machine) narrows it (stores keep due times in whole milliseconds)
	if d := second.At.Sub(sent); d < 99*time.Millisecond {
		t.Errorf("the second redriven event arrived %s after the retry, want it paced (100ms)", d)
	}
	up.none(t, 300*time.Millisecond) // limit 2: the third stays
	_, m = admin(t, "POST", "/webhooks/dlq/retry", `{}`)
	if len(m["retried"].([]any)) != 1 {
		t.Fatalf("remaining: %v", m)
	}
	up.next(t, 5*time.Second)
	for _, bad := range []string{`{"status":"bogus"}`, `{"limit":5000}`, `{"unknown":1}`, `[1,2]`, `{"since":"yesterday"}`} {
		if code, m := admin(t, "POST", "/webhooks/dlq/retry", bad); code != 400 || m["error"] == nil {
			t.Errorf("%s: %d %v", bad, code, m)
		}
	}
}

// TestAlertsDelivered: alerts reach a Slack-compatible endpoint through the
// durable queue, once per kind within min_interval however much happens.
func TestAlertsDelivered(t *testing.T) {
	up := newUpstream(t)
	up.setRespond(func(n int, w http.ResponseWriter) { w.WriteHeader(http.StatusBadRequest) })
	alerts := make(chan string, 20)
	slack := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]string
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("alert body: %v", err)
		}
		alerts <- m["text"]
	}))
	defer slack.Close()
	storageLine := defaultStorage(t) + fmt.Sprintf(`
		alert %s {
			dlq_threshold 1
			signature_failures 3 1m
			min_interval 1h
		}`, slack.URL)
	startCaddy(t, up, storageLine, "")
	for i := range 4 {
		body := []byte(fmt.Sprintf(`{"a":%d}`, i))
		post(t, "/hooks/gen", body, signedHeaders(body, fmt.Sprintf("al-%d", i)))
		up.next(t, 5*time.Second)
	}
	select {
	case text := <-alerts:
		if !strings.Contains(text, "dead letter queue") || !strings.Contains(text, "gen:") {
			t.Fatalf("DLQ alert text %q", text)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no DLQ alert")
	}
	body := []byte(`{"x":1}`)
	for range 6 {
		post(t, "/hooks/gen", body, map[string]string{"X-Signature": sign([]byte("forged"))})
	}
	select {
	case text := <-alerts:
		if !strings.Contains(text, "signature failures") || !strings.Contains(text, `"gen"`) {
			t.Fatalf("signature alert text %q", text)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no signature alert")
	}
	// more of both within min_interval: no more alerts
	for i := range 3 {
		b := []byte(fmt.Sprintf(`{"more":%d}`, i))
		post(t, "/hooks/gen", b, signedHeaders(b, fmt.Sprintf("more-%d", i)))
		post(t, "/hooks/gen", b, map[string]string{"X-Signature": sign([]byte("forged"))})
	}
	select {
	case text := <-alerts:
		t.Fatalf("alert within min_interval: %q", text)
	case <-time.After(2500 * time.Millisecond):
	}
}

// TestStatsBySource: after known traffic the stats route counts it by
// source, last hour and all-time, with the derived rates.
func TestStatsBySource(t *testing.T) {
	up := newUpstream(t)
	fail := up.failWith(http.StatusBadRequest, false)
	startCaddy(t, up, "", "")
	for i := range 3 {
		body := []byte(fmt.Sprintf(`{"s":%d}`, i))
		post(t, "/hooks/gen", body, signedHeaders(body, fmt.Sprintf("st-%d", i)))
		up.next(t, 5*time.Second)
	}
	body := []byte(`{"s":0}`)
	post(t, "/hooks/gen", body, signedHeaders(body, "st-0"))                              // duplicate
	post(t, "/hooks/gen", body, map[string]string{"X-Signature": sign([]byte("forged"))}) // unauthorized
	fail.Store(true)
	post(t, "/hooks/gen", []byte(`{"s":9}`), signedHeaders([]byte(`{"s":9}`), "st-9"))
	up.next(t, 5*time.Second) // dead at once (400)

	var gen map[string]any
	waitFor(t, func() bool {
		_, st := admin(t, "GET", "/webhooks/stats", "")
		sources, _ := st["sources"].(map[string]any)
		g, _ := sources["gen"].(map[string]any)
		if g == nil {
			return false
		}
		gen = g["last_hour"].(map[string]any)
		return gen["dead"] == float64(1) && gen["delivered"] == float64(3)
	})
	_, st := admin(t, "GET", "/webhooks/stats", "")
	if q := st["sources"].(map[string]any)["gen"].(map[string]any)["queue"]; fmt.Sprint(q) != "map[dead:1 in_flight:0 queued:0]" {
		t.Errorf("gen queue %v", q)
	}
	want := map[string]float64{"received": 4, "duplicates": 1, "rejected": 1, "delivered": 3, "dead": 1,
		"success_rate": 0.75, "dlq_rate": 0.25, "avg_attempts": 1}
	for k, v := range want {
		if gen[k] != v {
			t.Errorf("last_hour %s = %v, want %v (%v)", k, gen[k], v, gen)
		}
	}
}
