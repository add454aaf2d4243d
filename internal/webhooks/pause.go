package webhooks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/storage"
)

// Pauses. The operators' pauses live in the store (storage.Pause holds
// their rules); each node keeps the ones in force in pausedCache, read
// again every pausedRefresh by pauseTicker, so that a pause or resume on
// any node reaches every node within about that time. An expired pause
// counts as gone at once on every node; the one node whose
// compare-and-delete removes it from the store announces the automatic
// resume. A resumed pause's backlog drains at a catch-up pace (catchUp).

// pausedRefresh is how often each node reads the pauses again.
const pausedRefresh = time.Second

// pausedCache holds the pauses in force as this node last read them.
type pausedCache struct {
	mu    sync.Mutex // one refresh at a time
	state atomic.Pointer[pauseState]
	// catchUp maps a resumed pause's key (storage.PauseKey) to the end of
	// its catch-up pace (copy on write)
	catchUp atomic.Pointer[map[string]time.Time]
}

// pauseState is one reading of the pauses in force.
type pauseState struct {
	list  []storage.Pause
	byKey map[string]storage.Pause
	// tenants lists, by source, the tenants with a pause (expired ones
	// too, until the next reading)
	tenants map[string][]string
}

// live returns the pause stored under key if it is in force at now.
func (s *pauseState) live(key string, now time.Time) (storage.Pause, bool) {
	if s == nil {
		return storage.Pause{}, false
	}
	p, ok := s.byKey[key]
	return p, ok && !p.Expired(now)
}

// pauseDestination is the destination name a pause keeps ("default" for
// forward_to's; "" stays the whole source).
func pauseDestination(destination string) string {
	if destination == "" {
		return ""
	}
	return storage.DestinationOf(&storage.Event{Destination: destination})
}

// SourcePause returns the pause of the whole source in force (ok false:
// none). The ingress refuses with 503 when it does not hold.
func (a *App) SourcePause(source string) (storage.Pause, bool) {
	return a.paused.state.Load().live(source, time.Now())
}

// DeliveriesPaused reports whether deliveries wait: with destination "",
// whether the whole source is paused; else whether its deliveries to
// destination wait (the source's pause or the destination's).
func (a *App) DeliveriesPaused(source, destination string) bool {
	return a.paused.Paused(source, destination)
}

// TenantsPaused reports whether any tenant of source has a pause, so
// that the ingress looks for an event's tenant before storing it only
// then.
func (a *App) TenantsPaused(source string) bool {
	st := a.paused.state.Load()
	return st != nil && len(st.tenants[source]) > 0
}

// TenantPause returns the pause of one tenant of source in force (ok
// false: none). The ingress refuses the tenant's events with 503 when it
// does not hold, and marks them apart (storage.Event.Apart) when it does.
func (a *App) TenantPause(source, tenant string) (storage.Pause, bool) {
	return a.paused.tenantPause(source, tenant)
}

// tenantPause returns the pause of one tenant of source in force, as this
// node last read the pauses (ok false: none, or no tenant).
func (c *pausedCache) tenantPause(source, tenant string) (storage.Pause, bool) {
	if tenant == "" {
		return storage.Pause{}, false
	}
	return c.state.Load().live(storage.TenantPauseKey(source, tenant), time.Now())
}

// TenantPaused implements delivery.Holds: whether the tenant of source
// has a pause in force, as this node last read the pauses.
func (c *pausedCache) TenantPaused(source, tenant string) bool {
	_, ok := c.tenantPause(source, tenant)
	return ok
}

// PausedTenants implements delivery.Holds: the tenants of source with a
// pause in force, as this node last read the pauses.
func (c *pausedCache) PausedTenants(source string) []string {
	st := c.state.Load()
	if st == nil || len(st.tenants[source]) == 0 {
		return nil
	}
	now := time.Now()
	var out []string
	for _, tenant := range st.tenants[source] {
		if _, ok := st.live(storage.TenantPauseKey(source, tenant), now); ok {
			out = append(out, tenant)
		}
	}
	return out
}

// Paused implements delivery.Holds: the pauses in force as this node last
// read them (App.DeliveriesPaused).
func (c *pausedCache) Paused(source, destination string) bool {
	st, now := c.state.Load(), time.Now()
	if _, ok := st.live(source, now); ok {
		return true
	}
	if destination == "" {
		return false
	}
	_, ok := st.live(storage.PauseKey(source, pauseDestination(destination)), now)
	return ok
}

// Pauses lists the pauses in force as this node knows them.
func (a *App) Pauses() []storage.Pause {
	st, now := a.paused.state.Load(), time.Now()
	if st == nil {
		return nil
	}
	var out []storage.Pause
	for _, p := range st.list {
		if !p.Expired(now) {
			out = append(out, p)
		}
	}
	return out
}

