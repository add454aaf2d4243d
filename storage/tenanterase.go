package storage

// Erasing a tenant: every event of one account of a source (a shop that
// uninstalled an app, a customer leaving), with erasure's guarantees for
// each (erase.go: every delivery, DLQ entry and body gone, the claim kept
// so that a resend stays a duplicate).
//
// The events are found as the event browser finds them (ListEvents, by
// source and tenant), once a store that lists from an index of its own has
// entered every event stored so far in it (EventIndexer), newest first
// from the moment the erasure started:
// an event the tenant sends after it is not erased (a second erasure
// takes it). Each page found is erased as one batch (EraseBatch), then
// the progress, with the listing's cursor, is saved in the store, so that
// an erasure cut short (a reload, a crash, the store failing) goes on
// where it stopped when started again; an event erased already is not
// found again. Pause between batches paces an erasure of a large account
// on a busy store. The saved progress also tells a live erasure (saved
// lately) from a dead one, so that two nodes never run the same one.

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"
)

// Tenant erasure states.
const (
	TenantErasureRunning = "running"
	TenantErasureDone    = "done"
	TenantErasureFailed  = "failed"
)

// Bounds of TenantEraseOptions.
const (
	// DefaultTenantEraseBatch is how many events a batch erases at most
	// by default.
	DefaultTenantEraseBatch = 100
	// MaxTenantEraseBatch bounds TenantEraseOptions.Batch (a page of the
	// event browser).
	MaxTenantEraseBatch = EventsMaxLimit
	// MaxTenantErasePause bounds TenantEraseOptions.Pause.
	MaxTenantErasePause = 10 * time.Second
)

// TenantEraseOptions paces a tenant's erasure.
type TenantEraseOptions struct {
	// Batch is how many events a batch erases at most (0:
	// DefaultTenantEraseBatch, at most MaxTenantEraseBatch). A batch
	// examines at most EventsScanFactor times as many events.
	Batch int
	// Pause is the wait between two batches (0: none, at most
	// MaxTenantErasePause).
	Pause time.Duration
}

// Validate says what is wrong with o, naming the field as the admin API
// does (batch, pause).
func (o TenantEraseOptions) Validate() error {
	return checkPace(o.Batch, MaxTenantEraseBatch, o.Pause, MaxTenantErasePause)
}

