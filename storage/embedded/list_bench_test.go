package embedded_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded"
	"github.com/hookline/hookline/storage/storagetest"
)

// BenchmarkDLQList times a DLQ page over 20k entries of 4 KiB
// (HOOKLINE_BENCH_EVENTS to change it; storagetest.BenchmarkDLQList).
//
//	go test -run '^$' -bench DLQList -benchmem ./storage/embedded/
func BenchmarkDLQList(b *testing.B) {
	st, err := embedded.Open(filepath.Join(b.TempDir(), "hookline.db"), embedded.Options{Timeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	storagetest.BenchmarkDLQList(b, st, storagetest.DLQListBenchSize())
}

// BenchmarkCleanup times the retention of HOOKLINE_BENCH_EVENTS (20,000)
// delivered jobs, then DLQ entries (storagetest.BenchmarkCleanup).
//
//	go test -run '^$' -bench Cleanup -benchtime 3x ./storage/embedded/
func BenchmarkCleanup(b *testing.B) {
	storagetest.BenchmarkCleanup(b, func(b *testing.B) storage.Store {
		st, err := embedded.Open(filepath.Join(b.TempDir(), "hookline.db"), embedded.Options{Timeout: time.Second})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		return st
	}, storagetest.DLQListBenchSize())
}
