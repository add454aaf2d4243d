// Package webhooks is the webhooks app (as caddypki is the pki app): the
// pooled store and its lifecycle across reloads, the source registry, the
// delivery workers, retention, pause, stats, metrics and alerts; its global
// option; the operations of the operator API (internal/operator), which the
// admin API module (admin.api.webhooks) mounts and the `caddy webhooks` CLI
// calls.
package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyevents"
	"go.uber.org/zap"

	"github.com/hookline/hookline/dedupe"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/storagemodules"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/spool"
)

func init() {
	caddy.RegisterModule(App{})
}

// Defaults of the app.
const (
	DefaultRetention    = 24 * time.Hour
	DefaultDLQRetention = 7 * 24 * time.Hour
	// stopGrace bounds how long Stop lets deliveries in progress finish;
	// the rest are released to the queue for the next instance.
	stopGrace       = 3 * time.Second
	cleanupInterval = time.Minute
)

// App is the webhooks app: it owns the store, the delivery workers,
// retention cleanup and the DLQ. A config with a webhook_ingress handler
// and no webhooks global option gets this app with its defaults.
// Caddyfile syntax (the webhooks global option): see UnmarshalCaddyfile.
type App struct {
	// StorageRaw is the storage backend, a webhooks.storage module named
	// by its "module" key (default: embedded).
	StorageRaw json.RawMessage `json:"storage,omitempty" caddy:"namespace=webhooks.storage inline_key=module"`
	// Workers is the number of concurrent deliveries (default 16).
	Workers int `json:"workers,omitempty"`
	// Lease is how long a delivery may take before the job is handed to
	// another worker (default 1m). It must exceed every source's timeout.
	Lease caddy.Duration `json:"lease,omitempty"`
	// Retention is how long delivered events stay queryable (default 24h).
	Retention caddy.Duration `json:"retention,omitempty"`
	// DLQRetention is how long DLQ entries are kept (default 168h; a
	// negative value keeps them forever: "0" in the Caddyfile).
	DLQRetention caddy.Duration `json:"dlq_retention,omitempty"`
	// Alert sends operator alerts to a Slack-compatible webhook URL.
	Alert *AlertConfig `json:"alert,omitempty"`
	// EncryptionKeys seal bodies and headers at rest (AES-256-GCM): each
	// the base64 of 32 bytes, usually a placeholder ({env.*}, {file.*})
	// replaced at provision; the first seals, all open (encryption.go).
	EncryptionKeys []string `json:"encryption_keys,omitempty"`
	// Audit turns the audit trail on: the logger webhooks.audit writes
	// one line per step of each event's life (audit.go). Off by default,
	// as Caddy's access log is: three lines an event would otherwise fill
	// Caddy's default log. Route it to a file of its own with a log that
	// includes webhooks.audit (and one that excludes it from the default).
	Audit bool `json:"audit,omitempty"`

	backend storagemodules.Backend
	keys    *storage.Keyring
	sealed  *atomic.Pointer[storage.SealingStore]
	rekey   *tasks[storage.RekeyProgress]
	tenants *tasks[storage.TenantErasure]
	poolKey string
	shared  *sharedStore // the store's state that outlives a reload (pool.go)
	// breakers are shared.breakers; seen holds shared.seen until Cleanup
	breakers *delivery.Breakers
	seen     *seenRef
	log      *zap.Logger
	sourceMu *sync.RWMutex
	sources  map[string]*Source

	disp        *atomic.Pointer[delivery.Dispatcher]
	load        *ingestLoad // ingress requests in progress (pressure.go)
	paused      *pausedCache
	pausesDone  chan struct{}
	stopCleaner context.CancelFunc
	cleanerDone chan struct{}
	alerter     *alerter
	alertsDone  chan struct{}
	stats       *statsBuffer
	statsDone   chan struct{}

	ctx      caddy.Context
	auditLog *zap.Logger      // webhooks.audit (audit.go)
	events   *caddyevents.App // Caddy events (audit.go)
}

