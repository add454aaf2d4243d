package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/testing/redistest"
)

// orderedUpstream is the user's app for the ordering tests: it fails 30%
// of the requests at random (503, retried), never five in a row (five
// consecutive failures would open the upstream's circuit breaker, whose
// trials come 2s apart,
// tested on its own elsewhere, and only stretch the run), and records, for
// every key, the events in the order they were first delivered
// successfully and how many deliveries of one key were ever in flight at
// once.
type orderedUpstream struct {
	*httptest.Server
	mu        sync.Mutex
	failRun   int // consecutive failures answered
	inFlight  map[string]int
	maxFlight map[string]int
	first     map[string][]int // key -> seq of first successful deliveries
	done      map[string]bool  // event id -> delivered once
}

func newOrderedUpstream(t *testing.T) *orderedUpstream {
	u := &orderedUpstream{inFlight: map[string]int{}, maxFlight: map[string]int{}, first: map[string][]int{}, done: map[string]bool{}}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var ev struct {
			Key string `json:"key"`
			Seq int    `json:"seq"`
		}
		if err := json.Unmarshal(body, &ev); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		u.mu.Lock()
		u.inFlight[ev.Key]++
		u.maxFlight[ev.Key] = max(u.maxFlight[ev.Key], u.inFlight[ev.Key])
		u.mu.Unlock()
		time.Sleep(2 * time.Millisecond) // long enough for a second delivery of the key to overlap
		u.mu.Lock()
		fail := rand.Float64() < 0.3 && u.failRun < 4
		if fail {
			u.failRun++
		} else {
			u.failRun = 0
		}
		u.inFlight[ev.Key]--
		id := r.Header.Get("Webhook-Id")
		if !fail && !u.done[id] {
			u.done[id] = true
			u.first[ev.Key] = append(u.first[ev.Key], ev.Seq)
		}
		u.mu.Unlock()
		if fail {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(u.Close)
	return u
}

// sendOrdered posts events 0..n-1 of each key, one key per goroutine and
// one event at a time, 10ms apart (each waits for the one before to be
// answered, so the acceptance order of a key is its seq order), to the
// ports in turn; a request that fails or gets no 202 is sent again (to the
// next port), as a provider resends. It counts the accepted events in
// count, and returns the seqs accepted per key, in order.
func sendOrdered(t *testing.T, ports []int, keys []string, n int, count *atomic.Int64) map[string][]int {
	var mu sync.Mutex
	accepted := map[string][]int{}
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 5 * time.Second}
	for k, key := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			port := k
			for seq := range n {
				id := fmt.Sprintf("%s-%d", key, seq)
				body := fmt.Sprintf(`{"key":%q,"seq":%d}`, key, seq)
				for try := 0; ; try++ {
					if try == 100 {
						t.Errorf("%s never accepted", id)
						return
					}
					port++
					req, _ := http.NewRequest("POST", fmt.Sprintf("http://127.0.0.1:%d/hooks/t", ports[port%len(ports)]), bytes.NewBufferString(body))
					req.Header.Set("Idempotency-Key", id)
					resp, err := client.Do(req)
					if err != nil {
						time.Sleep(50 * time.Millisecond)
						continue
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					// a resend of one accepted before the node died answers 200 duplicate
					if resp.StatusCode == http.StatusAccepted || (try > 0 && resp.StatusCode == http.StatusOK) {
						mu.Lock()
						accepted[key] = append(accepted[key], seq)
						mu.Unlock()
						count.Add(1)
						time.Sleep(10 * time.Millisecond)
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	return accepted
}

// checkOrdered waits until every accepted event was delivered and checks,
// per key, that the first successful deliveries came in acceptance order
// and never two at once.
func checkOrdered(t *testing.T, u *orderedUpstream, accepted map[string][]int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		u.mu.Lock()
		all := true
		for key, seqs := range accepted {
			if len(u.first[key]) < len(seqs) {
				all = false
			}
		}
		u.mu.Unlock()
		if all {
			break
		}
		if time.Now().After(deadline) {
			u.mu.Lock()
			defer u.mu.Unlock()
			for key, seqs := range accepted {
				t.Errorf("key %s: %d accepted, %d delivered", key, len(seqs), len(u.first[key]))
			}
			t.FailNow()
		}
		time.Sleep(100 * time.Millisecond)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for key, seqs := range accepted {
		if fmt.Sprint(u.first[key]) != fmt.Sprint(seqs) {
			t.Errorf("key %s: delivered in the order %v, accepted in the order %v", key, u.first[key], seqs)
		}
		if u.maxFlight[key] > 1 {
			t.Errorf("key %s: %d deliveries in flight at once", key, u.maxFlight[key])
		}
	}
}

const orderedConfig = "ordered json key"

// TestOrderedTwoNodesRedis: two nodes on one Redis, three keys of 100
// ordered events each, the upstream failing 30% of the time; one node is
// killed with SIGKILL mid-run. Every accepted event is delivered, and for
// every key the first successful deliveries arrive in acceptance order,
// one at a time, across both nodes.
func TestOrderedTwoNodesRedis(t *testing.T) {
	srv := redistest.Start(t)
	up := newOrderedUpstream(t)
	var nodes []*node
	var ports []int
	for range 2 {
		dir := t.TempDir()
		adminP, httpP := freePort(t), freePort(t)
		cfg := writeConfig(t, dir, adminP, httpP, up.URL, redisStorage(srv.Addr), orderedConfig)
		nodes = append(nodes, startNode(t, dir, cfg, adminP, httpP))
		ports = append(ports, httpP)
	}
	done := make(chan map[string][]int)
	var count atomic.Int64
	go func() { done <- sendOrdered(t, ports, []string{"a", "b", "c"}, 100, &count) }()
	time.Sleep(500 * time.Millisecond)
	nodes[0].kill()
	killedAt := count.Load()
	accepted := <-done
	if killedAt == 0 || killedAt >= 300 {
		t.Fatalf("%d events accepted at the kill: the test did not kill mid-run", killedAt)
	}
	checkOrdered(t, up, accepted, 120*time.Second)
	nodes[1].kill()
}

// TestOrderedKill9Embedded: the same on the embedded store, one node
// killed with SIGKILL mid-run and restarted on its data.
func TestOrderedKill9Embedded(t *testing.T) {
	up := newOrderedUpstream(t)
	dir := t.TempDir()
	adminP, httpP := freePort(t), freePort(t)
	cfg := writeConfig(t, dir, adminP, httpP, up.URL, "", orderedConfig)
	n1 := startNode(t, dir, cfg, adminP, httpP)
	done := make(chan map[string][]int)
	var count atomic.Int64
	go func() { done <- sendOrdered(t, []int{httpP}, []string{"a", "b", "c"}, 100, &count) }()
	time.Sleep(500 * time.Millisecond)
	n1.kill()
	killedAt := count.Load()
	n2 := startNode(t, dir, cfg, adminP, httpP) // the senders resend what the kill cut off
	accepted := <-done
	if killedAt == 0 || killedAt >= 300 {
		t.Fatalf("%d events accepted at the kill: the test did not kill mid-run", killedAt)
	}
	checkOrdered(t, up, accepted, 120*time.Second)
	n2.kill()
}