// PausedSources lists the sources paused as a whole, as this node knows
// them.
func (a *App) PausedSources() []string {
	var out []string
	for _, p := range a.Pauses() {
		if p.WholeSource() {
			out = append(out, p.Source)
		}
	}
	return out
}

// SetPause pauses a source, one of its destinations (p.Destination) or
// one of its tenants (p.Tenant), or changes its pause, for every node; it
// is announced (alert, Caddy event, audit line). A destination the
// configured source does not have is storage.ErrUnknownDestination.
func (a *App) SetPause(ctx context.Context, p storage.Pause) error {
	if p.Tenant != "" && p.Destination != "" {
		return errors.New("a tenant's pause holds every destination of its source: it names none")
	}
	p.Destination = pauseDestination(p.Destination)
	if p.Destination != "" {
		a.sourceMu.RLock()
		src, ok := a.sources[p.Source]
		known := !ok
		if ok {
			_, known = src.targetOf(p.Destination)
		}
		a.sourceMu.RUnlock()
		if !known {
			return fmt.Errorf("%w: %q of source %q", storage.ErrUnknownDestination, p.Destination, p.Source)
		}
	}
	st, err := a.Store()
	if err != nil {
		return err
	}
	if err := st.SetPause(ctx, p); err != nil {
		return err
	}
	a.announcePause(ctx, stepPaused, p, false)
	a.refreshNow()
	return nil
}

// Resume ends the pause of a source (destination "") or of one of its
// destinations for every node and announces it; ok false: there was none.
// The backlog it held drains paced, starting at once.
func (a *App) Resume(ctx context.Context, source, destination string) (storage.Pause, bool, error) {
	return a.resume(ctx, storage.PauseKey(source, pauseDestination(destination)))
}

// ResumeTenant ends the pause of one tenant of source for every node and
// announces it; ok false: there was none. Its deliveries go at once,
// taking turns with the other tenants' (no catch-up pace: the tenant's
// backlog holds back no other tenant's deliveries).
func (a *App) ResumeTenant(ctx context.Context, source, tenant string) (storage.Pause, bool, error) {
	return a.resume(ctx, storage.TenantPauseKey(source, tenant))
}

// resume ends the pause stored under key (storage.Pause.Key).
func (a *App) resume(ctx context.Context, key string) (storage.Pause, bool, error) {
	st, err := a.Store()
	if err != nil {
		return storage.Pause{}, false, err
	}
	p, ok, err := st.Resume(ctx, key)
	if err != nil || !ok {
		return p, ok, err
	}
	a.announcePause(ctx, stepResumed, p, false)
	a.refreshNow()
	return p, true, nil
}

// refreshNow reads the pauses again at once (after this node changed one).
func (a *App) refreshNow() {
	a.paused.mu.Lock()
	defer a.paused.mu.Unlock()
	a.refreshPaused(time.Now())
}

// pauseTicker reads the pauses every pausedRefresh until ctx ends, so that
// pauses set elsewhere and expiries take effect without traffic.
func (a *App) pauseTicker(ctx context.Context) {
	t := time.NewTicker(pausedRefresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			a.paused.mu.Lock()
			a.refreshPaused(now)
			a.paused.mu.Unlock()
		}
	}
}

// refreshPaused reads the pauses from the store (keeping the last reading
// when it cannot), removes the expired ones (announcing those this node
// removed) and starts the catch-up pace of the pauses gone since the last
// reading. The caller holds a.paused.mu (or is Start).
func (a *App) refreshPaused(now time.Time) {
	st, err := a.Store()
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ps, err := st.Pauses(ctx)
	if err != nil {
		return
	}
	next := &pauseState{byKey: make(map[string]storage.Pause, len(ps)), tenants: map[string][]string{}}
	var expired []storage.Pause
	for _, p := range ps {
		if p.Expired(now) {
			expired = append(expired, p)
			continue
		}
		next.byKey[p.Key()] = p
		next.list = append(next.list, p)
		if p.Tenant != "" {
			next.tenants[p.Source] = append(next.tenants[p.Source], p.Tenant)
		}
	}
	old := a.paused.state.Swap(next)
	var gone []storage.Pause
	if old != nil {
		for k, p := range old.byKey {
			if _, still := next.byKey[k]; !still {
				gone = append(gone, p)
			}
		}
	} else {
		gone = expired // expired while no node ran (a restart)
	}
	for _, p := range expired {
		if won, err := st.ExpirePause(ctx, p); err == nil && won {
			a.announcePause(ctx, stepResumed, p, true)
		}
	}
	if len(gone) > 0 {
		a.startCatchUp(ctx, st, gone, now)
		a.Notify() // their deliveries may go now
	}
}

