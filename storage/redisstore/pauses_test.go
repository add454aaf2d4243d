package redisstore

import (
	"testing"
	"time"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
)

// TestTenantPausesApart: a tenant's pause is kept in a hash of its own,
// which a node of a build from before tenants' pauses never reads (it
// would take one for a pause of the whole source during a rolling
// upgrade).
func TestTenantPausesApart(t *testing.T) {
	srv := redistest.Start(t)
	s := openTest(t, srv.Addr, Options{Prefix: redistest.Prefix(), Partitions: 1})
	ctx := t.Context()
	src, _ := storage.NewPause("shop", "", true, "", 0, time.Now())
	tenant, _ := storage.NewPause("shop", "", false, "", 0, time.Now())
	tenant.Tenant = "big.myshopify.com"
	for _, p := range []storage.Pause{src, tenant} {
		if err := s.SetPause(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	plain, err1 := s.c.HKeys(ctx, s.pausesKey()).Result()
	tenants, err2 := s.c.HKeys(ctx, s.tenantPausesKey()).Result()
	if err1 != nil || err2 != nil || len(plain) != 1 || plain[0] != "shop" || len(tenants) != 1 || tenants[0] != "shop#big.myshopify.com" {
		t.Errorf("pauses %q, tenants' pauses %q (%v, %v)", plain, tenants, err1, err2)
	}
	if ok, err := s.ExpirePause(ctx, tenant); err != nil || !ok {
		t.Errorf("ExpirePause of the tenant's pause = %v, %v", ok, err)
	}
	if n, err := s.c.HLen(ctx, s.tenantPausesKey()).Result(); err != nil || n != 0 {
		t.Errorf("tenants' pauses after the expiry: %d, %v", n, err)
	}
}
