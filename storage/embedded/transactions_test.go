package embedded_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookline/hookline/storage/embedded"
	"github.com/hookline/hookline/storage/storagetest"
)

// TestTransactionsPerBatch guards the write transactions (each an fsync)
// of the delivery side, as TestRoundTripsPerBatch does Redis's round
// trips: leasing a batch is no write transaction at all (leases are kept
// in memory), and a batch finished at once shares group commits, not one
// per job.
func TestTransactionsPerBatch(t *testing.T) {
	// commits counts the write transactions; while slow is set, each one
	// takes 50 ms more (a slow disk), so that writers arriving meanwhile
	// queue for the next one, however fast the machine's own fsync
	var commits atomic.Int64
	var slow atomic.Bool
	s := openWithOptions(t, embedded.Options{BeforeCommit: func(int) error {
		commits.Add(1)
		if slow.Load() {
			time.Sleep(50 * time.Millisecond)
		}
		return nil
	}})
	ctx := t.Context()
	for i := range 300 {
		src := []string{"stripe", "github", "shopify"}[i%3]
		if _, err := s.Enqueue(ctx, storagetest.NewEvent(src, fmt.Sprintf("evt_tx_%d", i)), time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []int{1, 64} {
		t.Run(fmt.Sprintf("%d jobs", n), func(t *testing.T) {
			commits.Store(0)
			jobs, err := s.Lease(ctx, time.Now(), n, time.Minute, nil)
			if err != nil || len(jobs) != n {
				t.Fatalf("Lease(%d) = %d jobs, %v", n, len(jobs), err)
			}
			if got := commits.Load(); got != 0 {
				t.Errorf("Lease(%d) took %d write transactions, want none", n, got)
			}
			commits.Store(0)
			slow.Store(true)
			defer slow.Store(false)
			storagetest.FinishAtOnce(t, s, jobs)
			// the first finish commits alone, the others share the next
			// commit (one more for a goroutine scheduled late)
			if got, bound := commits.Load(), int64(min(n, 3)); got > bound {
				t.Errorf("finishing %d jobs at once took %d write transactions, want at most %d", n, got, bound)
			}
		})
	}
}