// TenantErasure is the progress of a tenant's erasure, as saved in the
// store.
type TenantErasure struct {
	// Source and Tenant name the account erased.
	Source string `json:"source"`
	Tenant string `json:"tenant"`
	// State is running, done or failed.
	State string `json:"state"`
	// Until is when the erasure started: the tenant's events received at
	// or before it are erased.
	Until time.Time `json:"until"`
	// Cursor is where the walk goes on (an event listing's cursor).
	Cursor string `json:"cursor,omitempty"`
	// Erased counts the events erased, Deliveries and DLQEntries what they
	// had (EraseResult's counts, summed).
	Erased     int `json:"erased"`
	Deliveries int `json:"deliveries"`
	DLQEntries int `json:"dlq_entries"`
	// Reached is when the oldest event erased so far was received: every
	// event of the tenant received from then to Until is gone.
	Reached time.Time `json:"reached,omitzero"`
	// StartedAt, UpdatedAt and FinishedAt are when the erasure began,
	// saved its last batch and ended.
	StartedAt  time.Time `json:"started_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	// Error says why it failed.
	Error string `json:"error,omitempty"`
}

// TenantErasures keeps the progress of tenants' erasures in the store.
type TenantErasures interface {
	// TenantErasure is the saved progress of the erasure of tenant of
	// source (ErrNotFound: none was started).
	TenantErasure(ctx context.Context, source, tenant string) (TenantErasure, error)
	// SaveTenantErasure saves p, for TenantErasure.
	SaveTenantErasure(ctx context.Context, p TenantErasure) error
}

// TenantErasureKey names the saved progress of the erasure of tenant of
// source in a backend's keys: both names, unambiguous whatever they hold.
func TenantErasureKey(source, tenant string) string {
	return strconv.Itoa(len(source)) + ":" + source + ":" + tenant
}

// TenantEraseStore is what a tenant's erasure uses of a store.
type TenantEraseStore interface {
	Browser
	Eraser
	TenantErasures
}

// TenantErasureStale is how long a running erasure may go without saving
// its progress before it is taken for dead (its node killed, or cut off
// from the store): it saves after every batch, and a batch with its pause
// takes seconds. A live one is never started twice (by another node, or
// by the next config of a node while the old one still runs); a dead one
// is resumed by the next start.
const TenantErasureStale = time.Minute

// tenantEraseHeartbeat is how often a running erasure saves its progress
// while a batch takes long (a slow store), well within TenantErasureStale.
var tenantEraseHeartbeat = TenantErasureStale / 4

// Live reports whether p is an erasure running somewhere at now: running,
// and saved within TenantErasureStale.
func (p TenantErasure) Live(now time.Time) bool {
	return p.State == TenantErasureRunning && now.Sub(p.UpdatedAt) < TenantErasureStale
}

// Settled is p as an operator reads it at now: a running erasure that
// stopped saving its progress (its node was killed) is failed, to be
// started again.
func (p TenantErasure) Settled(now time.Time) TenantErasure {
	if p.State == TenantErasureRunning && !p.Live(now) {
		p.State = TenantErasureFailed
		p.Error = "no progress saved since " + p.UpdatedAt.UTC().Format(time.RFC3339) +
			": the node running it stopped; start it again to resume it"
	}
	return p
}

// Errors a tenant's erasure saves, in TenantErasure.Error, when it stops
// before its end (never the store's own error, which may name hosts).
const (
	tenantEraseInterrupted = "interrupted by a config reload or shutdown: start it again to resume it"
	tenantEraseStoreFailed = "the store failed: start it again to resume it"
)

// StartTenantErasure starts the erasure of tenant of source at now, saved
// as running, or resumes one that failed or died where it stopped; one
// done (or none) starts over, up to now. An erasure live elsewhere (Live)
// is returned as it is, with started false.
func StartTenantErasure(ctx context.Context, s TenantErasures, source, tenant string, now time.Time) (p TenantErasure, started bool, err error) {
	if source == "" || tenant == "" {
		return TenantErasure{}, false, errors.New("a tenant's erasure needs its source and tenant")
	}
	p, err = s.TenantErasure(ctx, source, tenant)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return p, false, err
	}
	if p.Live(now) {
		return p, false, nil
	}
	if p.State == "" || p.State == TenantErasureDone {
		p = TenantErasure{Source: source, Tenant: tenant, Until: now, StartedAt: now}
	}
	p.State, p.Error, p.FinishedAt, p.UpdatedAt = TenantErasureRunning, "", time.Time{}, now
	if err := s.SaveTenantErasure(ctx, p); err != nil {
		return p, false, err
	}
	return p, true, nil
}

// EraseTenant starts (StartTenantErasure) and runs (RunTenantErasure) the
// erasure of tenant of source; ErrTenantErasureRunning when it is live
// elsewhere.
func EraseTenant(ctx context.Context, s TenantEraseStore, source, tenant string, o TenantEraseOptions,
	erased func(info *EventInfo, res EraseResult), progress func(TenantErasure)) (TenantErasure, error) {
	if err := o.Validate(); err != nil {
		return TenantErasure{}, err
	}
	p, started, err := StartTenantErasure(ctx, s, source, tenant, time.Now())
	if err != nil {
		return p, err
	}
	if !started {
		return p, ErrTenantErasureRunning
	}
	return RunTenantErasure(ctx, s, p, o, erased, progress)
}

// ErrTenantErasureRunning is EraseTenant's answer for an erasure live
// elsewhere.
var ErrTenantErasureRunning = errors.New("this tenant's erasure is running already")

// RunTenantErasure erases the events of the erasure p started
// (StartTenantErasure) as described above, o.Batch at a time with o.Pause
// between batches, saving its progress after each batch. erased (if set)
// is called with each event erased, as the listing reported it just
// before, and its result; progress (if set) with the progress after each
// batch. It returns the final progress. An error (the store failing, ctx
// cancelled) stops it: it is saved as failed, with the cursor the last
// batch left, to be resumed.
func RunTenantErasure(ctx context.Context, s TenantEraseStore, p TenantErasure, o TenantEraseOptions,
	erased func(info *EventInfo, res EraseResult), progress func(TenantErasure)) (TenantErasure, error) {
	if err := o.Validate(); err != nil {
		return p, err
	}
	batch := o.Batch
	if batch == 0 {
		batch = DefaultTenantEraseBatch
	}
	// the progress is saved after each batch, and meanwhile every
	// tenantEraseHeartbeat, so that a slow batch does not look dead
	var mu sync.Mutex
	latest := p
	save := func(p TenantErasure) error {
		mu.Lock()
		defer mu.Unlock()
		latest = p
		return s.SaveTenantErasure(context.WithoutCancel(ctx), p)
	}
	stop := make(chan struct{})
	var beats sync.WaitGroup
	beats.Go(func() {
		t := time.NewTicker(tenantEraseHeartbeat)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				mu.Lock()
				if latest.State == TenantErasureRunning {
					latest.UpdatedAt = time.Now()
					_ = s.SaveTenantErasure(context.WithoutCancel(ctx), latest) // the next batch's save says if the store fails
				}
				mu.Unlock()
			}
		}
	})
	p, err := runTenantErasure(ctx, p, s, save, batch, o.Pause, erased, progress)
	close(stop)
	beats.Wait()
	if err != nil {
		p.State, p.Error, p.UpdatedAt = TenantErasureFailed, tenantEraseStoreFailed, time.Now()
		if ctx.Err() != nil {
			p.Error = tenantEraseInterrupted
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if serr := s.SaveTenantErasure(sctx, p); serr != nil {
			err = errors.Join(err, serr) // left running: Settled reads it as failed once stale
		}
	}
	return p, err
}

func runTenantErasure(ctx context.Context, p TenantErasure, s TenantEraseStore, save func(TenantErasure) error, batch int, pause time.Duration,
	erased func(info *EventInfo, res EraseResult), progress func(TenantErasure)) (TenantErasure, error) {
	// an event stored before the erasure started is in the listing's index,
	// whichever process stored it
	if ix, ok := As[EventIndexer](s); ok {
		if err := ix.IndexEvents(ctx); err != nil {
			return p, err
		}
	}
	for {
		if err := ctx.Err(); err != nil {
			return p, err
		}
		page, err := s.ListEvents(ctx, EventFilter{Source: p.Source, Tenant: p.Tenant, Until: p.Until, Cursor: p.Cursor, Limit: batch})
		if err != nil {
			return p, err
		}
		ids := make([]string, len(page.Events))
		for i := range page.Events {
			ids[i] = page.Events[i].ID // the internal id names one event exactly
		}
		if len(ids) > 0 {
			results, err := s.EraseBatch(ctx, p.Source, ids, time.Now())
			for i, res := range results {
				if res.ID == "" {
					continue // gone meanwhile
				}
				info := &page.Events[i]
				p.Erased, p.Deliveries, p.DLQEntries = p.Erased+1, p.Deliveries+res.Deliveries, p.DLQEntries+res.DLQEntries
				if p.Reached.IsZero() || info.ReceivedAt.Before(p.Reached) {
					p.Reached = info.ReceivedAt
				}
				if erased != nil {
					erased(info, res)
				}
			}
			if err != nil {
				return p, err // what the batch erased is counted; the cursor stays before it
			}
		}
		p.Cursor, p.UpdatedAt = page.NextCursor, time.Now()
		if page.NextCursor == "" {
			p.State, p.FinishedAt = TenantErasureDone, p.UpdatedAt
		}
		if err := save(p); err != nil {
			return p, err
		}
		if progress != nil {
			progress(p)
		}
		if p.State == TenantErasureDone {
			return p, nil
		}
		if pause > 0 {
			select {
			case <-ctx.Done():
				return p, ctx.Err()
			case <-time.After(pause):
			}
		}
	}
}

// EventIndexer is a store whose event listing (Browser) reads an index
// kept beside the events, which an event stored by another process may be
// missing from for a while (the Redis store's events index, and a node of
// an earlier version sharing it). IndexEvents enters every event stored
// so far in it.
type EventIndexer interface {
	IndexEvents(ctx context.Context) error
}
