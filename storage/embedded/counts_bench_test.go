package embedded_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/hookline/hookline/storage/embedded"
	"github.com/hookline/hookline/storage/storagetest"
)

// BenchmarkCounts times the counts of a store holding 100k events
// (HOOKLINE_BENCH_EVENTS to change it; storagetest.BenchmarkCounts): the
// counters against the scans.
//
//	go test -run '^$' -bench Counts ./storage/embedded/
func BenchmarkCounts(b *testing.B) {
	st, err := embedded.Open(filepath.Join(b.TempDir(), "hookline.db"), embedded.Options{Timeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	storagetest.BenchmarkCounts(b, st, storagetest.CountsBenchSize())
}
