package embedded_test

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/storagetest"
)

// TestClaimCost measures a dedupe claim's cost on disk (docs/benchmarks.md,
// "Claims per GiB"): the store's live tables after a flush and a full
// compaction, with and without the claims of 20,000 removed events. It
// fails if a claim came to cost more than 512 bytes (fewer than about two
// million claims a GiB), so that a layout change that bloats them is seen.
func TestClaimCost(t *testing.T) {
	open := func(t *testing.T) storage.Store {
		return openStore(t, filepath.Join(t.TempDir(), "claims.db"))
	}
	size := func(t *testing.T, s storage.Store) int64 {
		db := s.(*testStore).Engine()
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := db.Compact(t.Context(), []byte{0}, []byte{math.MaxUint8, math.MaxUint8, math.MaxUint8, math.MaxUint8}, false); err != nil {
			t.Fatal(err)
		}
		// the live tables: obsolete files (DiskSpaceUsage counts them)
		// are deleted once nothing reads them
		total := db.Metrics().Total()
		return total.TablesSize
	}
	if per := storagetest.ClaimCost(t, open, size, 20000); per > 512 || per <= 0 {
		t.Errorf("%.0f bytes a claim, want at most 512", per)
	}
}
