package embedded_test

import (
	"path/filepath"
	"testing"

	"github.com/hookline/hookline/storage/embedded"
	"github.com/hookline/hookline/storage/storagetest"
)

// BenchmarkEnqueueFanOut: ingest of events with 1 and 3 deliveries, fsynced
// through shared commits (docs/reference.md: 3 destinations cost at most 1.3x one).
//
//	go test -run '^$' -bench EnqueueFanOut ./storage/embedded/
func BenchmarkEnqueueFanOut(b *testing.B) {
	for _, n := range []int{1, 3} {
		b.Run(map[int]string{1: "deliveries=1", 3: "deliveries=3"}[n], func(b *testing.B) {
			st, err := embedded.Open(filepath.Join(b.TempDir(), "bench.db"), embedded.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			storagetest.BenchmarkEnqueue(b, st, n)
		})
	}
}
