package webhooks

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/hookline/hookline/dedupe"
	"github.com/hookline/hookline/dlq"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/storage"
)

// provisionApp provisions a webhooks app from its JSON (storage: an
// embedded store in a temporary directory unless given).
func provisionApp(t *testing.T, raw string) (*App, error) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["storage"]; !ok {
		m["storage"] = map[string]any{"module": "embedded", "path": filepath.Join(t.TempDir(), "events.db")}
	}
	b, _ := json.Marshal(m)
	ctx, err := caddy.ProvisionContext(&caddy.Config{AppsRaw: caddy.ModuleMap{"webhooks": b}})
	if err != nil {
		return nil, err
	}
	app, err := ctx.App("webhooks")
	if err != nil {
		return nil, err
	}
	return app.(*App), nil
}

// TestTimeoutFitsLease: a source without a timeout gets the default fitted
// to a short lease; an explicit timeout that does not fit is refused with a
// clear error; the alert target, which has no timeout setting, fits too.
func TestTimeoutFitsLease(t *testing.T) {
	app, err := provisionApp(t, `{"lease":5000000000,"alert":{"url":"http://127.0.0.1:1/alerts"}}`)
	if err != nil {
		t.Fatal(err)
	}
	lease := time.Duration(app.Lease)
	alert, _ := app.resolve(alertSource)
	if alert == nil || alert.Timeout >= lease || delivery.CheckTimeout(alert.Timeout, lease) != nil {
		t.Fatalf("alert target timeout %v does not fit lease %s", alert, lease)
	}
	if err := app.RegisterSource(&Source{Name: "defaulted", Target: delivery.Target{URL: "http://127.0.0.1:1/"}}); err != nil {
		t.Fatalf("a source without timeout under lease 5s: %v", err)
	}
	if got, _ := app.resolve("defaulted"); got.Timeout != delivery.EffectiveTimeout(0, lease) || got.Timeout != 2500*time.Millisecond {
		t.Fatalf("default timeout under lease 5s: %s", got.Timeout)
	}
	err = app.RegisterSource(&Source{Name: "explicit", Target: delivery.Target{URL: "http://127.0.0.1:1/", Timeout: 10 * time.Second}})
	if err == nil || !strings.Contains(err.Error(), "timeout 10s must be shorter than the webhooks lease 5s") {
		t.Fatalf("explicit timeout 10s with lease 5s: %v", err)
	}
	if _, ok := app.resolve("explicit"); ok {
		t.Fatal("a refused source was registered")
	}
	if err := app.RegisterSource(&Source{Name: "explicit", Target: delivery.Target{URL: "http://127.0.0.1:1/", Timeout: 3 * time.Second}}); err != nil {
		t.Fatalf("explicit timeout 3s with lease 5s: %v", err)
	}
	// the shortest lease: the alert target still fits
	app, err = provisionApp(t, `{"lease":1000000000,"alert":{"url":"http://127.0.0.1:1/alerts"}}`)
	if err != nil {
		t.Fatal(err)
	}
	if alert, _ := app.resolve(alertSource); delivery.CheckTimeout(alert.Timeout, time.Second) != nil {
		t.Fatalf("alert timeout %s under lease 1s", alert.Timeout)
	}
}

// TestSeenCleanupRace: requests still served and workers finishing after
// Stop read and write the L1 cache while Cleanup releases and closes it:
// no panic (ristretto panics on a write to a closed cache), no race (run
// with -race).
func TestSeenCleanupRace(t *testing.T) {
	app, err := provisionApp(t, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if app.Seen() == nil {
		t.Fatal("no cache after provisioning")
	}
	rep := func(i int) delivery.Report {
		job := &storage.Job{Event: storage.Event{Source: "s", EventID: "e" + strconv.Itoa(i), Dedupe: true, ReceivedAt: time.Now()}}
		return delivery.Report{Job: job, Result: storage.Delivered, Attempt: &dlq.Attempt{N: 1}}
	}
	app.Seen().Add(dedupe.Key("s", "e1"), "queued", time.Hour)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := range 2000 {
				// what requests (L1 lookups and writes) and workers do
				key := dedupe.Key("s", "e"+strconv.Itoa(w*10000+i))
				app.RememberSeen(key, "queued", time.Hour)
				app.SeenStatus(key)
				app.onResult(rep(w*10000 + i))
			}
		}()
	}
	close(start)
	time.Sleep(time.Millisecond)
	if err := app.Cleanup(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if app.Seen() != nil {
		t.Fatal("the cache is still handed out after Cleanup")
	}
	app.onResult(rep(1)) // after Cleanup: ignored, no panic
}
