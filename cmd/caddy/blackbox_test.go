package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/testing/redistest"
)

// These tests build this command and run it as a separate process: what an
// in-process test cannot do (kill -9, restart on the same data, reload).

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func caddyBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "hookline-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "caddy")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func freePort(t *testing.T) int { return redistest.FreePort(t) }

// logBuffer is a node's output: written by the process's copy goroutines
// while a test reads it (a failure's message, a log line looked for).
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// node is one running Caddy process.
type node struct {
	cmd      *exec.Cmd
	dir      string
	config   string
	adminP   int
	httpP    int
	logs     *logBuffer
	bin      string
	exited   chan struct{}
	exitOnce sync.Once
}

// writeConfig writes a Caddyfile with one source "t" forwarding to
// upstream; storage "" means the embedded store in dir (with a small
// cache_size, as a small machine would set it).
func writeConfig(t *testing.T, dir string, adminP, httpP int, upstream, storage, extra string) string {
	t.Helper()
	if storage == "" {
		storage = "storage embedded " + filepath.Join(dir, "events.db") + " {\n\t\t\tcache_size 8MiB\n\t\t}"
	}
	cfg := fmt.Sprintf(`{
	admin 127.0.0.1:%d
	http_port %d
	grace_period 2s
	skip_install_trust
	webhooks {
		%s
		lease 2s
		workers 8
	}
}
http://127.0.0.1:%d {
	webhook_ingress /hooks/t t {
		verify none
		forward_to %s/in
		id_from header Idempotency-Key
		timeout 1s
		retry {
			max_attempts 50
			backoff 100ms 500ms
		}
		%s
	}
}
`, adminP, httpP, storage, httpP, upstream, extra)
	path := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func startNode(t *testing.T, dir, config string, adminP, httpP int) *node {
	t.Helper()
	n := &node{dir: dir, config: config, adminP: adminP, httpP: httpP, bin: caddyBinary(t), logs: new(logBuffer), exited: make(chan struct{})}
	n.cmd = exec.Command(n.bin, "run", "--config", config, "--adapter", "caddyfile")
	n.cmd.Env = append(os.Environ(),
		"HOME="+dir, "XDG_DATA_HOME="+filepath.Join(dir, "data"), "XDG_CONFIG_HOME="+filepath.Join(dir, "config"))
	n.cmd.Stdout = n.logs
	n.cmd.Stderr = n.logs
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = n.cmd.Wait(); close(n.exited) }()
	t.Cleanup(func() { n.kill() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", httpP), 200*time.Millisecond)
		if err == nil {
			c.Close()
			return n
		}
		select {
		case <-n.exited:
			t.Fatalf("caddy exited at start:\n%s", n.logs)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("caddy not listening after 20s:\n%s", n.logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (n *node) kill() {
	n.exitOnce.Do(func() {
		_ = n.cmd.Process.Signal(syscall.SIGKILL)
		<-n.exited
	})
}

// tracker is the upstream app: it can hang, and counts deliveries per id.
type tracker struct {
	*httptest.Server
	delay     atomic.Int64 // per request, in ms
	hang      atomic.Bool
	arrived   atomic.Int64 // requests received, answered or not
	release   chan struct{}
	mu        sync.Mutex
	delivered map[string]int
}

func newTracker(t *testing.T) *tracker {
	tr := &tracker{release: make(chan struct{}), delivered: make(map[string]int)}
	tr.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		tr.arrived.Add(1)
		if d := tr.delay.Load(); d > 0 {
			time.Sleep(time.Duration(d) * time.Millisecond)
		}
		if tr.hang.Load() {
			select {
			case <-tr.release:
			case <-r.Context().Done():
				return
			}
		}
		tr.mu.Lock()
		tr.delivered[r.Header.Get("Webhook-Id")]++
		tr.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(tr.Close)
	return tr
}

// missing returns the acknowledged ids not delivered yet and the number
// of duplicate deliveries.
func (tr *tracker) missing(acked []string) (missing []string, dups int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, id := range acked {
		if tr.delivered[id] == 0 {
			missing = append(missing, id)
		}
	}
	for _, c := range tr.delivered {
		if c > 1 {
			dups += c - 1
		}
	}
	return missing, dups
}

// sendOpts describes a sender: events prefix-0..n-1 posted by conc
// goroutines, event i to ports[i % len(ports)].
type sendOpts struct {
	ports  []int
	prefix string
	n      int
	conc   int
	stop   <-chan struct{}
	// retry resends a request that failed in transit, as a provider would
	// (a reload closes idle keep-alive connections, racing a request being
	// written on one); a 200 duplicate answer then also counts.
	retry bool
	// retry503 resends after a 503, up to tries times, pausing pause.
	retry503 bool
	pause    time.Duration
	tries    int
	// statuses counts the answers by status (nil: not counted).
	statuses *sync.Map
	// fed counts the events handed to the senders (nil: not counted).
	fed *atomic.Int64
	// slowest is the longest answer's time in nanoseconds (nil: not kept).
	slowest *atomic.Int64
}

// send posts the events and returns the ids answered 202 (or, after a
// resend, 200).
func send(o sendOpts) []string {
	var mu sync.Mutex
	var acked []string
	ids := make(chan int)
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 5 * time.Second}
	tries := max(o.tries, 3)
	for range o.conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ids {
				id := o.prefix + "-" + strconv.Itoa(i)
				body := fmt.Sprintf(`{"id":%q,"pad":"%0500d"}`, id, i)
				port := o.ports[i%len(o.ports)]
				for try := 0; try < tries; try++ {
					req, _ := http.NewRequest("POST", fmt.Sprintf("http://127.0.0.1:%d/hooks/t", port), bytes.NewBufferString(body))
					req.Header.Set("Idempotency-Key", id)
					began := time.Now()
					resp, err := client.Do(req)
					if o.slowest != nil {
						for took := int64(time.Since(began)); ; {
							if old := o.slowest.Load(); took <= old || o.slowest.CompareAndSwap(old, took) {
								break
							}
						}
					}
					if err != nil {
						if o.retry {
							continue
						}
						break // killed mid-request: not acknowledged
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if o.statuses != nil {
						v, _ := o.statuses.LoadOrStore(resp.StatusCode, new(atomic.Int64))
						v.(*atomic.Int64).Add(1)
					}
					if resp.StatusCode == http.StatusServiceUnavailable && o.retry503 {
						if resp.Header.Get("Retry-After") == "" {
							panic("503 without Retry-After")
						}
						time.Sleep(o.pause)
						continue
					}
					if resp.StatusCode == http.StatusAccepted || (try > 0 && resp.StatusCode == http.StatusOK) {
						mu.Lock()
						acked = append(acked, id)
						mu.Unlock()
					}
					break
				}
			}
		}()
	}
feed:
	for i := range o.n {
		select {
		case ids <- i:
			if o.fed != nil {
				o.fed.Add(1)
			}
		case <-o.stop:
			break feed
		}
	}
	close(ids)
	wg.Wait()
	return acked
}

// statusCount is how many answers of status code statuses (sendOpts)
// counted.
func statusCount(statuses *sync.Map, code int) int64 {
	if v, ok := statuses.Load(code); ok {
		return v.(*atomic.Int64).Load()
	}
	return 0
}

// stream sends o (bounded by o.n) in the background until the returned
// end is called, which returns the ids acknowledged and how many events
// were handed to the senders; a test that ends first ends it too.
func stream(t *testing.T, o sendOpts) (end func() (acked []string, fed int64)) {
	stop := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(stop) }) })
	var n atomic.Int64
	o.stop, o.fed = stop, &n
	done := make(chan []string, 1)
	go func() { done <- send(o) }()
	return func() ([]string, int64) {
		once.Do(func() { close(stop) })
		return <-done, n.Load()
	}
}

