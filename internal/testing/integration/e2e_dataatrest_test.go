package integration

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"
	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/caddyrun"
	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/storagetest"
)

// TestSecretHeadersNeverStoredCredentialsRedacted (README.md, "Storage and durability"):
// GitLab's X-Gitlab-Token, the configured secret itself, is dropped once
// verified: never stored, forwarded or shown. Authorization and Cookie are
// stored and forwarded, but the admin API (and so the CLI and the
// dashboard, which read it) shows them as [redacted], and the user info of
// a forward_to URL too.
func TestSecretHeadersNeverStoredCredentialsRedacted(t *testing.T) {
	const token = "gl-token-e2e-7f3a9c"
	up := newUpstream(t)
	up.setRespond(func(n int, w http.ResponseWriter) { w.WriteHeader(http.StatusUnprocessableEntity) }) // to the DLQ
	dbPath := filepath.Join(t.TempDir(), "events.db")
	withCreds := strings.Replace(up.URL, "http://", "http://hookuser:hookpass@", 1)
	startCaddy(t, up, "storage embedded "+dbPath, `webhook_ingress /hooks/gl gl {
		verify gitlab `+token+`
		forward_to `+withCreds+`/in/gl
	}
	`+dashboardSite)
	body := []byte(`{"object_kind":"push","ref":"refs/heads/main"}`)
	resp, m := post(t, "/hooks/gl", body, map[string]string{
		"Content-Type":        "application/json",
		"X-Gitlab-Token":      token,
		"X-Gitlab-Event":      "Push Hook",
		"X-Gitlab-Event-UUID": "gl-uuid-1",
		"Authorization":       "Bearer upstream-needs-this",
		"Cookie":              "session=upstream-cookie",
	})
	if resp.StatusCode != 202 {
		t.Fatalf("%d %v", resp.StatusCode, m)
	}
	got := up.next(t, 5*time.Second)
	if v := got.Header.Get("X-Gitlab-Token"); v != "" {
		t.Fatalf("the upstream got X-Gitlab-Token %q", v)
	}
	if got.Header.Get("Cookie") != "session=upstream-cookie" || got.Header.Get("X-Gitlab-Event") != "Push Hook" {
		t.Fatalf("stored headers not forwarded: %v", got.Header)
	}
	if a := got.Header.Get("Authorization"); a != "Bearer upstream-needs-this" {
		t.Fatalf("the upstream got Authorization %q", a)
	}

	eventID, _ := m["event_id"].(string) // the default id rule decides it
	id := dlqEntryOf(t, eventID)
	checkEntry := func(where string, e map[string]any) {
		t.Helper()
		raw := fmt.Sprint(e)
		for _, secret := range []string{token, "upstream-needs-this", "upstream-cookie", "hookpass", "hookuser"} {
			if strings.Contains(raw, secret) {
				t.Errorf("%s shows %q: %v", where, secret, e)
			}
		}
		if up, _ := e["upstream"].(string); up != strings.Replace(withCreds, "hookuser:hookpass", "[redacted]", 1)+"/in/gl" {
			t.Errorf("%s: upstream %q", where, up)
		}
	}
	code, entry := admin(t, "GET", "/webhooks/dlq/"+id, "")
	if code != 200 {
		t.Fatalf("dlq get: %d %v", code, entry)
	}
	checkEntry("GET /webhooks/dlq/{id}", entry)
	hdrs, _ := entry["headers"].(map[string]any)
	want := map[string]string{"Authorization": "[redacted]", "Cookie": "[redacted]", "X-Gitlab-Event": "Push Hook"}
	for k, v := range want {
		if vv, _ := hdrs[k].([]any); len(vv) != 1 || vv[0] != v {
			t.Errorf("entry header %s = %v, want [%s]", k, hdrs[k], v)
		}
	}
	if _, ok := hdrs["X-Gitlab-Token"]; ok {
		t.Errorf("the stored event has X-Gitlab-Token: %v", hdrs)
	}
	_, page := admin(t, "GET", "/webhooks/dlq?source=gl", "")
	entries, _ := page["entries"].([]any)
	if len(entries) != 1 {
		t.Fatalf("dlq list: %v", page)
	}
	checkEntry("GET /webhooks/dlq", entries[0].(map[string]any))
	// the dashboard reads the same API
	resp, dm := do(t, mustGet(t, fmt.Sprintf("http://localhost:%d/dash/api/dlq/%s", httpPort, id)))
	if resp.StatusCode != 200 {
		t.Fatalf("dashboard api: %d %v", resp.StatusCode, dm)
	}
	checkEntry("dashboard", dm)
	if code, ev := admin(t, "GET", "/webhooks/events/gl/"+url.PathEscape(eventID), ""); code != 200 || strings.Contains(fmt.Sprint(ev), token) {
		t.Errorf("event lookup: %d %v", code, ev)
	}
	// nowhere in the store file (no encryption_key: stored in clear)
	db, err := storagetest.ReadFiles(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(db, []byte("upstream-cookie")) {
		t.Fatal("the store file does not hold the event: the check below proves nothing")
	}
	if bytes.Contains(db, []byte(token)) {
		t.Fatal("the GitLab token is in the store file")
	}
}

// TestShortLeaseWithoutTimeout: `lease 5s` with no `timeout` anywhere is a
// valid config (the default timeout fits itself to the lease) and events
// are delivered; an explicit timeout that does not fit is refused.
func TestShortLeaseWithoutTimeout(t *testing.T) {
	up := newUpstream(t)
	cfg := func(timeout string) string {
		return fmt.Sprintf(`{
	admin localhost:2999
	http_port %d
	https_port 9443
	grace_period 1ns
	skip_install_trust
	webhooks {
		%s
		lease 5s
		alert %s/alerts
	}
}
http://localhost:%d {
	webhook_ingress /hooks/short short {
		verify none
		forward_to %s/in/short
		%s
	}
}
`, httpPort, defaultStorage(t), up.URL, httpPort, up.URL, timeout)
	}
	tester := caddytest.NewTester(t)
	tester.InitServer(cfg(""), "caddyfile")
	caddyrun.UnloadAtEnd(t, adminPort)
	resp, m := post(t, "/hooks/short", []byte(`{"s":1}`), map[string]string{"Idempotency-Key": "short-1"})
	if resp.StatusCode != 202 {
		t.Fatalf("%d %v", resp.StatusCode, m)
	}
	if r := up.next(t, 5*time.Second); r.Path != "/in/short" || r.Header.Get("X-Webhook-Attempt") != "1" {
		t.Fatalf("delivery %s attempt %s", r.Path, r.Header.Get("X-Webhook-Attempt"))
	}
	waitFor(t, func() bool {
		_, ev := admin(t, "GET", "/webhooks/events/short/short-1", "")
		return ev["status"] == "delivered"
	})

	// an explicit conflict is refused, naming the source and both values
	req, _ := http.NewRequest(http.MethodPost, adminAddr+"/load", strings.NewReader(cfg("timeout 10s")))
	req.Header.Set("Content-Type", "text/caddyfile")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode == 200 || !strings.Contains(buf.String(), "webhook_ingress short") ||
		!strings.Contains(buf.String(), "timeout 10s must be shorter than the webhooks lease 5s") {
		t.Fatalf("explicit timeout 10s with lease 5s: %d %s", resp.StatusCode, buf.String())
	}
}

// e2eKey is the encryption key of the end-to-end tests, read by Caddy
// from {env.HOOKLINE_E2E_KEY}.
var e2eKey = base64.StdEncoding.EncodeToString([]byte("hookline-e2e-encryption-key-32by"))

// TestEncryptionAtRest (README.md, "Storage and durability"): with encryption_key set, a
// marker in a body and in a header never appears in the store (the embedded
// store's files; every Redis value of every type), for queued, delivered (kept for
// replay) and dead-lettered events alike, while the admin API shows them;
// without a key it does appear (so the check can fail). GET
// /webhooks/stats says whether encryption is on and never shows the key,
// nor does the config (the placeholder stays); a rekey started by POST
// /webhooks/rekey runs to done.
func TestEncryptionAtRest(t *testing.T) {
	t.Setenv("HOOKLINE_E2E_KEY", e2eKey)
	srv := redistest.Start(t)
	n := 0
	for _, tc := range []struct {
		name      string
		redis, on bool
	}{{"embedded", false, true}, {"embedded without key", false, false}, {"redis", true, true}, {"redis without key", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			n++
			prefix := fmt.Sprintf("enc%d", n)
			dbPath := filepath.Join(t.TempDir(), "events.db")
			storageLine := "storage embedded " + dbPath
			if tc.redis {
				storageLine = fmt.Sprintf("storage redis {\n\t\t\taddress redis://%s/0\n\t\t\tkey_prefix %s\n\t\t\tpartitions 4\n\t\t}", srv.Addr, prefix)
			}
			if tc.on {
				storageLine += "\n\t\tencryption_key {env.HOOKLINE_E2E_KEY}"
			}
			raw := func() [][]byte {
				if !tc.redis {
					db, err := storagetest.ReadFiles(dbPath)
					if err != nil {
						t.Fatal(err)
					}
					return [][]byte{db}
				}
				return redisValues(t, srv.Addr, prefix)
			}
			testEncryptionAtRest(t, storageLine, tc.on, raw)
		})
	}
}

