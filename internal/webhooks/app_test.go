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
	alert, _ := targetOf(app, alertSource, "")
	if alert == nil || alert.Timeout >= lease || delivery.CheckTimeout(alert.Timeout, lease) != nil {
		t.Fatalf("alert target timeout %v does not fit lease %s", alert, lease)
	}
	if err := app.RegisterSource(&Source{Name: "defaulted", Destinations: defaultTo("http://127.0.0.1:1/")}); err != nil {
		t.Fatalf("a source without timeout under lease 5s: %v", err)
	}
	if got, _ := targetOf(app, "defaulted", ""); got.Timeout != delivery.EffectiveTimeout(0, lease) || got.Timeout != 2500*time.Millisecond {
		t.Fatalf("default timeout under lease 5s: %s", got.Timeout)
	}
	err = app.RegisterSource(&Source{Name: "explicit", Destinations: map[string]delivery.Options{"default": {URL: "http://127.0.0.1:1/", Timeout: 10 * time.Second}}})
	if err == nil || !strings.Contains(err.Error(), "timeout 10s must be shorter than the webhooks lease 5s") {
		t.Fatalf("explicit timeout 10s with lease 5s: %v", err)
	}
	if _, ok := targetOf(app, "explicit", ""); ok {
		t.Fatal("a refused source was registered")
	}
	if err := app.RegisterSource(&Source{Name: "explicit", Destinations: map[string]delivery.Options{"default": {URL: "http://127.0.0.1:1/", Timeout: 3 * time.Second}}}); err != nil {
		t.Fatalf("explicit timeout 3s with lease 5s: %v", err)
	}
	// each destination's timeout fits the lease alike
	err = app.RegisterSource(&Source{Name: "fanout", Destinations: map[string]delivery.Options{
		"default": {URL: "http://127.0.0.1:1/"}, "slow": {URL: "http://127.0.0.1:1/slow", Timeout: time.Minute}}})
	if err == nil || !strings.Contains(err.Error(), "destination slow: timeout 1m0s must be shorter") {
		t.Fatalf("destination timeout 1m with lease 5s: %v", err)
	}
	if err := app.RegisterSource(&Source{Name: "fanout", Destinations: map[string]delivery.Options{"only": {URL: "http://127.0.0.1:1/only"}}}); err != nil {
		t.Fatalf("a source with one named destination: %v", err)
	}
	if got, ok := targetOf(app, "fanout", "only"); !ok || got.Timeout != 2500*time.Millisecond {
		t.Fatalf("destination only: %v %v, want the default timeout fitted to the lease", got, ok)
	}
	if _, ok := targetOf(app, "fanout", "default"); ok {
		t.Fatal("a source without forward_to resolves its default destination")
	}
	// the default destination has one name, the one the workers look up
	err = app.RegisterSource(&Source{Name: "blank", Destinations: map[string]delivery.Options{"": {URL: "http://127.0.0.1:1/"}}})
	if err == nil || !strings.Contains(err.Error(), `the default destination is named "default"`) {
		t.Fatalf("a destination named \"\": %v", err)
	}
	if got := app.targets()["fanout"]; len(got) != 1 || got["only"] == nil {
		t.Fatalf("targets of fanout: %v", got)
	}
	// the shortest lease: the alert target still fits
	app, err = provisionApp(t, `{"lease":1000000000,"alert":{"url":"http://127.0.0.1:1/alerts"}}`)
	if err != nil {
		t.Fatal(err)
	}
	if alert, _ := targetOf(app, alertSource, ""); delivery.CheckTimeout(alert.Timeout, time.Second) != nil {
		t.Fatalf("alert timeout %s under lease 1s", alert.Timeout)
	}
}

// targetOf is the target the workers deliver a source's destination by
// ("": its default destination).
func targetOf(app *App, source, destination string) (*delivery.Target, bool) {
	app.sourceMu.RLock()
	defer app.sourceMu.RUnlock()
	if src, ok := app.sources[source]; ok {
		return src.targetOf(destination)
	}
	return nil, false
}

