package redisstore

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/storage"
)

// The saved progress of tenants' erasures (storage.TenantErasures): one
// string key each, beside the rekey's.

// tenantErasureKey is the key of the saved progress of a tenant's
// erasure.
func (s *Store) tenantErasureKey(source, tenant string) string {
	return "{" + s.opts.Prefix + ":meta}:tenant-erasure:" + storage.TenantErasureKey(source, tenant)
}

// TenantErasure implements storage.TenantErasures.
func (s *Store) TenantErasure(ctx context.Context, source, tenant string) (storage.TenantErasure, error) {
	var p storage.TenantErasure
	v, err := s.c.Get(ctx, s.tenantErasureKey(source, tenant)).Result()
	if errors.Is(err, redis.Nil) {
		return p, storage.ErrNotFound
	}
	if err != nil {
		return p, unavailable(err)
	}
	return p, json.Unmarshal([]byte(v), &p)
}

// SaveTenantErasure implements storage.TenantErasures.
func (s *Store) SaveTenantErasure(ctx context.Context, p storage.TenantErasure) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return unavailable(s.c.Set(ctx, s.tenantErasureKey(p.Source, p.Tenant), b, 0).Err())
}
