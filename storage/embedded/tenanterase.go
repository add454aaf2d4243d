package embedded

import (
	"context"
	"encoding/json"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded/kv"
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
	found := false
	err := s.view(func(tx *kv.Tx) error {
		b := tx.Bucket(bMeta)
		if b == nil {
			return nil
		}
		if v := b.Get(tenantErasureKey(source, tenant)); v != nil {
			found = true
			return json.Unmarshal(v, &p)
		}
		return nil
	})
	if err == nil && !found {
		err = storage.ErrNotFound
	}
	return p, err
}

// SaveTenantErasure implements storage.TenantErasures.
func (s *Store) SaveTenantErasure(ctx context.Context, p storage.TenantErasure) error {
	v, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return s.update(ctx, func(tx *kv.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bMeta)
		if err != nil {
			return err
		}
		return b.Put(tenantErasureKey(p.Source, p.Tenant), v)
	})
}