// defaultTo is Source.Destinations of a source whose forward_to is url.
func defaultTo(url string) map[string]delivery.Options {
	return map[string]delivery.Options{storage.DefaultDestination: {URL: url}}
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
		return delivery.Report{Job: job, Result: storage.Delivered, Attempt: &storage.Attempt{N: 1}}
	}
	app.Seen().Add(dedupe.Key("s", "e1"), "queued", 1, time.Now().Add(time.Hour))
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
				app.rememberSeen(key, "queued", 1, time.Now().Add(time.Hour))
				app.seenStatus(key)
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

// TestAcceptL1: Accept answers a duplicate the L1 cache knows without
// building the event, learns new events and the store's duplicates, never
// caches events that are not deduplicated, and a finished delivery keeps
// the entry only for what is left of its source's dedupe window.
func TestAcceptL1(t *testing.T) {
	app, err := provisionApp(t, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Cleanup()
	if err := app.RegisterSource(&Source{Name: "s", Destinations: defaultTo("http://127.0.0.1:1/")}); err != nil {
		t.Fatal(err)
	}
	builds := 0
	accept := func(eventID string) AcceptResult {
		t.Helper()
		res, err := app.Accept(t.Context(), "s", eventID, time.Hour, func() (*storage.Event, error) {
			builds++
			id := "internal-" + strconv.Itoa(builds)
			ev := &storage.Event{ID: id, EventID: eventID, Dedupe: eventID != "", Source: "s", Upstream: "http://127.0.0.1:1/", Body: []byte("{}"), ReceivedAt: time.Now()}
			if eventID == "" {
				ev.EventID = id
			}
			return ev, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		app.Seen().Wait()
		return res
	}

	if res := accept("e1"); res.Duplicate || res.Status != storage.StatusQueued || res.ID != "internal-1" || builds != 1 {
		t.Fatalf("new event: %+v, %d builds", res, builds)
	}
	if res := accept("e1"); !res.Duplicate || !res.Cached || res.Status != storage.StatusQueued || builds != 1 {
		t.Fatalf("repeat: %+v, %d builds (want the L1 answer, no build)", res, builds)
	}

	// claimed in the store, unknown to the L1 cache: the store answers, then the cache
	st, err := app.Store()
	if err != nil {
		t.Fatal(err)
	}
	ev := storage.Event{ID: "earlier", EventID: "e2", Dedupe: true, Source: "s", Upstream: "http://127.0.0.1:1/", ReceivedAt: time.Now()}
	if _, err := st.Enqueue(t.Context(), &ev, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if res := accept("e2"); !res.Duplicate || res.Cached || res.ID != "earlier" || builds != 2 {
		t.Fatalf("store duplicate: %+v, %d builds", res, builds)
	}
	if res := accept("e2"); !res.Duplicate || !res.Cached || builds != 2 {
		t.Fatalf("store duplicate, again: %+v, %d builds", res, builds)
	}

	// not deduplicated: built every time, never cached
	for range 2 {
		if res := accept(""); res.Duplicate || res.Cached {
			t.Fatalf("event without id: %+v", res)
		}
	}
	if builds != 4 {
		t.Fatalf("%d builds, want 4", builds)
	}

	// a finished delivery: an event of one delivery takes its result; one
	// the store answered for (its deliveries not known here) leaves the
	// cache, so that the store answers its next duplicate
	finish := func(source, eventID string) {
		job := &storage.Job{Event: storage.Event{Source: source, EventID: eventID, Dedupe: true, ReceivedAt: time.Now()}}
		app.onResult(delivery.Report{Job: job, Result: storage.Delivered})
		app.Seen().Wait()
	}
	finish("s", "e1")
	if status, ok := app.seenStatus(dedupe.Key("s", "e1")); !ok || status != storage.StatusDelivered {
		t.Fatalf("after delivery within the window: %q %v", status, ok)
	}
	finish("s", "e2")
	if status, ok := app.seenStatus(dedupe.Key("s", "e2")); ok {
		t.Fatalf("an event the store answered for, its deliveries not known, is still cached (%q) after one delivered", status)
	}
}