// Source is one webhook_ingress source as the workers need it.
type Source struct {
	// Name is the source's name.
	Name string
	// Destinations are the delivery options of the source's destinations,
	// by name (storage.DefaultDestination: forward_to's, when it has one);
	// RegisterSource builds their targets (delivery.NewTarget).
	Destinations map[string]delivery.Options
	// RedactBody, if set, is how the operator API shows a stored body of
	// the source: its scheme's secrets in the body replaced
	// (verifiers.BodyRedactor).
	RedactBody func(body []byte) []byte
	// SecretQueryParams and SecretHeaders name where the source's provider
	// sends a secret in a request (verifiers.SecretQueryer,
	// SecretHeaderer): Caddy's access log records them unless its filter
	// deletes them (accesslog.go checks).
	SecretQueryParams, SecretHeaders []string
	// Secrets is how many secrets the source's scheme has configured
	// (verifiers.KeyVerifier; 0: none, or it does not tell which matched).
	Secrets int

	// targets are the destinations' targets, by name (RegisterSource)
	targets map[string]*delivery.Target
}

// targetOf is the target of one of the source's destinations
// (storage.DefaultDestination: forward_to).
func (s *Source) targetOf(destination string) (*delivery.Target, bool) {
	if storage.IsDefaultDestination(destination) {
		destination = storage.DefaultDestination
	}
	t, ok := s.targets[destination]
	return t, ok
}

// CaddyModule returns the Caddy module information.
func (App) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "webhooks",
		New: func() caddy.Module { return new(App) },
	}
}

// Provision loads the storage backend and takes a reference on its pooled
// store. It opens nothing: `caddy validate` provisions but never starts.
func (a *App) Provision(ctx caddy.Context) error {
	a.log = ctx.Logger()
	if err := a.provisionAudit(ctx); err != nil {
		return err
	}
	a.tenants = newTenantErasures()
	if err := a.provisionEncryption(); err != nil {
		return err
	}
	a.sources = make(map[string]*Source)
	a.sourceMu = new(sync.RWMutex)
	a.disp = new(atomic.Pointer[delivery.Dispatcher])
	a.load = new(ingestLoad)
	a.paused = new(pausedCache)
	a.stats = new(statsBuffer)
	a.seen = new(seenRef)
	if a.Workers == 0 {
		a.Workers = delivery.DefaultWorkers
	}
	if a.Lease == 0 {
		a.Lease = caddy.Duration(delivery.DefaultLease)
	}
	if a.Retention == 0 {
		a.Retention = caddy.Duration(DefaultRetention)
	}
	if a.DLQRetention == 0 {
		a.DLQRetention = caddy.Duration(DefaultDLQRetention)
	}
	if a.StorageRaw != nil {
		mod, err := ctx.LoadModule(a, "StorageRaw")
		if err != nil {
			return fmt.Errorf("loading storage module: %v", err)
		}
		a.backend = mod.(storagemodules.Backend)
	} else {
		def := new(storagemodules.EmbeddedStorage)
		if err := def.Provision(ctx); err != nil {
			return err
		}
		a.backend = def
	}
	a.poolKey = a.backend.Key()
	backend := a.backend
	val, _, err := storePool.LoadOrNew(a.poolKey, func() (caddy.Destructor, error) {
		return newSharedStore(backend, a.log.Named("delivery"))
	})
	if err != nil {
		a.poolKey = ""
		return err
	}
	a.shared = val.(*sharedStore)
	a.stats.names = &a.shared.names
	a.seen.p.Store(a.shared.seen)
	a.breakers = a.shared.breakers
	if a.Alert != nil {
		cfg := *a.Alert
		cfg.URL = caddy.NewReplacer().ReplaceAll(cfg.URL, "") // {env.SLACK_WEBHOOK_URL}
		if err := validateAlertURL(cfg.URL); err != nil {
			return err
		}
		// the alert target has no settings: the defaults, fitted to the lease
		src := &Source{Name: alertSource, Destinations: map[string]delivery.Options{storage.DefaultDestination: {URL: cfg.URL}}}
		if err := a.RegisterSource(src); err != nil {
			return fmt.Errorf("alert: %v", err)
		}
		a.alerter = newAlerter(cfg, a, src.targets[storage.DefaultDestination].Timeout)
	}
	return a.registerMetrics(ctx.GetMetricsRegistry())
}

// Validate checks the settings.
func (a *App) Validate() error {
	if a.Workers < 1 || a.Workers > 10000 {
		return fmt.Errorf("workers must be between 1 and 10000")
	}
	if a.Lease < caddy.Duration(time.Second) {
		return fmt.Errorf("lease must be at least 1s")
	}
	return nil
}

