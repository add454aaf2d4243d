package embedded_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/hookline/hookline/internal/testing/drainbench"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded"
)

// BenchmarkDrain100k drains a backlog of 100k 1 KiB events from a bbolt
// file (drainbench.Benchmark).
//
//	go test -run '^$' -bench Drain100k -benchtime 1x ./storage/embedded/
func BenchmarkDrain100k(b *testing.B) {
	dir := b.TempDir()
	runs := 0
	drainbench.Benchmark(b, func() storage.Store {
		runs++
		s, err := embedded.Open(filepath.Join(dir, fmt.Sprintf("drain%d.db", runs)), embedded.Options{})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}, 100_000, nil)
}