func waitDelivered(t *testing.T, tr *tracker, acked []string, within time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		missing, dups := tr.missing(acked)
		if len(missing) == 0 {
			return dups
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d acknowledged events never delivered (first: %v)", len(missing), len(acked), missing[:min(5, len(missing))])
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestKill9LosesNothing sends events while the upstream hangs, kills Caddy
// with SIGKILL while requests are still arriving, restarts it on the same
// data and checks that every event answered 202 is delivered.
func TestKill9LosesNothing(t *testing.T) {
	dir := t.TempDir()
	tr := newTracker(t)
	tr.hang.Store(true)
	adminP, httpP := freePort(t), freePort(t)
	cfg := writeConfig(t, dir, adminP, httpP, tr.URL, "", "")
	n1 := startNode(t, dir, cfg, adminP, httpP)

	stop := make(chan struct{})
	ackedCh := make(chan []string)
	go func() { ackedCh <- send(sendOpts{ports: []int{httpP}, prefix: "k", n: 200000, conc: 8, stop: stop}) }()
	// let events in for a while: 8 are leased to hung deliveries, the
	// rest queue up behind them
	time.Sleep(1500 * time.Millisecond)
	n1.kill() // SIGKILL while senders are still posting
	close(stop)
	acked := <-ackedCh
	if len(acked) == 200000 {
		t.Fatal("every event was sent before the kill: the test did not kill mid-traffic")
	}
	if len(acked) < 50 {
		t.Fatalf("only %d events acknowledged before the kill; logs:\n%s", len(acked), n1.logs)
	}
	tr.hang.Store(false)
	close(tr.release)

	n2 := startNode(t, dir, cfg, adminP, httpP)
	dups := waitDelivered(t, tr, acked, 60*time.Second)
	t.Logf("kill -9: %d events acknowledged before the kill, all delivered after restart; %d duplicate deliveries (at-least-once)", len(acked), dups)
	n2.kill()
}

// TestKill9LeasedDueAtRestart: on the embedded store the leases live in
// the process, so the deliveries in progress when Caddy is killed go out
// as soon as it is back, not after their lease (10 minutes here).
func TestKill9LeasedDueAtRestart(t *testing.T) {
	dir := t.TempDir()
	tr := newTracker(t)
	tr.hang.Store(true)
	adminP, httpP := freePort(t), freePort(t)
	cfg := writeConfig(t, dir, adminP, httpP, tr.URL, "", "")
	long, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	long = bytes.Replace(long, []byte("lease 2s"), []byte("lease 10m"), 1)
	long = bytes.Replace(long, []byte("timeout 1s"), []byte("timeout 5m"), 1)
	if err := os.WriteFile(cfg, long, 0o600); err != nil {
		t.Fatal(err)
	}
	n1 := startNode(t, dir, cfg, adminP, httpP)
	acked := send(sendOpts{ports: []int{httpP}, prefix: "lease", n: 5, conc: 1})
	if len(acked) != 5 {
		t.Fatalf("%d of 5 events acknowledged; logs:\n%s", len(acked), n1.logs)
	}
	deadline := time.Now().Add(10 * time.Second)
	for tr.arrived.Load() < 5 {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 5 deliveries reached the upstream", tr.arrived.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
	n1.kill() // all 5 leased, their attempts hanging
	tr.hang.Store(false)
	close(tr.release)

	n2 := startNode(t, dir, cfg, adminP, httpP)
	dups := waitDelivered(t, tr, acked, 20*time.Second)
	t.Logf("the 5 deliveries leased at the kill went out after the restart; %d duplicates", dups)
	n2.kill()
}

// TestReloadNoLossNoDoubles reloads the config twice while events flow and
// deliveries are in progress: every acknowledged event is delivered, and
// none twice.
func TestReloadNoLossNoDoubles(t *testing.T) {
	dir := t.TempDir()
	tr := newTracker(t)
	adminP, httpP := freePort(t), freePort(t)
	cfg := writeConfig(t, dir, adminP, httpP, tr.URL, "", "")
	n := startNode(t, dir, cfg, adminP, httpP)

	stop := make(chan struct{})
	ackedCh := make(chan []string)
	go func() {
		ackedCh <- send(sendOpts{ports: []int{httpP}, prefix: "r", n: 3000, conc: 4, stop: stop, retry: true})
	}()
	for i, extra := range []string{"dedupe_window 12h", "dedupe_window 6h"} {
		time.Sleep(300 * time.Millisecond)
		writeConfig(t, dir, adminP, httpP, tr.URL, "", extra)
		out, err := exec.Command(n.bin, "reload", "--config", cfg, "--adapter", "caddyfile",
			"--address", fmt.Sprintf("127.0.0.1:%d", adminP)).CombinedOutput()
		if err != nil {
			t.Fatalf("reload %d: %v\n%s", i, err, out)
		}
	}
	acked := <-ackedCh
	if len(acked) != 3000 {
		t.Errorf("%d of 3000 events acknowledged across reloads", len(acked))
	}
	dups := waitDelivered(t, tr, acked, 30*time.Second)
	if dups != 0 {
		t.Errorf("%d duplicate deliveries across reloads", dups)
	}
	t.Logf("reload: %d events acknowledged across 2 reloads, all delivered, %d duplicates", len(acked), dups)
}

// TestLogsNeverCarrySecretsOrBodies runs Caddy at debug level through
// accepted, duplicate, rejected, oversized, retried and dead-lettered
// webhooks, and checks that no log line holds the secret, a signature or
// a body.
func TestLogsNeverCarrySecretsOrBodies(t *testing.T) {
	const secretValue = "blackbox-secret-value-93c1"
	const bodyMarker = "BODY-MARKER-7f2e"
	dir := t.TempDir()
	var n atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		switch n.Add(1) % 3 {
		case 0:
			w.WriteHeader(http.StatusOK)
		case 1:
			w.WriteHeader(http.StatusInternalServerError)
		default:
			w.WriteHeader(http.StatusUnprocessableEntity)
		}
	}))
	defer up.Close()
	adminP, httpP := freePort(t), freePort(t)
	cfg := fmt.Sprintf(`{
	debug
	admin 127.0.0.1:%d
	http_port %d
	skip_install_trust
	webhooks {
		storage embedded %s
	}
}
http://127.0.0.1:%d {
	# Caddy's access log (opt-in) records request headers: drop the
	# signature header as README.md shows
	log {
		format filter {
			request>headers>X-Signature delete
		}
	}
	webhook_ingress /hooks/s s {
		verify hmac {env.BB_SECRET} {
			header X-Signature
			prefix sha256=
		}
		forward_to %s/in
		max_body 2KB
		retry {
			max_attempts 2
			backoff 50ms 100ms
		}
	}
}
`, adminP, httpP, filepath.Join(dir, "events.db"), httpP, up.URL)
	path := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BB_SECRET", secretValue)
	node := startNode(t, dir, path, adminP, httpP)

	var sigs []string
	for i := range 12 {
		body := fmt.Sprintf(`{"marker":"%s","i":%d}`, bodyMarker, i)
		sig := hmacHex(secretValue, body)
		sigs = append(sigs, sig)
		for _, s := range []string{"sha256=" + sig, "sha256=" + sig, "sha256=" + hmacHex("wrong", body), "garbage"} {
			req, _ := http.NewRequest("POST", fmt.Sprintf("http://127.0.0.1:%d/hooks/s", httpP), bytes.NewBufferString(body))
			req.Header.Set("X-Signature", s)
			req.Header.Set("Idempotency-Key", "id-"+strconv.Itoa(i))
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}
	}
	big := bytes.Repeat([]byte(bodyMarker), 500)
	if resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/hooks/s", httpP), "application/json", bytes.NewReader(big)); err == nil {
		resp.Body.Close()
	}
	time.Sleep(2 * time.Second) // retries and dead letters happen
	node.kill()
	logs := node.logs.String()
	if !strings.Contains(logs, "moved to the DLQ") || !strings.Contains(logs, "webhook signature rejected") ||
		!strings.Contains(logs, "http.log.access") {
		t.Fatalf("the run did not exercise the logged paths:\n%s", logs)
	}
	for _, bad := range append([]string{secretValue, bodyMarker}, sigs...) {
		for _, line := range strings.Split(logs, "\n") {
			if strings.Contains(line, bad) {
				t.Errorf("a log line contains %q: %s", bad, line)
				break
			}
		}
	}
}

func hmacHex(key, msg string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}