// Start opens the store and starts the workers and the retention cleaner.
func (a *App) Start() error {
	st, err := a.Store()
	if err != nil {
		return fmt.Errorf("opening webhook store: %v", err)
	}
	a.refreshPaused(time.Now()) // before the first request and the first lease
	a.warnAccessLogSecrets()
	if a.stats.names.needsSeed() { // once per store, not at every reload
		seedCtx, cancelSeed := context.WithTimeout(context.Background(), 5*time.Second)
		if _, all, err := st.Stats(seedCtx, time.Now()); err == nil {
			a.stats.names.seed(all) // the names stored keep their places
		}
		cancelSeed()
	}
	a.breakers.OnChange(a.breakerChanged)
	if ss := spoolStoreOf(st); ss != nil {
		if a.alerter != nil {
			a.alerter.spool = spoolAlertStateOf(ss.Spool().Dir())
		}
		ss.OnChange(func(c spool.Change) { a.spoolChanged(ss.Spool(), c) })
	}
	d := delivery.New(delivery.Config{
		Store:    st,
		Workers:  a.Workers,
		Lease:    time.Duration(a.Lease),
		Targets:  a.targets(),
		Holds:    a.paused,
		Breakers: a.breakers,
		Tracer:   a.tracerProvider,
		Logger:   a.log.Named("delivery"),
		OnResult: a.onResult,
		Busy:     a.ingestBusy,
	})
	d.Start()
	a.disp.Store(d)
	d.SetTargets(a.targets()) // with a source registered meanwhile

	ctx, cancel := context.WithCancel(context.Background())
	a.stopCleaner = cancel
	a.cleanerDone = make(chan struct{})
	go a.cleaner(ctx, st)
	a.statsDone = make(chan struct{})
	go func() {
		defer close(a.statsDone)
		a.statsFlusher(ctx, st)
	}()
	a.pausesDone = make(chan struct{})
	go func() {
		defer close(a.pausesDone)
		a.pauseTicker(ctx)
	}()
	if a.alerter != nil {
		a.alertsDone = make(chan struct{})
		go func() {
			defer close(a.alertsDone)
			a.alerter.run(ctx)
		}()
	}
	a.log.Info("webhooks app started", zap.String("storage", a.backend.Describe()), zap.Int("workers", a.Workers))
	return nil
}

// Stop stops leasing new jobs and waits a bounded time for deliveries in
// progress; it runs under Caddy's config lock, so it never waits long.
func (a *App) Stop() error {
	if d := a.disp.Swap(nil); d != nil {
		d.Stop(stopGrace)
	}
	var tasks sync.WaitGroup // each waits stopTasksWait at most: together, not one after the other
	tasks.Go(a.rekey.stop)
	tasks.Go(a.tenants.stop)
	tasks.Wait()
	if a.stopCleaner != nil {
		a.stopCleaner()
		<-a.cleanerDone
		<-a.statsDone
		<-a.pausesDone
		if a.alertsDone != nil {
			<-a.alertsDone
			a.alerter.client.CloseIdleConnections()
		}
	}
	return nil
}

// Cleanup closes the idle connections of the upstreams with TLS options of
// their own (RegisterSource built their transports) and releases the
// pooled store, cache and breakers; they close when no config uses them
// anymore (handlers of an old config may enqueue until the
// http app has drained, so this is not done in Stop).
func (a *App) Cleanup() error {
	// counts of deliveries and requests that finished after Stop
	if a.stats != nil && a.shared != nil {
		if st, ok := a.shared.opened(); ok { // never open a store just for this (caddy validate)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			a.flushStats(ctx, st)
			cancel()
		}
	}
	a.closeTransports()
	var err error
	if a.poolKey != "" {
		// late workers (still finishing after Stop) may be updating the
		// cache, which closes with the last config's release of the store
		a.seen.release(seenReleaseWait)
		_, err = storePool.Delete(a.poolKey)
		a.poolKey = ""
	}
	return err
}

// closeTransports closes the idle connections of the upstreams with TLS
// options of their own, whose transports RegisterSource made.
func (a *App) closeTransports() {
	if a.sourceMu == nil { // Provision failed before sources existed
		return
	}
	a.sourceMu.RLock()
	defer a.sourceMu.RUnlock()
	for _, src := range a.sources {
		for _, t := range src.targets {
			t.Transport.Close()
		}
	}
}

func (a *App) cleaner(ctx context.Context, st storage.Janitor) {
	defer close(a.cleanerDone)
	t := time.NewTicker(cleanupInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		dlqRet := time.Duration(a.DLQRetention)
		if dlqRet < 0 {
			dlqRet = 0
		}
		n, err := st.Cleanup(ctx, time.Now(), time.Duration(a.Retention), dlqRet)
		if err != nil && ctx.Err() == nil {
			a.log.Error("retention cleanup", zap.Error(err))
		} else if n > 0 {
			a.log.Debug("retention cleanup", zap.Int("removed", n))
		}
	}
}

