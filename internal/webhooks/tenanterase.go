package webhooks

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/hookline/hookline/dedupe"
	"github.com/hookline/hookline/internal/operator"
	"github.com/hookline/hookline/storage"
)

// Erasing a tenant (DELETE /webhooks/tenants/{source}/{tenant}): the
// erasure runs in the background (storage.RunTenantErasure), its progress
// saved in the store after each batch; each event erased is answered
// "erased" by this node's L1 cache from then on and gets its audit line,
// as an event erased alone does. The runs of this process stop with the
// app (background.go), saved as failed: the next start resumes them. An
// erasure live on another node (or the other config of this one, during
// a reload) is not started twice (storage.TenantErasure.Live).

// maxTenantErasures is how many tenants' erasures run at once in a
// process: each holds a store transaction a batch (the embedded store's
// scrub is one at a time anyway).
const maxTenantErasures = 4

// Audit steps of a tenant's erasure: its start and its end, or its stop
// before its end, beside the "erased" line of each event.
const (
	stepTenantEraseStarted = "tenant_erase_started"
	stepTenantErased       = "tenant_erased"
	stepTenantEraseStopped = "tenant_erase_stopped"
)

// newTenantErasures are the tenants' erasures of an app, by
// storage.TenantErasureKey.
func newTenantErasures() *tasks[storage.TenantErasure] {
	return newTasks[storage.TenantErasure](maxTenantErasures, operator.ErrTooManyErasures)
}

// EraseTenant starts erasing every event of tenant of source in the
// background, or resumes one cut short; an erasure of that tenant running
// already (here or elsewhere) is returned as it is (started false).
// operator.ErrTooManyErasures when maxTenantErasures run already.
func (a *App) EraseTenant(ctx context.Context, source, tenant string, o storage.TenantEraseOptions) (storage.TenantErasure, bool, error) {
	if err := o.Validate(); err != nil {
		return storage.TenantErasure{}, false, err
	}
	st, err := a.Store()
	if err != nil {
		return storage.TenantErasure{}, false, err
	}
	return a.tenants.start(storage.TenantErasureKey(source, tenant), func() (storage.TenantErasure, bool, error) {
		p, started, err := storage.StartTenantErasure(ctx, st, source, tenant, time.Now())
		if started {
			a.audit(stepTenantEraseStarted, zap.String("source", source), zap.String("tenant", tenant),
				zap.Bool("resumed", p.StartedAt.Before(p.UpdatedAt)), zap.Int("erased", p.Erased), zap.Time("until", p.Until))
		}
		return p, started, err
	}, func(ctx context.Context, p storage.TenantErasure, set func(storage.TenantErasure)) storage.TenantErasure {
		return a.runTenantErasure(ctx, st, p, o, set)
	})
}

func (a *App) runTenantErasure(ctx context.Context, st storage.Store, p storage.TenantErasure, o storage.TenantEraseOptions,
	set func(storage.TenantErasure)) storage.TenantErasure {
	source, tenant := p.Source, p.Tenant
	p, err := storage.RunTenantErasure(ctx, st, p, o, func(info *storage.EventInfo, res storage.EraseResult) {
		a.seen.use(func(s *dedupe.Seen) {
			s.Update(dedupe.Key(source, info.EventID), storage.StatusErased, res.DedupeUntil)
		})
		a.audit(stepErased, append(auditFields(source, info.EventID, res.ID, info.EventType, info.Tenant, info.RequestID),
			zap.Int("deliveries", res.Deliveries), zap.Int("dlq_entries", res.DLQEntries))...)
	}, func(p storage.TenantErasure) {
		set(p)
		a.Notify() // an erased head of an ordered key lets the next delivery go
	})
	counts := []zap.Field{zap.String("source", source), zap.String("tenant", tenant), zap.Int("erased", p.Erased),
		zap.Int("deliveries", p.Deliveries), zap.Int("dlq_entries", p.DLQEntries), zap.Time("until", p.Until)}
	if err != nil {
		// saved as failed, with its cursor: the next start resumes it
		a.audit(stepTenantEraseStopped, append(counts, zap.String("reason", p.Error))...)
		if ctx.Err() == nil {
			a.log.Error("tenant erasure failed", zap.String("source", source), zap.String("tenant", tenant),
				zap.Int("erased", p.Erased), zap.Error(err))
		}
		return p
	}
	a.audit(stepTenantErased, counts...)
	return p
}

// TenantErasure is the progress of the erasure of tenant of source
// running in this process, or else the last one saved in the store (any
// node's, storage.TenantErasure.Settled); storage.ErrNotFound when none
// was started.
func (a *App) TenantErasure(ctx context.Context, source, tenant string) (storage.TenantErasure, error) {
	if p, ok := a.tenants.get(storage.TenantErasureKey(source, tenant)); ok {
		return p, nil
	}
	st, err := a.Store()
	if err != nil {
		return storage.TenantErasure{}, err
	}
	p, err := st.TenantErasure(ctx, source, tenant)
	return p.Settled(time.Now()), err
}
