package embedded_test

import (
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/hookline/hookline/storage/embedded"
	"github.com/hookline/hookline/storage/embedded/kv"
	"github.com/hookline/hookline/storage/storagetest"
)

// TestListsReadTheIndexOnly: a DLQ or replay page whose filter matches
// nothing examines its whole scan budget (1000 index entries for a limit
// of 50) and decodes none of the 4 KiB entries behind them: what it
// allocates is a small part of what the entries hold.
func TestListsReadTheIndexOnly(t *testing.T) {
	for _, tc := range storagetest.NothingPages {
		st, err := embedded.Open(filepath.Join(t.TempDir(), "hookline.db"), embedded.Options{Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		const n, size = 1000, 4096
		storagetest.LoadFinished(t, st, n, size, tc.Result)
		// the engine's flushes and compactions allocate in this process
		// too: measured once they are over
		if err := kv.Settled(t.Context(), st.Engine()); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if err := tc.List(t, st); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		// reading the entries would copy their n*size bytes at least; the
		// index's keys and values are copied too (the engine's reads are
		// copies: about 450 B an entry examined, with the blocks read, and
		// more in a race build), a quarter of that
		if got := after.TotalAlloc - before.TotalAlloc; got > n*size/4 {
			t.Errorf("result %d: a page matching nothing allocated %d KiB over %d entries of %d KiB: it read the entries, not the index",
				tc.Result, got>>10, n, size>>10)
		}
		st.Close()
	}
}
