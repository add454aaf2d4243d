package operator_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/hookline/hookline/internal/operator"
	"github.com/hookline/hookline/storage"
)

// fakeApp is an operator.App over maps: the API tested without Caddy or a
// store.
type fakeApp struct {
	mu sync.Mutex
	// unavailable makes Available and every operation fail as an
	// unreachable store does.
	unavailable bool
	// fail, when set, is the error of every operation.
	fail    error
	entries map[string]*storage.DLQEntry
	events  map[string]*storage.EventInfo // by source + "/" + event id
	stats   operator.Stats
	buckets map[storage.StatsResolution][]storage.StatsBucket
	health  map[string]operator.Health
	paused  map[string]storage.Pause
	redrive operator.Redrive
	replay  operator.Replay
	// encryption is what Encryption says; rekey the running or last rekey
	encryption operator.EncryptionInfo
	rekey      storage.RekeyProgress
	// rekeyOptions is what the last StartRekey was asked for
	rekeyOptions storage.RekeyOptions
	// tenants are the tenants' erasures, by source + "/" + tenant;
	// tenantOptions what the last EraseTenant was asked for
	tenants       map[string]storage.TenantErasure
	tenantOptions storage.TenantEraseOptions

	// what the last calls were given
	erased       []string  // the events EraseEvent was asked for, source/event id
	dedupeUntil  time.Time // the claim EraseEvent says is kept
	filter       storage.DLQFilter
	eventFilter  storage.EventFilter
	replayFilter storage.ReplayFilter
	limit        int
	dryRun       bool
	text         string
}

func newFakeApp() *fakeApp {
	return &fakeApp{entries: map[string]*storage.DLQEntry{}, events: map[string]*storage.EventInfo{}, paused: map[string]storage.Pause{},
		tenants: map[string]storage.TenantErasure{}}
}

var errUnavailable = fmt.Errorf("%w: dial tcp 10.0.0.7:6379: connection refused", storage.ErrUnavailable)

func (f *fakeApp) err() error {
	if f.unavailable {
		return errUnavailable
	}
	return f.fail
}

func (f *fakeApp) Available() error {
	if f.unavailable {
		return errUnavailable
	}
	return nil
}

func (f *fakeApp) Stats(_ context.Context, _ time.Time) (operator.Stats, error) {
	return f.stats, f.err()
}

func (f *fakeApp) StatsBuckets(_ context.Context, res storage.StatsResolution, from, to time.Time) ([]storage.StatsBucket, error) {
	var out []storage.StatsBucket
	for _, b := range f.buckets[res] {
		if !b.Start.Before(from) && b.Start.Before(to) {
			out = append(out, b)
		}
	}
	return out, f.err()
}

func (f *fakeApp) Health(context.Context) (map[string]operator.Health, error) {
	return f.health, f.err()
}

func (f *fakeApp) Pauses() []storage.Pause {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []storage.Pause
	for _, p := range f.paused {
		out = append(out, p)
	}
	storage.SortPauses(out)
	return out
}

