package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/redistest"
)

func redisStorage(addr string) string {
	return fmt.Sprintf("storage redis {\n\t\t\taddress redis://%s/0\n\t\t\tkey_prefix bb\n\t\t}", addr)
}

// TestTwoNodesShareRedis runs two Caddy processes on one Redis, sends 1000
// events alternately to both, kills one with SIGKILL while deliveries are in
// progress, and checks that every acknowledged event is delivered (the
// survivor reclaims the dead node's expired leases); duplicates are counted.
func TestTwoNodesShareRedis(t *testing.T) {
	srv := redistest.Start(t)
	tr := newTracker(t)
	tr.delay.Store(20) // keep deliveries in flight
	var nodes []*node
	var ports []int
	for range 2 {
		dir := t.TempDir()
		adminP, httpP := freePort(t), freePort(t)
		cfg := writeConfig(t, dir, adminP, httpP, tr.URL, redisStorage(srv.Addr), "")
		nodes = append(nodes, startNode(t, dir, cfg, adminP, httpP))
		ports = append(ports, httpP)
	}
	done := make(chan []string)
	go func() { done <- send(sendOpts{ports: ports, prefix: "two", n: 1000, conc: 8}) }()
	time.Sleep(400 * time.Millisecond)
	nodes[0].kill()
	acked := <-done
	// events sent to the killed node after the kill were not acknowledged
	if len(acked) < 500 {
		t.Fatalf("only %d of 1000 events acknowledged", len(acked))
	}
	dups := waitDelivered(t, tr, acked, 60*time.Second)
	t.Logf("two nodes, one killed mid-delivery: %d of 1000 events acknowledged, all delivered, %d duplicate deliveries", len(acked), dups)
	// each node delivered a share while both were up: the work was shared
	nodes[1].kill()
}

// TestRedisOutage stops Redis (SIGKILL) while events arrive: the ingress
// answers 503 with Retry-After and never 202; Redis comes back with its AOF
// and the node resumes by itself; every acknowledged event is delivered.
func TestRedisOutage(t *testing.T) {
	srv := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	tr := newTracker(t)
	dir := t.TempDir()
	adminP, httpP := freePort(t), freePort(t)
	cfg := writeConfig(t, dir, adminP, httpP, tr.URL, redisStorage(srv.Addr), "")
	n := startNode(t, dir, cfg, adminP, httpP)

	var statuses sync.Map
	var fed atomic.Int64
	stop := make(chan struct{})
	done := make(chan []string)
	go func() {
		done <- send(sendOpts{ports: []int{httpP}, prefix: "out", n: 1_000_000, conc: 4, stop: stop,
			retry503: true, pause: 200 * time.Millisecond, tries: 100, statuses: &statuses, fed: &fed})
	}()
	time.Sleep(500 * time.Millisecond)
	srv.Stop()
	// while Redis is down, answers are 503 (counted by the sender)
	time.Sleep(3 * time.Second)
	srv.Restart()
	time.Sleep(500 * time.Millisecond)
	close(stop)
	acked := <-done
	count := func(code int) int64 { return statusCount(&statuses, code) }
	// 4 senders retrying every 200ms for 3s: a quick 503 each time, not
	// requests held open until Redis returns
	if n := count(http.StatusServiceUnavailable); n < 10 {
		t.Fatalf("%d answers 503 while Redis was down for 3s, want quick 503s", n)
	}
	if int64(len(acked)) != fed.Load() {
		t.Errorf("%d of %d events acknowledged after Redis came back", len(acked), fed.Load())
	}
	for _, code := range []int{500, 502, 504} {
		if c := count(code); c > 0 {
			t.Errorf("%d answers with status %d", c, code)
		}
	}
	dups := waitDelivered(t, tr, acked, 60*time.Second)
	t.Logf("redis outage: %d answers 503 during the outage, %d 202; all %d acknowledged events delivered, %d duplicates",
		count(503), count(202), len(acked), dups)
	n.kill()
}

