package embedded_test

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

// TestTenantPausesApart: a tenant's pause is kept in a bucket of its own,
// which a build from before tenants' pauses never reads (it would take
// one for a pause of the whole source).
func TestTenantPausesApart(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "events.db"))
	src, _ := storage.NewPause("shop", "", true, "", 0, time.Now())
	tenant, _ := storage.NewPause("shop", "", false, "", 0, time.Now())
	tenant.Tenant = "big.myshopify.com"
	for _, p := range []storage.Pause{src, tenant} {
		if err := s.SetPause(t.Context(), p); err != nil {
			t.Fatal(err)
		}
	}
	plain, tenants, err := s.PauseKeysForTest()
	if err != nil || !slices.Equal(plain, []string{"shop"}) || !slices.Equal(tenants, []string{"shop#big.myshopify.com"}) {
		t.Errorf("pause keys: %q and tenants' %q, %v", plain, tenants, err)
	}
}