// startCatchUp paces the backlog of resumed pauses: their lanes without a
// rate_limit take storage.DefaultCatchUpRate until the deliveries waiting
// at the resume had the time to go (storage.CatchUpFor). Every node does
// the same, and the pace state is the store's, so the rate holds for all
// nodes together.
func (a *App) startCatchUp(ctx context.Context, st storage.Store, gone []storage.Pause, now time.Time) {
	byLane, err := st.QueueByLane(ctx)
	if err != nil {
		byLane = nil // pace for the margin only
	}
	next := map[string]time.Time{}
	if cur := a.paused.catchUp.Load(); cur != nil {
		for k, end := range *cur {
			if end.After(now) {
				next[k] = end
			}
		}
	}
	for _, p := range gone {
		if p.Tenant != "" {
			continue // a tenant's backlog takes turns with the others' unpaced
		}
		// what still waits behind a tenant's pause does not drain now
		waiting := storage.CountsOfDestination(a.withoutHeldTenants(byLane, p.Source), p.Source, p.Destination).Queued
		next[p.Key()] = now.Add(storage.CatchUpFor(waiting, storage.DefaultCatchUpRate))
	}
	a.paused.catchUp.Store(&next)
}

// withoutHeldTenants is byLane (storage.QueueByLane) without the own
// lanes of the tenants of source still paused (storage.TenantLane).
func (a *App) withoutHeldTenants(byLane map[string]storage.Counts, source string) map[string]storage.Counts {
	held := a.paused.PausedTenants(source)
	if len(held) == 0 {
		return byLane
	}
	out := make(map[string]storage.Counts, len(byLane))
	for lane, c := range byLane {
		if !slices.ContainsFunc(held, func(t string) bool { return storage.IsTenantLane(lane, t) }) {
			out[lane] = c
		}
	}
	return out
}

// CatchingUp implements delivery.Holds: whether a resumed pause of the
// destination or of its source is still draining (startCatchUp), so that
// without a rate_limit of its own it goes at the catch-up pace.
func (c *pausedCache) CatchingUp(source, destination string) bool {
	m := c.catchUp.Load()
	if m == nil || len(*m) == 0 {
		return false
	}
	now := time.Now()
	for _, k := range []string{source, storage.PauseKey(source, pauseDestination(destination))} {
		if end, ok := (*m)[k]; ok && end.After(now) {
			return true
		}
	}
	return false
}

// Interface guard
var _ delivery.Holds = (*pausedCache)(nil)

// announcePause sends the alert (when alert is configured), the Caddy
// event and the audit line of a pause set or changed (stepPaused) or
// ended (stepResumed; automatic: its `for` ran out).
func (a *App) announcePause(ctx context.Context, step string, p storage.Pause, automatic bool) {
	data := map[string]any{
		"source": p.Source, "destination": p.Destination, "tenant": p.Tenant, "mode": p.Mode(), "accept": p.Accept,
		"reason": p.Reason, "since": p.Since, "until": p.Until, "automatic": automatic,
	}
	name := eventPaused
	if step == stepResumed {
		name = eventResumed
	}
	a.emit(name, data)
	a.audit(step, zap.String("source", p.Source), zap.String("destination", p.Destination),
		zap.String("tenant", p.Tenant), zap.String("mode", p.Mode()), zap.String("reason", p.Reason), zap.Time("since", p.Since),
		zap.Time("until", p.Until), zap.Bool("automatic", automatic))
	if a.alerter != nil {
		a.alerter.send(ctx, "pause:"+p.Key(), pauseAlertText(step, p, automatic), time.Now())
	}
}

// pauseAlertText is the alert of a pause or resume.
func pauseAlertText(step string, p storage.Pause, automatic bool) string {
	what := fmt.Sprintf("source %q", p.Source)
	switch {
	case p.Destination != "":
		what = fmt.Sprintf("destination %q of source %q", p.Destination, p.Source)
	case p.Tenant != "":
		what = fmt.Sprintf("tenant %q of source %q", p.Tenant, p.Source)
	}
	if step == stepResumed {
		how := "by an operator"
		if automatic {
			how = "automatically (its pause ran out)"
		}
		return fmt.Sprintf(":arrow_forward: hookline: %s resumed %s; its waiting deliveries go now, paced.", what, how)
	}
	mode := "refusing new events with 503"
	if p.Holds() {
		mode = "holding: events are accepted and stored, deliveries wait"
	}
	text := fmt.Sprintf(":double_vertical_bar: hookline: %s paused (%s)", what, mode)
	if !p.Until.IsZero() {
		text += " until " + p.Until.UTC().Format(time.RFC3339)
	}
	if p.Reason != "" {
		text += ": " + p.Reason
	}
	return text + "."
}