// RegisterSource makes a source's delivery settings known to the workers,
// building each destination's target for the app's lease and workers
// (delivery.NewTarget: an explicit timeout that does not fit the lease is
// refused). Each source name may be defined once per config.
func (a *App) RegisterSource(src *Source) error {
	a.sourceMu.Lock()
	defer a.sourceMu.Unlock()
	if _, dup := a.sources[src.Name]; dup {
		return fmt.Errorf("webhook source %q is defined more than once", src.Name)
	}
	if _, ok := src.Destinations[""]; ok { // the dispatcher looks targets up by storage.DestinationOf
		return fmt.Errorf("webhook source %q: the default destination is named %q", src.Name, storage.DefaultDestination)
	}
	src.targets = make(map[string]*delivery.Target, len(src.Destinations))
	for _, name := range slices.Sorted(maps.Keys(src.Destinations)) {
		t, err := delivery.NewTarget(src.Destinations[name], time.Duration(a.Lease), a.Workers)
		if err != nil {
			for _, made := range src.targets {
				made.Transport.Close()
			}
			if !storage.IsDefaultDestination(name) {
				return fmt.Errorf("destination %s: %v", name, err)
			}
			return err
		}
		src.targets[name] = t
	}
	a.sources[src.Name] = src
	if d := a.disp.Load(); d != nil {
		// a handler provisioned into the running config: the workers
		// deliver its events by its targets too
		d.SetTargets(a.targetsLocked())
	}
	return nil
}

// secretsInEffect is how many secrets the configured source's scheme has
// configured (Source.Secrets; 0 for a source not configured).
func (a *App) secretsInEffect(source string) int {
	a.sourceMu.RLock()
	defer a.sourceMu.RUnlock()
	if src, ok := a.sources[source]; ok {
		return src.Secrets
	}
	return 0
}

// sourceNames lists the configured sources (alerts included).
func (a *App) sourceNames() []string {
	a.sourceMu.RLock()
	defer a.sourceMu.RUnlock()
	return slices.Collect(maps.Keys(a.sources))
}

// targets are the configured sources' targets (alerts included), by
// source and destination: what the workers deliver by (delivery.Config).
func (a *App) targets() map[string]map[string]*delivery.Target {
	a.sourceMu.RLock()
	defer a.sourceMu.RUnlock()
	return a.targetsLocked()
}

// targetsLocked is targets with a.sourceMu held.
func (a *App) targetsLocked() map[string]map[string]*delivery.Target {
	out := make(map[string]map[string]*delivery.Target, len(a.sources))
	for name, src := range a.sources {
		out[name] = src.targets
	}
	return out
}

// Store returns the open store, opening it if needed, under the app's
// storage.SealingStore (encryption.go). Errors wrap
// storage.ErrUnavailable.
func (a *App) Store() (storage.Store, error) {
	st, err := a.shared.get()
	if err != nil {
		if !errors.Is(err, storage.ErrUnavailable) {
			err = fmt.Errorf("%w: %v", storage.ErrUnavailable, err)
		}
		return nil, err
	}
	return a.sealing(st), nil
}

// Seen returns the L1 cache of seen event IDs (nil once the app is
// cleaned up).
func (a *App) Seen() *dedupe.Seen { return a.seen.load() }

// seenStatus is what the L1 cache says of key (ok false: not seen, or the
// cache is gone: ask the store). Safe while Cleanup closes the cache.
func (a *App) seenStatus(key string) (status storage.Status, ok bool) {
	a.seen.use(func(s *dedupe.Seen) { status, ok = s.Get(key) })
	return status, ok
}

// rememberSeen records in the L1 cache that key was claimed until until
// with status, for an event of deliveries deliveries (0: not known).
// Safe while Cleanup closes the cache (then it does nothing).
func (a *App) rememberSeen(key string, status storage.Status, deliveries int, until time.Time) {
	a.seen.use(func(s *dedupe.Seen) { s.Add(key, status, deliveries, until) })
}

// forgetSeen removes an event from the L1 cache: the store's answer for
// it changed in a way the cache does not follow (an operator's retry or
// replay queued it again).
func (a *App) forgetSeen(source, eventID string) {
	a.seen.use(func(s *dedupe.Seen) { s.Forget(dedupe.Key(source, eventID)) })
}

