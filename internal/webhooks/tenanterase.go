package webhooks

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/hookline/hookline/dedupe"
	"github.com/hookline/hookline/internal/operator"
	"github.com/hookline/hookline/storage"
)

// Erasing a tenant (DELETE /webhooks/tenants/{source}/{tenant}): the
// erasure runs in the background (storage.EraseTenant), its progress
// saved in the store after each batch; each event erased is answered
// "erased" by this node's L1 cache from then on and gets its audit line,
// as an event erased alone does. The runs of this process are stopped
// with the app (their progress is saved: the next start resumes them).

// maxTenantErasures is how many tenants' erasures run at once in a
// process: each holds a store transaction a batch (the embedded store's
// scrub is one at a time anyway).
const maxTenantErasures = 4

// Audit steps of a tenant's erasure: its start and its end, beside the
// "erased" line of each event.
const (
	stepTenantEraseStarted = "tenant_erase_started"
	stepTenantErased       = "tenant_erased"
)

// tenantErasures are the erasures running in this process, by
// storage.TenantErasureKey.
type tenantErasures struct {
	mu      sync.Mutex
	running map[string]*tenantRun
}

// tenantRun is one erasure running.
type tenantRun struct {
	progress storage.TenantErasure
	cancel   context.CancelFunc
	done     chan struct{}
}

// EraseTenant starts erasing every event of tenant of source in the
// background, or resumes one cut short; an erasure of that tenant already
// running in this process is returned as it is (started false).
// operator.ErrTooManyErasures when maxTenantErasures run already.
func (a *App) EraseTenant(ctx context.Context, source, tenant string, o storage.TenantEraseOptions) (storage.TenantErasure, bool, error) {
	if err := o.Validate(); err != nil {
		return storage.TenantErasure{}, false, err
	}
	st, err := a.Store()
	if err != nil {
		return storage.TenantErasure{}, false, err
	}
	te := a.tenants
	key := storage.TenantErasureKey(source, tenant)
	te.mu.Lock()
	defer te.mu.Unlock()
	if r, ok := te.running[key]; ok {
		return r.progress, false, nil
	}
	if len(te.running) >= maxTenantErasures {
		return storage.TenantErasure{}, false, operator.ErrTooManyErasures
	}
	saved, err := st.TenantErasure(ctx, source, tenant)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return storage.TenantErasure{}, false, err
	}
	now := time.Now()
	r := &tenantRun{progress: storage.TenantErasure{Source: source, Tenant: tenant, State: storage.TenantErasureRunning,
		Until: now, StartedAt: now, UpdatedAt: now}, done: make(chan struct{})}
	resumed := saved.State == storage.TenantErasureRunning || saved.State == storage.TenantErasureFailed
	if resumed {
		r.progress = saved
		r.progress.State, r.progress.Error = storage.TenantErasureRunning, ""
	}
	rctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	te.running[key] = r
	a.audit(stepTenantEraseStarted, zap.String("source", source), zap.String("tenant", tenant), zap.Bool("resumed", resumed),
		zap.Int("erased", r.progress.Erased))
	go a.runTenantErasure(rctx, st, key, r, o)
	return r.progress, true, nil
}

func (a *App) runTenantErasure(ctx context.Context, st storage.Store, key string, r *tenantRun, o storage.TenantEraseOptions) {
	defer close(r.done)
	source, tenant := r.progress.Source, r.progress.Tenant
	p, err := storage.EraseTenant(ctx, st, source, tenant, o, func(info *storage.EventInfo, res storage.EraseResult) {
		a.seen.use(func(s *dedupe.Seen) {
			s.Update(dedupe.Key(source, info.EventID), storage.StatusErased, res.DedupeUntil)
		})
		a.audit(stepErased, append(auditFields(source, info.EventID, res.ID, info.EventType, info.Tenant, info.RequestID),
			zap.Int("deliveries", res.Deliveries), zap.Int("dlq_entries", res.DLQEntries))...)
	}, func(p storage.TenantErasure) {
		a.tenants.mu.Lock()
		r.progress = p
		a.tenants.mu.Unlock()
		a.Notify() // an erased head of an ordered key lets the next delivery go
	})
	if err != nil {
		// saved as failed, with its cursor: the next start resumes it
		p.State, p.Error = storage.TenantErasureFailed, "the store failed: start it again to resume it"
		if errors.Is(err, context.Canceled) {
			p.Error = "interrupted by a config reload or shutdown: start it again to resume it"
		}
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if serr := st.SaveTenantErasure(sctx, p); serr != nil {
			a.log.Error("saving a tenant erasure's failure", zap.String("source", source), zap.Error(serr))
		}
		cancel()
		if !errors.Is(err, context.Canceled) {
			a.log.Error("tenant erasure failed", zap.String("source", source), zap.Error(err), zap.Int("erased", p.Erased))
		}
	} else {
		a.audit(stepTenantErased, zap.String("source", source), zap.String("tenant", tenant), zap.Int("erased", p.Erased),
			zap.Int("deliveries", p.Deliveries), zap.Int("dlq_entries", p.DLQEntries), zap.Time("until", p.Until))
	}
	a.tenants.mu.Lock()
	delete(a.tenants.running, key)
	a.tenants.mu.Unlock()
}

// TenantErasure is the progress of the erasure of tenant of source
// running in this process, or else the last one saved in the store (any
// node's); storage.ErrNotFound when none was started.
func (a *App) TenantErasure(ctx context.Context, source, tenant string) (storage.TenantErasure, error) {
	te := a.tenants
	te.mu.Lock()
	if r, ok := te.running[storage.TenantErasureKey(source, tenant)]; ok {
		defer te.mu.Unlock()
		return r.progress, nil
	}
	te.mu.Unlock()
	st, err := a.Store()
	if err != nil {
		return storage.TenantErasure{}, err
	}
	return st.TenantErasure(ctx, source, tenant)
}

// stopTenantErasures cancels the erasures running in this process and
// waits for them (their progress is saved: the next start resumes them).
func (a *App) stopTenantErasures() {
	if a.tenants == nil {
		return
	}
	a.tenants.mu.Lock()
	runs := make([]*tenantRun, 0, len(a.tenants.running))
	for _, r := range a.tenants.running {
		runs = append(runs, r)
	}
	a.tenants.mu.Unlock()
	for _, r := range runs {
		r.cancel()
		<-r.done
	}
}