func (f *fakeApp) SetPause(_ context.Context, p storage.Pause) error {
	if err := f.err(); err != nil {
		return err
	}
	if p.Destination == "missing" {
		return storage.ErrUnknownDestination
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.paused[p.Key()] = p
	return nil
}

func (f *fakeApp) Resume(_ context.Context, source, destination string) (storage.Pause, bool, error) {
	if err := f.err(); err != nil {
		return storage.Pause{}, false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.paused[storage.PauseKey(source, destination)]
	delete(f.paused, storage.PauseKey(source, destination))
	return p, ok, nil
}

func (f *fakeApp) ResumeTenant(_ context.Context, source, tenant string) (storage.Pause, bool, error) {
	if err := f.err(); err != nil {
		return storage.Pause{}, false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.paused[storage.TenantPauseKey(source, tenant)]
	delete(f.paused, storage.TenantPauseKey(source, tenant))
	return p, ok, nil
}

func (f *fakeApp) LookupEvent(_ context.Context, source, eventID string) (*storage.EventInfo, error) {
	if err := f.err(); err != nil {
		return nil, err
	}
	if info, ok := f.events[source+"/"+eventID]; ok {
		return info, nil
	}
	return nil, storage.ErrNotFound
}

func (f *fakeApp) ListEvents(_ context.Context, flt storage.EventFilter) (storage.EventPage, error) {
	f.eventFilter = flt
	if err := f.err(); err != nil {
		return storage.EventPage{}, err
	}
	if flt.Cursor != "" && flt.Cursor != "next" {
		return storage.EventPage{}, storage.ErrInvalidCursor
	}
	page := storage.EventPage{Events: []storage.EventInfo{}}
	for _, k := range slices.Sorted(maps.Keys(f.events)) {
		if info := f.events[k]; flt.Matches(info) {
			page.Events = append(page.Events, *info)
		}
	}
	if flt.Cursor == "" && len(page.Events) > 0 {
		page.NextCursor = "next"
	}
	return page, nil
}

func (f *fakeApp) EraseEvent(_ context.Context, source, eventID string) (storage.EraseResult, error) {
	f.erased = append(f.erased, source+"/"+eventID)
	if err := f.err(); err != nil {
		return storage.EraseResult{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	info, ok := f.events[source+"/"+eventID]
	if !ok {
		return storage.EraseResult{}, storage.ErrNotFound
	}
	delete(f.events, source+"/"+eventID)
	res := storage.EraseResult{ID: info.ID, Deliveries: max(len(info.Deliveries), 1), DedupeUntil: f.dedupeUntil}
	for id, e := range f.entries {
		if e.Source == source && e.EventID == eventID {
			delete(f.entries, id)
			res.DLQEntries++
		}
	}
	return res, nil
}

func (f *fakeApp) ListDead(_ context.Context, flt storage.DLQFilter) (storage.DLQPage, error) {
	f.filter = flt
	if err := f.err(); err != nil {
		return storage.DLQPage{}, err
	}
	if flt.Cursor != "" && flt.Cursor != "next" {
		return storage.DLQPage{}, storage.ErrInvalidCursor
	}
	page := storage.DLQPage{Entries: []storage.DLQEntry{}}
	for _, id := range slices.Sorted(maps.Keys(f.entries)) {
		if e := f.entries[id]; flt.Matches(e) {
			page.Entries = append(page.Entries, *e)
		}
	}
	return page, nil
}

func (f *fakeApp) GetDead(_ context.Context, id string) (*storage.DLQEntry, error) {
	if err := f.err(); err != nil {
		return nil, err
	}
	e, ok := f.entries[id]
	if !ok {
		return nil, storage.ErrDLQNotFound
	}
	return e, nil
}

func (f *fakeApp) RetryDead(ctx context.Context, id string) error {
	return f.SetDeadStatus(ctx, id, storage.DLQRetried, "")
}

func (f *fakeApp) RedriveDead(_ context.Context, flt storage.DLQFilter, dryRun bool) (operator.Redrive, error) {
	f.filter, f.limit, f.dryRun = flt, flt.Limit, dryRun
	return f.redrive, f.err()
}

func (f *fakeApp) ReplayDelivered(_ context.Context, flt storage.ReplayFilter, dryRun bool) (operator.Replay, error) {
	f.replayFilter, f.dryRun = flt, dryRun
	return f.replay, f.err()
}

func (f *fakeApp) SetDeadStatus(_ context.Context, id string, status storage.DLQStatus, text string) error {
	if err := f.err(); err != nil {
		return err
	}
	e, ok := f.entries[id]
	if !ok {
		return storage.ErrDLQNotFound
	}
	if err := storage.CheckDLQTransition(e.Status, status); err != nil {
		return err
	}
	e.Status, f.text = status, text
	return nil
}

// Interface guards
var _ operator.App = (*fakeApp)(nil)

func (f *fakeApp) Encryption() operator.EncryptionInfo { return f.encryption }

func (f *fakeApp) StartRekey(_ context.Context, o storage.RekeyOptions) (storage.RekeyProgress, bool, error) {
	f.rekeyOptions = o
	if err := f.err(); err != nil {
		return storage.RekeyProgress{}, false, err
	}
	if !f.encryption.Enabled {
		return storage.RekeyProgress{}, false, storage.ErrNoKey
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	started := f.rekey.State != storage.RekeyRunning
	if started {
		f.rekey = storage.RekeyProgress{State: storage.RekeyRunning, KeyID: f.encryption.KeyID, StartedAt: time.Now()}
	}
	return f.rekey, started, nil
}

func (f *fakeApp) RekeyStatus(context.Context) (storage.RekeyProgress, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rekey, f.err()
}

func (f *fakeApp) RedactPayload(_ string, payload []byte) []byte { return payload }

func (f *fakeApp) EraseTenant(_ context.Context, source, tenant string, o storage.TenantEraseOptions) (storage.TenantErasure, bool, error) {
	f.tenantOptions = o
	if err := f.err(); err != nil {
		return storage.TenantErasure{}, false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.tenants[source+"/"+tenant]
	if ok && p.State == storage.TenantErasureRunning {
		return p, false, nil
	}
	p = storage.TenantErasure{Source: source, Tenant: tenant, State: storage.TenantErasureRunning, Until: time.Now(), StartedAt: time.Now()}
	f.tenants[source+"/"+tenant] = p
	return p, true, nil
}

func (f *fakeApp) TenantErasure(_ context.Context, source, tenant string) (storage.TenantErasure, error) {
	if err := f.err(); err != nil {
		return storage.TenantErasure{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.tenants[source+"/"+tenant]
	if !ok {
		return p, storage.ErrNotFound
	}
	return p, nil
}