// AcceptTimeout bounds the durable write of one accepted webhook.
const AcceptTimeout = 10 * time.Second

// AcceptResult is what became of a webhook given to Accept.
type AcceptResult struct {
	// Duplicate is true when (source, event id) was already claimed within
	// its dedupe window: nothing was stored.
	Duplicate bool
	// Cached is true when the duplicate was answered from the L1 cache,
	// without building the event or asking the store.
	Cached bool
	// Status is the earlier event's status for a duplicate (in_flight
	// included, as stored), StatusQueued for a new event (StatusSpooled
	// for one a node spooled while its store was unreachable).
	Status storage.Status
	// ID is the internal id of the stored (or, from the store, the
	// earlier) event; empty for a Cached duplicate.
	ID string
}

// Accept takes one verified webhook of source: a duplicate of an eventID
// the L1 cache knows is answered from it, before build is called (so this
// path allocates no event); otherwise build makes the event, which is
// stored durably, its id claimed for window, and only then is Accept back.
// The L1 cache learns the outcome (never for longer than what is left of
// the claim) and the workers are woken for a new event.
//
// eventID is the provider's id; "" means the event is not deduplicated
// (build then gives it a generated EventID, with Dedupe false). An error
// of build is returned as is; a store error wraps storage.ErrUnavailable
// or is the store's. The durable write is detached from ctx's
// cancellation (a provider hanging up must not cut it short) and bounded
// by AcceptTimeout.
func (a *App) Accept(ctx context.Context, source, eventID string, window time.Duration, build func() (*storage.Event, error)) (AcceptResult, error) {
	var key string
	if eventID != "" {
		key = dedupe.Key(source, eventID)
		if status, ok := a.seenStatus(key); ok {
			return AcceptResult{Duplicate: true, Cached: true, Status: status}, nil
		}
	}
	ev, err := build()
	if err != nil {
		return AcceptResult{}, err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), AcceptTimeout)
	defer cancel()
	until := time.Now().Add(window)
	res, err := a.enqueueUntil(ctx, ev, until, true)
	if err != nil {
		return AcceptResult{}, err
	}
	if !res.Duplicate {
		st := res.Status // queued, or spooled while the store is unreachable
		if st == "" {
			st = storage.StatusQueued
		}
		if key != "" {
			a.rememberSeen(key, st, max(len(ev.Deliveries), 1), until)
		}
		return AcceptResult{Status: st, ID: res.ID}, nil
	}
	if key != "" {
		// cache it only for what is left of the claim, never beyond; how
		// many deliveries the earlier event has is not known here
		a.rememberSeen(key, res.Status, 0, res.DedupeUntil)
	}
	return AcceptResult{Duplicate: true, Status: res.Status, ID: res.ID}, nil
}

// enqueue stores ev durably (claiming its id for window) and wakes the
// workers. It returns only after the store has made the event durable.
func (a *App) enqueue(ctx context.Context, ev *storage.Event, window time.Duration) (storage.EnqueueResult, error) {
	return a.enqueueUntil(ctx, ev, time.Now().Add(window), false)
}

// enqueueUntil is enqueue with the claim's end. With received, an event
// stored (not a duplicate) gets its audit line before the workers are
// woken, so that no line of its delivery comes before it.
func (a *App) enqueueUntil(ctx context.Context, ev *storage.Event, until time.Time, received bool) (storage.EnqueueResult, error) {
	st, err := a.Store()
	if err != nil {
		return storage.EnqueueResult{}, err
	}
	res, err := st.Enqueue(ctx, ev, until)
	if err == nil && !res.Duplicate && received {
		a.audit(stepReceived, eventFields(ev)...)
		if res.Status == storage.StatusSpooled {
			a.audit(stepSpooled, eventFields(ev)...)
		}
	}
	// the workers lease its deliveries by name, without looking for them
	// (unless its source is held: then they wait for the resume)
	if err == nil && !res.Duplicate {
		if d := a.disp.Load(); d != nil {
			d.Hint(ev.Source, res.Due)
		}
	}
	return res, err
}

// Notify wakes the delivery workers (new or re-enqueued work).
func (a *App) Notify() {
	if d := a.disp.Load(); d != nil {
		d.Notify()
	}
}

// Interface guards
var (
	_ caddy.App          = (*App)(nil)
	_ caddy.Provisioner  = (*App)(nil)
	_ caddy.Validator    = (*App)(nil)
	_ caddy.CleanerUpper = (*App)(nil)
)
