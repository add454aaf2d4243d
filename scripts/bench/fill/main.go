// Command fill stores a backlog of events straight into a Redis store (or,
// with -embedded, an embedded store's directory), as the ingress would have (one signed-looking 1 KiB JSON body each, one
// delivery to the source's default destination), so that
// scripts/bench/run can start a Caddy on a million waiting events without
// posting them one by one. It is a benchmark tool, not a way to inject
// events into a production store.
//
//	go run ./scripts/bench/fill -addr 127.0.0.1:6379 -n 1000000 -source bench -upstream http://127.0.0.1:8080/in
//	go run ./scripts/bench/fill -embedded /tmp/events.db -n 1000000 -source bench -upstream http://127.0.0.1:8080/in
//	go run ./scripts/bench/fill -n 100000 -tenants 100000 ...   # each event of a tenant of its own
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded"
	"github.com/hookline/hookline/storage/redisstore"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "Redis address")
	prefix := flag.String("prefix", "hookline", "key prefix (the storage's key_prefix)")
	n := flag.Int("n", 1_000_000, "events to store")
	source := flag.String("source", "bench", "source name")
	upstream := flag.String("upstream", "http://127.0.0.1:8080/in", "the source's forward_to")
	conc := flag.Int("c", 64, "concurrent writers")
	dir := flag.String("embedded", "", "an embedded store's directory to fill instead of Redis (no Caddy may have it open)")
	tenants := flag.Int("tenants", 0, "tenants the events belong to, in turn (0: none; as many as -n: one each)")
	flag.Parse()

	ctx := context.Background()
	var st storage.Store
	var err error
	if *dir != "" {
		st, err = embedded.Open(*dir, embedded.Options{})
	} else {
		c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{*addr}, PoolSize: *conc + 8})
		st, err = redisstore.Open(ctx, c, redisstore.Options{Prefix: *prefix})
	}
	if err != nil {
		log.Fatalf("opening the store: %v", err)
	}
	defer func() {
		if err := st.Close(); err != nil {
			log.Fatalf("closing the store: %v", err)
		}
	}()
	body := fmt.Appendf(nil, `{"type":"invoice.paid","data":"%01000d"}`, 0)
	headers := http.Header{"Content-Type": {"application/json"}}
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	var next, done atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range *conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(*n) {
					return
				}
				ev := &storage.Event{ID: uuid.NewString(), EventID: "fill-" + run + "-" + strconv.FormatInt(i, 10), Dedupe: true,
					Source: *source, Upstream: *upstream, Headers: headers, Body: body, ReceivedAt: time.Now()}
				if *tenants > 0 {
					ev.Tenant = "shop-" + strconv.FormatInt(i%int64(*tenants), 10) + ".myshopify.com"
				}
				if _, err := st.Enqueue(ctx, ev, time.Now().Add(24*time.Hour)); err != nil {
					log.Fatalf("enqueue: %v", err)
				}
				if d := done.Add(1); d%100_000 == 0 {
					log.Printf("%d events stored (%.0f/s)", d, float64(d)/time.Since(start).Seconds())
				}
			}
		}()
	}
	wg.Wait()
	log.Printf("%d events stored in %v", done.Load(), time.Since(start).Round(time.Millisecond))
}
