package operator

import (
	"fmt"
	"testing"
)

// TestTenantList: the counters by tenant of the last hour make the list
// of a source's busiest tenants, busiest first, at most MaxTenantsListed,
// the rest summed into "(other)"; all-time counters by tenant are none
// of it (they are counted in the windows only) and never plain counters.
func TestTenantList(t *testing.T) {
	recent := map[string]int64{
		"received":                             100,
		TenantCounter("accepted", "a"):         5,
		TenantCounter("delivered", "a"):        4,
		TenantCounter("dead", "a"):             1,
		TenantCounter("accepted", "b"):         9,
		TenantCounter("accepted", OtherTenant): 3,
		TenantCounter("bogus", "c"):            7,
	}
	for i := range MaxTenantsListed + 2 {
		recent[TenantCounter("accepted", fmt.Sprintf("z-%02d", i))] = 1
	}
	var b breakdown
	plain := b.split(recent, false)
	if len(plain) != 1 || plain["received"] != 100 {
		t.Errorf("plain counters %v: a counter by tenant counted as a plain one", plain)
	}
	b.split(map[string]int64{TenantCounter("accepted", "a"): 1000}, true)
	list := b.tenantList()
	if len(list) != MaxTenantsListed+1 {
		t.Fatalf("%d tenants listed, want %d and (other): %v", len(list), MaxTenantsListed, list)
	}
	if list[0] != (TenantStats{"b", TypeCounts{Received: 9}}) || list[1] != (TenantStats{"a", TypeCounts{Received: 5, Delivered: 4, Dead: 1}}) {
		t.Errorf("busiest first: %v", list[:2])
	}
	// 22 tenants of one event each: 18 listed, 4 into (other) with its 3
	if last := list[len(list)-1]; last != (TenantStats{OtherTenant, TypeCounts{Received: 3 + 4}}) {
		t.Errorf("(other) = %+v, want 7 received", last)
	}
	if (&breakdown{}).tenantList() != nil {
		t.Error("a source without tenants lists some")
	}
}
