package redisstore

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
)

// TestGateSkipLuaAgreesWithGo: the scripts skip exactly the lanes
// storage.Gate.Skipped skips, destinations' lanes included.
func TestGateSkipLuaAgreesWithGo(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { c.Close() })
	script := redis.NewScript(luaSkipped + `
local skip = {}
for i = 2, #ARGV, 2 do skip[ARGV[i]] = ARGV[i + 1] end
if skipped(skip, ARGV[1]) then return 1 end
return 0
`)
	gates := []map[string]bool{
		{"stripe": true},
		{"stripe~replay": true},
		{"stripe": true, "stripe/billing": false},
		{"stripe/billing~replay": true},
		{"github": true},
		// a paused tenant's lanes apart
		{storage.TenantLane("stripe", "acct_1"): true, storage.TenantLane("stripe/billing", "acct_1"): true},
		{"stripe/billing": false, storage.TenantLane("stripe/billing", "acct_1"): true},
	}
	lanes := []string{"stripe", "stripe~replay", "stripe/billing", "stripe/billing~replay", "stripe/crm", "github/billing", "a.b-c_d/x.y",
		"stripe#3", "stripe/billing#0", "stripe/crm#15", // tenants' shares
		storage.TenantLane("stripe", "acct_1"), storage.TenantLane("stripe/billing", "acct_1"),
		storage.TenantLane("stripe/crm", "acct_1"), storage.TenantLane("stripe", "acct_2")}
	for _, skip := range gates {
		g := &storage.Gate{Skip: skip}
		for _, lane := range lanes {
			args := append([]any{lane}, skipArgs(g)...)
			v, err := script.Run(t.Context(), c, []string{"k"}, args...).Int()
			if err != nil {
				t.Fatal(err)
			}
			if (v == 1) != g.Skipped(lane) {
				t.Errorf("skip %v, lane %q: Lua %v, Go %v", skip, lane, v == 1, g.Skipped(lane))
			}
		}
	}
}

// TestShareQuotaLuaAgreesWithGo: the peek script reads from a lane's
// tenant shares the quota storage.ShareQuota says.
func TestShareQuotaLuaAgreesWithGo(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { c.Close() })
	script := redis.NewScript(luaShareQuota + `return shareQuota(tonumber(ARGV[1]), tonumber(ARGV[2]))`)
	for _, shares := range []int{0, 1, 2, 3, 7, 16, 17, 40} {
		for _, n := range []int{1, 2, 5, 16, 31, 64, 500} {
			v, err := script.Run(t.Context(), c, []string{"k"}, shares, n).Int()
			if err != nil {
				t.Fatal(err)
			}
			if want := storage.ShareQuota(shares, n); v != want {
				t.Errorf("shareQuota(%d, %d): Lua %d, Go %d", shares, n, v, want)
			}
		}
	}
}
