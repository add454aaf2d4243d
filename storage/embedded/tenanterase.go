package embedded

import (
	"context"

	"github.com/hookline/hookline/storage"
)

// The saved progress of tenants' erasures (storage.TenantErasures), in
// bMeta beside the rekey's.

// tenantErasureKey is the bMeta key of the saved progress of a tenant's
// erasure.
func tenantErasureKey(source, tenant string) []byte {
	return []byte("tenant-erasure:" + storage.TenantErasureKey(source, tenant))
}

// TenantErasure implements storage.TenantErasures.
func (s *Store) TenantErasure(ctx context.Context, source, tenant string) (storage.TenantErasure, error) {
	var p storage.TenantErasure
	found, err := s.getMeta(tenantErasureKey(source, tenant), &p)
	if err == nil && !found {
		err = storage.ErrNotFound
	}
	return p, err
}

// SaveTenantErasure implements storage.TenantErasures.
func (s *Store) SaveTenantErasure(ctx context.Context, p storage.TenantErasure) error {
	return s.putMeta(ctx, tenantErasureKey(p.Source, p.Tenant), p)
}
