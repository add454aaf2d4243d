package webhooks

import (
	"fmt"
	"testing"

	"github.com/hookline/hookline/internal/operator"
)

// TestStatsTypesBounded: a source's event types are counted apart up to
// maxTypesPerSource; the ones past it are counted together as otherType,
// while a type already counted keeps its own counter.
func TestStatsTypesBounded(t *testing.T) {
	var b statsBuffer
	for i := range maxTypesPerSource + 10 {
		b.addType("src", "accepted", fmt.Sprintf("t%d", i), 1)
	}
	b.addType("src", "delivered", "t0", 1)
	b.addType("other-src", "accepted", "t999", 1) // another source has its own bound
	d := b.take()
	if n := d["src"][operator.TypeCounter("accepted", otherType)]; n != 10 {
		t.Errorf("%s counted %d, want 10", otherType, n)
	}
	if n := d["src"][operator.TypeCounter("delivered", "t0")]; n != 1 {
		t.Errorf("delivered t0 counted %d, want 1", n)
	}
	if n := d["src"][operator.TypeCounter("accepted", fmt.Sprintf("t%d", maxTypesPerSource-1))]; n != 1 {
		t.Errorf("the last type within the bound counted %d, want 1", n)
	}
	if n := d["other-src"][operator.TypeCounter("accepted", "t999")]; n != 1 {
		t.Errorf("other source's type counted %d, want 1", n)
	}
	if got := len(d["src"]); got != maxTypesPerSource+2 { // the types, (other), delivered t0
		t.Errorf("%d counters, want %d", got, maxTypesPerSource+2)
	}
}
