package storage

import (
	"context"
	"sync"
	"testing"
	"time"
)

// slowTenantStore is a TenantEraseStore whose one page of events takes
// a while to list: a slow store.
type slowTenantStore struct {
	mu    sync.Mutex
	saved []TenantErasure
	slow  time.Duration
}

func (s *slowTenantStore) ListEvents(ctx context.Context, f EventFilter) (EventPage, error) {
	time.Sleep(s.slow)
	return EventPage{}, nil
}

func (s *slowTenantStore) Erase(context.Context, string, string, time.Time) (EraseResult, error) {
	return EraseResult{}, ErrNotFound
}

func (s *slowTenantStore) EraseBatch(_ context.Context, _ string, ids []string, _ time.Time) ([]EraseResult, error) {
	return make([]EraseResult, len(ids)), nil
}

func (s *slowTenantStore) TenantErasure(context.Context, string, string) (TenantErasure, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.saved) == 0 {
		return TenantErasure{}, ErrNotFound
	}
	return s.saved[len(s.saved)-1], nil
}

func (s *slowTenantStore) SaveTenantErasure(_ context.Context, p TenantErasure) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saved = append(s.saved, p)
	return nil
}

// TestTenantErasureHeartbeat: while a batch takes long, a running erasure
// saves its progress every tenantEraseHeartbeat, so that it stays live
// (TenantErasure.Live) for the other nodes; the last save is its end.
func TestTenantErasureHeartbeat(t *testing.T) {
	defer func(d time.Duration) { tenantEraseHeartbeat = d }(tenantEraseHeartbeat)
	tenantEraseHeartbeat = 20 * time.Millisecond
	s := &slowTenantStore{slow: 150 * time.Millisecond}
	p, err := EraseTenant(t.Context(), s, "shop", "slow", TenantEraseOptions{}, nil, nil)
	if err != nil || p.State != TenantErasureDone {
		t.Fatalf("EraseTenant = %+v, %v", p, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	beats := 0
	for i, sv := range s.saved {
		if sv.State == TenantErasureRunning && i > 0 && sv.UpdatedAt.After(s.saved[i-1].UpdatedAt) {
			beats++
		}
	}
	if beats < 3 {
		t.Errorf("saves during a batch of 150ms with a heartbeat of 20ms: %d, want several", beats)
	}
	if last := s.saved[len(s.saved)-1]; last.State != TenantErasureDone {
		t.Errorf("the last save is %+v, want the erasure done (no heartbeat after its end)", last)
	}
}