// TestRedisOutageSpooled is TestRedisOutage with `spool`: Redis is stopped
// in the middle of a steady stream; while it is down every event is
// answered 202 (its resends 200, spooled), Caddy is
// killed with SIGKILL and started again with Redis still down, and once
// Redis is back the node moves its spool into it by itself: every event
// answered 202 is delivered, none twice, and no request was refused.
func TestRedisOutageSpooled(t *testing.T) {
	srv := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	tr := newTracker(t)
	dir := t.TempDir()
	adminP, httpP := freePort(t), freePort(t)
	storage := fmt.Sprintf("storage redis {\n\t\t\taddress redis://%s/0\n\t\t\tkey_prefix bb\n\t\t\tspool %s {\n\t\t\t\tmax_size 64MiB\n\t\t\t}\n\t\t}\n\t\taudit",
		srv.Addr, filepath.Join(dir, "spool"))
	cfg := writeConfig(t, dir, adminP, httpP, tr.URL, storage, "")
	n := startNode(t, dir, cfg, adminP, httpP)
	var statuses sync.Map
	count := func(code int) int64 { return statusCount(&statuses, code) }
	acked := send(sendOpts{ports: []int{httpP}, prefix: "pre", n: 50, conc: 4, statuses: &statuses})
	waitDelivered(t, tr, acked, 30*time.Second) // none in flight when Caddy is killed

	// a steady stream, bounded, during which Redis stops
	endStream := stream(t, sendOpts{ports: []int{httpP}, prefix: "stream", n: 20000, conc: 2, statuses: &statuses})
	time.Sleep(time.Second)
	srv.Stop()
	time.Sleep(2 * time.Second)
	down := send(sendOpts{ports: []int{httpP}, prefix: "down", n: 300, conc: 4, statuses: &statuses})
	if len(down) != 300 {
		t.Fatalf("%d of 300 events acknowledged with Redis down (statuses: 503 %d)", len(down), count(503))
	}
	streamed, fed := endStream()
	if int64(len(streamed)) != fed {
		t.Fatalf("%d of the %d events streamed while Redis stopped were acknowledged (statuses: 503 %d)", len(streamed), fed, count(503))
	}
	acked = append(append(acked, streamed...), down...)
	// resends of spooled events: duplicates, answered 200
	before200 := count(http.StatusOK)
	send(sendOpts{ports: []int{httpP}, prefix: "down", n: 40, conc: 4, statuses: &statuses})
	if got := count(http.StatusOK) - before200; got != 40 {
		t.Fatalf("%d of 40 resends of spooled events answered 200", got)
	}

	// the stats answer during the outage, with the spool; so does the gauge
	var stats struct {
		Store struct {
			Available bool `json:"available"`
		} `json:"store"`
		Spool *struct {
			Events int64     `json:"events"`
			Oldest time.Time `json:"oldest"`
		} `json:"spool"`
	}
	// the 300 and those of the stream sent after Redis stopped
	adminJSON(t, adminP, "/webhooks/stats", &stats)
	if stats.Store.Available || stats.Spool == nil || stats.Spool.Events < 300 || stats.Spool.Events > int64(300+len(streamed)) || stats.Spool.Oldest.IsZero() {
		t.Fatalf("stats with Redis down: %+v %+v, want the store unavailable and 300 to %d events spooled", stats.Store, stats.Spool, 300+len(streamed))
	}
	spooled := stats.Spool.Events
	if m := adminText(t, adminP, "/metrics"); !strings.Contains(m, fmt.Sprintf("\ncaddy_webhooks_spool_events %d\n", spooled)) {
		t.Fatalf("metrics with Redis down: no caddy_webhooks_spool_events %d in %q", spooled, regexp.MustCompile(`(?m)^caddy_webhooks_s.*$`).FindAllString(m, -1))
	}

	// and so does `caddy webhooks stats`, the store marked unavailable
	out, err := exec.Command(n.bin, "webhooks", "stats", "--address", fmt.Sprintf("127.0.0.1:%d", adminP)).CombinedOutput()
	if err != nil || !regexp.MustCompile(fmt.Sprintf(`(?m)^UNAVAILABLE +%d +\d+ +\S+$`, spooled)).Match(out) {
		t.Fatalf("caddy webhooks stats with Redis down: %v\n%s\nwant the store UNAVAILABLE and %d events spooled", err, out, spooled)
	}

	n.kill()
	// the audit trail says which events were spooled: those, not their resends
	spooledIDs := auditIDs(n.logs.String(), "spooled")
	if int64(len(spooledIDs)) != spooled {
		t.Fatalf("%d audit lines of step spooled, want %d", len(spooledIDs), spooled)
	}
	n = startNode(t, dir, cfg, adminP, httpP) // Redis still down: it starts and accepts
	after := send(sendOpts{ports: []int{httpP}, prefix: "restarted", n: 100, conc: 4, statuses: &statuses})
	if len(after) != 100 {
		t.Fatalf("%d of 100 events acknowledged after the restart, Redis down", len(after))
	}
	acked = append(acked, after...)
	// a resend of one spooled before the kill is still a duplicate
	before200 = count(http.StatusOK)
	send(sendOpts{ports: []int{httpP}, prefix: "down", n: 5, conc: 1, statuses: &statuses})
	if got := count(http.StatusOK) - before200; got != 5 {
		t.Fatalf("%d of 5 resends after the restart answered 200", got)
	}

	srv.Restart()
	start := time.Now()
	dups := waitDelivered(t, tr, acked, 30*time.Second)
	took := time.Since(start)
	for _, code := range []int{http.StatusServiceUnavailable, 500, 502, 504} {
		if c := count(code); c > 0 {
			t.Errorf("%d answers with status %d", c, code)
		}
	}
	// every event spooled (the audit trail names them), resent or not, is
	// delivered once; a delivery in flight when Redis stopped (its finish
	// lost) may be delivered again: at least once, Webhook-Id drops it
	tr.mu.Lock()
	for _, id := range append(append(spooledIDs, down...), after...) {
		if c := tr.delivered[id]; c != 1 {
			t.Errorf("%s, spooled, delivered %d times", id, c)
		}
	}
	tr.mu.Unlock()
	adminJSON(t, adminP, "/webhooks/stats", &stats)
	if !stats.Store.Available || stats.Spool == nil || stats.Spool.Events != 0 {
		t.Fatalf("stats once moved: %+v %+v, want the store available and the spool empty", stats.Store, stats.Spool)
	}
	t.Logf("redis outage with a spool: %d events acknowledged (%d of a stream Redis stopped in, %d spooled before the kill), 0 refused, all delivered %.1fs after Redis came back; spooled and resent ones once each; %d redeliveries of deliveries in flight when Redis stopped",
		len(acked), len(streamed), spooled, took.Seconds(), dups)
	n.kill()
}

