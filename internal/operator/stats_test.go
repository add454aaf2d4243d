package operator

import (
	"reflect"
	"testing"
)

// TestSplitTypes: the counters by type leave the source's plain counters
// (so they count neither as rejected nor in the totals) and sum by type.
func TestSplitTypes(t *testing.T) {
	c := map[string]int64{
		"accepted": 3, "delivered": 2, "dead": 1, "unauthorized": 1,
		TypeCounter("accepted", "orders/create"): 2, TypeCounter("delivered", "orders/create"): 2,
		TypeCounter("accepted", "a:b.c"): 1, TypeCounter("dead", "a:b.c"): 1,
		TypeCounter("retry", "a:b.c"): 5, // not a type outcome: dropped
		"type:malformed":              7,
	}
	types := map[string]TypeStats{}
	plain := splitTypes(c, types, func(t *TypeStats) *TypeCounts { return &t.LastHour })
	if want := map[string]int64{"accepted": 3, "delivered": 2, "dead": 1, "unauthorized": 1}; !reflect.DeepEqual(plain, want) {
		t.Errorf("plain %v, want %v", plain, want)
	}
	want := map[string]TypeStats{
		"orders/create": {LastHour: TypeCounts{Received: 2, Delivered: 2}},
		"a:b.c":         {LastHour: TypeCounts{Received: 1, Dead: 1}},
	}
	if !reflect.DeepEqual(types, want) {
		t.Errorf("types %+v, want %+v", types, want)
	}
	if s := summarize(plain); s.Rejected != 1 {
		t.Errorf("rejected %d, want 1 (type counters must not count)", s.Rejected)
	}
	if splitTypes(nil, types, func(t *TypeStats) *TypeCounts { return &t.AllTime }) != nil {
		t.Error("nil counters split to non-nil")
	}
}
