package webhooks

import (
	"fmt"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/operator"
)

// TestRecentSigFailures: a source keeps its last 10 failures, newest
// first, past the ring's wrap; sources not asked for, or without one, are
// left out.
func TestRecentSigFailures(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	src := "ring-" + t.Name()
	for i := range 12 {
		noteSignatureFailure(src, operator.SignatureFailure{At: t0.Add(time.Duration(i) * time.Second), Reason: fmt.Sprint("r", i)})
	}
	got := recentSigFailures([]string{src, "none-" + t.Name()})
	if len(got) != 1 || len(got[src]) != recentSignatureFailures {
		t.Fatalf("got %v, want the one source with %d", got, recentSignatureFailures)
	}
	for k, f := range got[src] {
		if want := fmt.Sprint("r", 11-k); f.Reason != want {
			t.Errorf("failure %d is %s, want %s (newest first)", k, f.Reason, want)
		}
	}
}