func testEncryptionAtRest(t *testing.T, storageLine string, on bool, raw func() [][]byte) {
	up := newUpstream(t)
	// the first delivery is accepted (kept for replay), the second one
	// dies (a DLQ entry), the third waits (queued, retried later)
	up.setRespond(func(n int, w http.ResponseWriter) {
		switch n {
		case 1:
			w.WriteHeader(http.StatusOK)
		case 2:
			w.WriteHeader(http.StatusUnprocessableEntity)
		default:
			w.Header().Set("Retry-After", "3600")
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	startCaddy(t, up, storageLine, "")
	var markers []string
	for i, state := range []string{"delivered", "dead", "queued"} {
		marker := fmt.Sprintf("body-marker-%s-%d-7d1e0c", state, i)
		hdr := fmt.Sprintf("header-marker-%s-%d-91ab3f", state, i)
		markers = append(markers, marker, hdr)
		body := []byte(`{"secret":"` + marker + `"}`)
		h := signedHeaders(body, "enc-"+state)
		h["X-Marker"] = hdr
		if resp, m := post(t, "/hooks/gen", body, h); resp.StatusCode != 202 {
			t.Fatalf("%d %v", resp.StatusCode, m)
		}
		up.next(t, 5*time.Second)
		waitFor(t, func() bool {
			_, ev := admin(t, "GET", "/webhooks/events/gen/enc-"+state, "")
			return ev["status"] == state
		})
	}
	// the admin API shows the dead event's body and header
	id := dlqEntryOf(t, "enc-dead")
	if code, e := admin(t, "GET", "/webhooks/dlq/"+id, ""); code != 200 || !strings.Contains(fmt.Sprint(e), markers[2]) || !strings.Contains(fmt.Sprint(e), markers[3]) {
		t.Fatalf("dlq get: %d %v", code, e)
	}
	stored := raw()
	for _, m := range markers {
		found := false
		for _, v := range stored {
			found = found || storagetest.HasMarker(v, m)
		}
		if found == on {
			t.Errorf("marker %q in the store: %v (encryption on: %v)", m, found, on)
		}
	}

	code, stats := admin(t, "GET", "/webhooks/stats", "")
	enc, _ := stats["encryption"].(map[string]any)
	if code != 200 || enc == nil || enc["enabled"] != on {
		t.Fatalf("stats: %d encryption %v", code, stats["encryption"])
	}
	for what, body := range map[string]string{"stats": fmt.Sprint(stats), "config": adminText(t, "/config/")} {
		if strings.Contains(body, e2eKey) {
			t.Errorf("the %s shows the key", what)
		}
	}
	if on && !strings.Contains(adminText(t, "/config/"), "{env.HOOKLINE_E2E_KEY}") {
		t.Error("the config lost the key's placeholder")
	}

	code, p := admin(t, "POST", "/webhooks/rekey", "")
	if !on {
		if code != 409 || p["code"] != "ENCRYPTION_DISABLED" {
			t.Errorf("rekey without a key: %d %v", code, p)
		}
		return
	}
	if code != 202 {
		t.Fatalf("rekey: %d %v", code, p)
	}
	waitFor(t, func() bool {
		_, p = admin(t, "GET", "/webhooks/rekey", "")
		return p["state"] == "done"
	})
	if p["scanned"] == 0.0 || p["failed"] != 0.0 || p["key_id"] != enc["key_id"] {
		t.Errorf("rekey: %v", p)
	}
}

// adminText is the body of GET path on the admin API.
func adminText(t *testing.T, path string) string {
	t.Helper()
	resp, err := http.Get(adminAddr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// redisValues is every key and value under prefix, whatever its type
// (strings, hashes, lists, sets, sorted sets), found by SCAN.
func redisValues(t *testing.T, addr, prefix string) [][]byte {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	ctx := t.Context()
	var out [][]byte
	iter := c.Scan(ctx, 0, "{"+prefix+":*", 100).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		out = append(out, []byte(k))
		var vals []string
		switch c.Type(ctx, k).Val() {
		case "string":
			vals = []string{c.Get(ctx, k).Val()}
		case "hash":
			for f, v := range c.HGetAll(ctx, k).Val() {
				vals = append(vals, f, v)
			}
		case "list":
			vals = c.LRange(ctx, k, 0, -1).Val()
		case "set":
			vals = c.SMembers(ctx, k).Val()
		case "zset":
			vals = c.ZRange(ctx, k, 0, -1).Val()
		default:
			t.Fatalf("key %s of type %s", k, c.Type(ctx, k).Val())
		}
		for _, v := range vals {
			out = append(out, []byte(v))
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("no key under the prefix: the check proves nothing")
	}
	return out
}

// TestEncryptionKeyMissing (README.md, "Storage and durability"): a job sealed under a
// key the config no longer has is not lost and crashes nothing: it goes to
// the DLQ with an error naming the missing key id, counted dead in the
// stats, the admin API answers
// its entry 409 ENCRYPTION_KEY_MISSING (JSON, with the key id); once the
// key is back, the entry reads and its retry delivers the exact body.
func TestEncryptionKeyMissing(t *testing.T) {
	other := base64.StdEncoding.EncodeToString([]byte("another-e2e-encryption-key-32byt"))
	t.Setenv("HOOKLINE_E2E_KEY", e2eKey)
	t.Setenv("HOOKLINE_E2E_KEY2", other)
	raw, _ := base64.StdEncoding.DecodeString(e2eKey)
	keyID := storage.KeyID(raw)
	up := newUpstream(t)
	var deliver atomic.Bool
	up.setRespond(func(n int, w http.ResponseWriter) {
		if deliver.Load() {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	storageLine := defaultStorage(t)
	startCaddy(t, up, storageLine+"\n\t\tencryption_key {env.HOOKLINE_E2E_KEY}", "")
	body := []byte(`{"secret":"key-missing-body-4e2a"}`)
	if resp, m := post(t, "/hooks/gen", body, signedHeaders(body, "enc-missing")); resp.StatusCode != 202 {
		t.Fatalf("%d %v", resp.StatusCode, m)
	}
	up.next(t, 5*time.Second) // tried once, due again in 1s

	// the key is gone: the job is dead-lettered, not handed out sealed
	startCaddy(t, up, storageLine+"\n\t\tencryption_key {env.HOOKLINE_E2E_KEY2}", "")
	id := dlqEntryOf(t, "enc-missing")
	// counted as any dead delivery: in the stats and in deliveries_total
	waitFor(t, func() bool {
		_, stats := admin(t, "GET", "/webhooks/stats", "")
		src, _ := stats["sources"].(map[string]any)["gen"].(map[string]any)
		all, _ := src["all_time"].(map[string]any)
		return all["dead"] == float64(1)
	})
	_, page := admin(t, "GET", "/webhooks/dlq?status=pending", "")
	if !strings.Contains(fmt.Sprint(page), keyID) {
		t.Errorf("the DLQ entry does not name the missing key %s: %v", keyID, page)
	}
	code, e := admin(t, "GET", "/webhooks/dlq/"+id, "")
	if code != http.StatusConflict || e["code"] != "ENCRYPTION_KEY_MISSING" || !strings.Contains(fmt.Sprint(e["error"]), keyID) {
		t.Fatalf("entry under a missing key: %d %v", code, e)
	}

	// the key is back (an older one): the entry reads, its retry delivers
	startCaddy(t, up, storageLine+"\n\t\tencryption_key {env.HOOKLINE_E2E_KEY2} {env.HOOKLINE_E2E_KEY}", "")
	if code, e := admin(t, "GET", "/webhooks/dlq/"+id, ""); code != 200 || !strings.Contains(fmt.Sprint(e), "key-missing-body-4e2a") {
		t.Fatalf("entry with its key back: %d %v", code, e)
	}
	deliver.Store(true)
	for len(up.arrived) > 0 {
		<-up.arrived
	}
	if code, r := admin(t, "POST", "/webhooks/dlq/"+id+"/retry", ""); code != 200 {
		t.Fatalf("retry: %d %v", code, r)
	}
	if got := up.next(t, 10*time.Second); !bytes.Equal(got.Body, body) {
		t.Fatalf("delivered %q, want %q", got.Body, body)
	}
}

// TestKeysNeverLogged (README.md, "Storage and durability", "Logs"): with every
// Caddy logger at DEBUG in one file and encryption_key holding a new key
// and an older one, an event delivered, another dead-lettered, read and
// retried through the admin API, a rekey run to done, and a job whose key
// a later config no longer has (dead-lettered, its entry answered 409)
// leave no log line holding either key (base64, raw or hex), the source's
// signing secret, a signature or a body. The log is first checked to hold
// those steps, so that an empty one cannot pass.
func TestKeysNeverLogged(t *testing.T) {
	for _, tc := range []struct {
		name  string
		redis bool
	}{{"embedded", false}, {"redis", true}} {
		t.Run(tc.name, func(t *testing.T) {
			storageLine := "storage embedded " + filepath.Join(t.TempDir(), "events.db")
			if tc.redis {
				srv := redistest.Start(t)
				storageLine = fmt.Sprintf("storage redis {\n\t\t\taddress redis://%s/0\n\t\t\tkey_prefix keylog\n\t\t\tpartitions 4\n\t\t}", srv.Addr)
			}
			testKeysNeverLogged(t, storageLine)
		})
	}
}

func testKeysNeverLogged(t *testing.T, storageLine string) {
	oldRaw, newRaw := []byte("hookline-e2e-encryption-key-32by"), []byte("hookline-new-encryption-key-32by")
	t.Setenv("HOOKLINE_E2E_KEY", base64.StdEncoding.EncodeToString(oldRaw))
	t.Setenv("HOOKLINE_E2E_NEWKEY", base64.StdEncoding.EncodeToString(newRaw))
	logFile := filepath.Join(t.TempDir(), "caddy.log")
	global := fmt.Sprintf("log {\n\t\toutput file %s\n\t\tlevel DEBUG\n\t\tformat json\n\t}", logFile)

	ok, dead, waiting := newUpstream(t), newUpstream(t), newUpstream(t)
	dead.setRespond(func(n int, w http.ResponseWriter) { w.WriteHeader(http.StatusUnprocessableEntity) })
	waiting.setRespond(func(n int, w http.ResponseWriter) {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	var extra strings.Builder
	for name, up := range map[string]*upstream{"keyed-ok": ok, "keyed-dead": dead, "keyed-wait": waiting} {
		fmt.Fprintf(&extra, `
	webhook_ingress /hooks/%[1]s %[1]s {
		verify hmac %[2]s {
			header X-Signature
			prefix sha256=
		}
		forward_to %[3]s/in/%[1]s
		id_from header Idempotency-Key
		retry {
			max_attempts 50
			backoff 1s 1s jitter 0
		}
	}`, name, secret, up.URL)
	}
	load := func(keys string) {
		startCaddyWith(t, ok, global, storageLine+"\n\t\taudit\n\t\tencryption_key "+keys, extra.String())
	}
	var forbidden []string // besides the keys
	send := func(source, eventID string) {
		t.Helper()
		marker := "body-marker-" + eventID + "-e41c07"
		body := []byte(`{"secret":"` + marker + `"}`)
		h := signedHeaders(body, eventID)
		forbidden = append(forbidden, marker, strings.TrimPrefix(h["X-Signature"], "sha256="))
		if resp, m := post(t, "/hooks/"+source, body, h); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("%s: %d %v", eventID, resp.StatusCode, m)
		}
	}
	delivered := func(source, eventID string) {
		t.Helper()
		waitFor(t, func() bool {
			_, ev := admin(t, "GET", "/webhooks/events/"+source+"/"+eventID, "")
			return ev["status"] == "delivered"
		})
	}

	// the older key alone: one event delivered, one dead, its entry read
	load("{env.HOOKLINE_E2E_KEY}")
	send("keyed-ok", "k-delivered")
	ok.next(t, 5*time.Second)
	delivered("keyed-ok", "k-delivered")
	send("keyed-dead", "k-dead")
	dead.next(t, 5*time.Second)
	deadID := dlqEntryOf(t, "k-dead")
	if code, e := admin(t, "GET", "/webhooks/dlq/"+deadID, ""); code != 200 || !strings.Contains(fmt.Sprint(e), "body-marker-k-dead") {
		t.Fatalf("dlq get: %d %v", code, e)
	}

	// a new key first, the older one kept: an event, a rekey, a DLQ retry
	load("{env.HOOKLINE_E2E_NEWKEY} {env.HOOKLINE_E2E_KEY}")
	send("keyed-ok", "k-new")
	ok.next(t, 5*time.Second)
	delivered("keyed-ok", "k-new")
	if code, p := admin(t, "POST", "/webhooks/rekey", ""); code != http.StatusAccepted {
		t.Fatalf("rekey: %d %v", code, p)
	}
	var p map[string]any
	waitFor(t, func() bool {
		_, p = admin(t, "GET", "/webhooks/rekey", "")
		return p["state"] == "done"
	})
	if p["scanned"] == 0.0 || p["failed"] != 0.0 {
		t.Fatalf("rekey: %v", p)
	}
	if code, r := admin(t, "POST", "/webhooks/dlq/"+deadID+"/retry", ""); code != 200 {
		t.Fatalf("dlq retry: %d %v", code, r)
	}
	dead.next(t, 5*time.Second)

	// a job sealed under the new key, which the next config no longer has
	send("keyed-wait", "k-wait")
	waiting.next(t, 5*time.Second) // due again in 1s
	load("{env.HOOKLINE_E2E_KEY}")
	waitID := dlqEntryOf(t, "k-wait")
	if code, e := admin(t, "GET", "/webhooks/dlq/"+waitID, ""); code != http.StatusConflict || e["code"] != "ENCRYPTION_KEY_MISSING" {
		t.Fatalf("entry under a missing key: %d %v", code, e)
	}

	// the log holds the story, at DEBUG too...
	var text string
	waitFor(t, func() bool {
		raw, _ := os.ReadFile(logFile)
		text = string(raw)
		return strings.Contains(text, `"step":"rekey_done"`) && strings.Contains(text, `"event_id":"k-wait"`) &&
			strings.Contains(text, `"step":"dead"`) && strings.Contains(text, `"level":"debug"`) &&
			strings.Contains(text, `"event_id":"k-delivered"`) && strings.Contains(text, `"step":"retried"`)
	})
	// ...and none of the secrets
	forbidden = append(forbidden, secret)
	for _, key := range [][]byte{oldRaw, newRaw} {
		forbidden = append(forbidden, string(key),
			base64.RawStdEncoding.EncodeToString(key), // the padded form holds it
			base64.RawURLEncoding.EncodeToString(key),
			hex.EncodeToString(key), strings.ToUpper(hex.EncodeToString(key)))
	}
	for _, s := range forbidden {
		if i := strings.Index(text, s); i >= 0 {
			start := strings.LastIndexByte(text[:i], '\n') + 1
			end := i + strings.IndexByte(text[i:], '\n')
			if end < i {
				end = len(text)
			}
			t.Errorf("the log holds %q: %s", s, text[start:end])
		}
	}
}

// TestGraphClientStateRedacted: Microsoft Graph's clientState, the
// subscription's secret inside every notification, reaches the upstream in
// the exact bytes it was sent, and is shown "[redacted]" by the admin API
// (an entry, and nowhere in the DLQ list), so by the CLI and the
// dashboard, which read it.
func TestGraphClientStateRedacted(t *testing.T) {
	up := newUpstream(t)
	up.setRespondByPath(func(path string, w http.ResponseWriter) {
		if path == "/in/crm" {
			w.WriteHeader(http.StatusUnprocessableEntity) // crm's delivery dead-letters at once
		}
	})
	const secret = "graph-subscription-secret-e2e"
	startCaddy(t, up, "", fmt.Sprintf(`
	webhook_ingress /hooks/graph graph {
		verify msgraph %[1]s
		id_from json value.0.id
		forward_to %[2]s/in/graph
		destination crm %[2]s/in/crm
	}`, secret, up.URL))
	body := `{"value":[{"id":"n-1","subscriptionId":"sub","clientState":"` + secret + `","changeType":"created","resource":"Users/1"}]}`
	if resp, m := post(t, "/hooks/graph", []byte(body), map[string]string{"Content-Type": "application/json"}); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("%d %v", resp.StatusCode, m)
	}
	for range 2 { // both destinations get the exact bytes
		if r := up.next(t, 5*time.Second); string(r.Body) != body {
			t.Fatalf("%s got %q, want the exact bytes", r.Path, r.Body)
		}
	}
	id := ""
	waitFor(t, func() bool {
		_, page := admin(t, "GET", "/webhooks/dlq?source=graph", "")
		entries, _ := page["entries"].([]any)
		if len(entries) == 0 {
			return false
		}
		e := entries[0].(map[string]any)
		id, _ = e["id"].(string)
		listed, _ := json.Marshal(page)
		if raw, _ := base64.StdEncoding.DecodeString(fmt.Sprint(e["payload"])); strings.Contains(string(listed)+string(raw), secret) {
			t.Fatalf("the DLQ list shows the secret: %s", listed)
		}
		return true
	})
	code, e := admin(t, "GET", "/webhooks/dlq/"+id, "")
	payload, _ := e["payload"].(string)
	if code != http.StatusOK || strings.Contains(payload, secret) || !strings.Contains(payload, `"clientState":"[redacted]"`) || !strings.Contains(payload, `"resource":"Users/1"`) {
		t.Fatalf("GET /webhooks/dlq/%s: %d, payload %q", id, code, payload)
	}
}