// auditIDs are the event ids of the audit lines of step in logs.
func auditIDs(logs, step string) []string {
	var ids []string
	for _, l := range strings.Split(logs, "\n") {
		if !strings.Contains(l, `"step":"`+step+`"`) {
			continue
		}
		var line struct {
			EventID string `json:"event_id"`
		}
		if json.Unmarshal([]byte(l), &line) == nil && line.EventID != "" {
			ids = append(ids, line.EventID)
		}
	}
	return ids
}

// adminJSON decodes the admin endpoint's answer to GET path into v.
func adminJSON(t *testing.T, adminP int, path string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(adminText(t, adminP, path)), v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// adminText is the admin endpoint's answer to GET path (200 expected).
func adminText(t *testing.T, adminP int, path string) string {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", adminP, path))
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	return string(b)
}

// TestTwoNodesSpoolOneID: two nodes, each with its own spool, get the same
// events while Redis is down (a provider retrying on another node): both
// answer 202, and once Redis is back each event is delivered once, the
// second node's copy a duplicate at its move.
func TestTwoNodesSpoolOneID(t *testing.T) {
	srv := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	tr := newTracker(t)
	var nodes []*node
	var ports []int
	for range 2 {
		dir := t.TempDir()
		adminP, httpP := freePort(t), freePort(t)
		storage := fmt.Sprintf("storage redis {\n\t\t\taddress redis://%s/0\n\t\t\tkey_prefix two\n\t\t\tspool %s\n\t\t}",
			srv.Addr, filepath.Join(dir, "spool"))
		nodes = append(nodes, startNode(t, dir, writeConfig(t, dir, adminP, httpP, tr.URL, storage, ""), adminP, httpP))
		ports = append(ports, httpP)
	}
	srv.Stop()
	var acked []string
	for _, p := range ports {
		got := send(sendOpts{ports: []int{p}, prefix: "both", n: 50, conc: 4})
		if len(got) != 50 {
			t.Fatalf("node on port %d acknowledged %d of 50 with Redis down", p, len(got))
		}
		acked = append(acked, got...)
	}
	srv.Restart()
	dups := waitDelivered(t, tr, acked, 30*time.Second)
	time.Sleep(time.Second) // a second delivery would come by now
	if _, dups = tr.missing(acked); dups != 0 {
		t.Fatalf("%d duplicate deliveries of the events both nodes spooled", dups)
	}
	for _, n := range nodes {
		n.kill()
	}
}

// TestSentinelFailoverSpooled: a steady stream of events through Caddy on
// a Redis Sentinel with min_replicas 1 and a spool, while the master is
// killed with SIGKILL, the Sentinel promotes the replica (alone, it
// cannot replicate a write: those are spooled) and the old master comes
// back as the new one's replica. No request is refused; every event
// answered 202 is delivered; the spool is used, and empty at the end.
func TestSentinelFailoverSpooled(t *testing.T) {
	s := redistest.StartSentinel(t)
	tr := newTracker(t)
	dir := t.TempDir()
	adminP, httpP := freePort(t), freePort(t)
	storage := fmt.Sprintf("storage redis {\n\t\t\tsentinel %s %s\n\t\t\tkey_prefix sf\n\t\t\tmin_replicas 1 1s\n\t\t\tdial_timeout 300ms\n\t\t\tspool %s\n\t\t}",
		s.MasterName, strings.Join(s.Addrs, " "), filepath.Join(dir, "spool"))
	cfg := writeConfig(t, dir, adminP, httpP, tr.URL, storage, "")
	n := startNode(t, dir, cfg, adminP, httpP)
	var statuses sync.Map
	count := func(code int) int64 { return statusCount(&statuses, code) }
	acked := send(sendOpts{ports: []int{httpP}, prefix: "pre", n: 20, conc: 2, statuses: &statuses})
	waitDelivered(t, tr, acked, 30*time.Second)

	// the stream: two senders, bounded, until it is ended
	var slowest atomic.Int64
	endStream := stream(t, sendOpts{ports: []int{httpP}, prefix: "stream", n: 20000, conc: 2, statuses: &statuses, slowest: &slowest})
	time.Sleep(time.Second)
	s.Master.Stop() // SIGKILL
	sentinel := redis.NewSentinelClient(&redis.Options{Addr: s.Addrs[0]})
	defer sentinel.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		addr, err := sentinel.GetMasterAddrByName(t.Context(), s.MasterName).Result()
		if err == nil && addr[1] == fmt.Sprint(s.Replica.Port) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Sentinel did not promote the replica within 30 s: %v %v", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	promoted := time.Now()
	var stats struct {
		Spool *struct {
			Events int64 `json:"events"`
		} `json:"spool"`
	}
	spooled := int64(0)
	for spooled == 0 && time.Since(promoted) < 10*time.Second {
		adminJSON(t, adminP, "/webhooks/stats", &stats)
		if stats.Spool != nil {
			spooled = stats.Spool.Events
		}
		time.Sleep(100 * time.Millisecond)
	}
	if spooled == 0 {
		t.Fatal("nothing spooled while the promoted replica had no replica of its own (min_replicas 1)")
	}
	time.Sleep(2 * time.Second)
	s.Master.Restart() // the Sentinel makes it the new master's replica
	time.Sleep(3 * time.Second)
	got, fed := endStream()
	if int64(len(got)) != fed {
		t.Errorf("%d of the %d events streamed answered 202 (the others failed in transit or were refused)", len(got), fed)
	}
	acked = append(acked, got...)
	back := time.Now()
	dups := waitDelivered(t, tr, acked, 60*time.Second)
	for _, code := range []int{http.StatusServiceUnavailable, 500, 502, 504} {
		if c := count(code); c > 0 {
			t.Errorf("%d answers with status %d", c, code)
		}
	}
	if c := count(http.StatusAccepted); c != int64(len(acked)) {
		t.Errorf("%d answers 202 for %d events acknowledged", c, len(acked))
	}
	deadline = time.Now().Add(20 * time.Second)
	for adminJSON(t, adminP, "/webhooks/stats", &stats); stats.Spool == nil || stats.Spool.Events != 0; adminJSON(t, adminP, "/webhooks/stats", &stats) {
		if time.Now().After(deadline) {
			t.Fatalf("the spool still holds %+v 20 s after the stream", stats.Spool)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// a delivery in flight when its master died, or finished while the
	// promoted replica could not replicate it, is delivered again (at
	// least once: the upstream drops it by its Webhook-Id)
	t.Logf("sentinel failover with a spool: %d events acknowledged, 0 refused, %d spooled at the first look, slowest answer %v, all delivered %.1fs after the stream ended, %d redeliveries",
		len(acked), spooled, time.Duration(slowest.Load()).Round(time.Millisecond), time.Since(back).Seconds(), dups)
	n.kill()
}
