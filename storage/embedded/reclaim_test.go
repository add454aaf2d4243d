package embedded_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded"
	"github.com/hookline/hookline/storage/embedded/kv"
	"github.com/hookline/hookline/storage/storagetest"
)

// reclaimed loads n delivered events of size bytes, sweeps them all past
// retention (and their claims past their window), and returns the size of
// the store's files before and after, once the engine has deleted what it
// no longer needs.
func reclaimed(tb testing.TB, n, size int) (full, after int64, s *embedded.Store) {
	path := filepath.Join(tb.TempDir(), "events.db")
	s, err := embedded.Open(path, embedded.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	storagetest.LoadFinished(tb, s, n, size, storage.Delivered)
	full = dirSize(tb, path)
	ctx := context.Background()
	if _, err := s.Cleanup(ctx, time.Now().Add(48*time.Hour), time.Hour, time.Hour); err != nil {
		tb.Fatal(err)
	}
	if err := kv.FilesDeleted(ctx, s.Engine(), true); err != nil {
		tb.Fatal(err)
	}
	return full, dirSize(tb, path), s
}

// TestDiskReclaimedAfterRetention: 30,000 events of 4 KiB, delivered and
// swept past retention, leave the store's files at a few MiB (a
// write-ahead log and the tables of what is left), not at the hundreds
// of MiB they took: the cleanup compacts what it emptied.
func TestDiskReclaimedAfterRetention(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 30,000 events")
	}
	full, after, s := reclaimed(t, 30_000, 4096)
	t.Logf("30,000 events of 4 KiB: %d MiB full, %d MiB after retention", full>>20, after>>20)
	if full < 100<<20 {
		t.Fatalf("the full store takes %d MiB: the events are not in it, the test proves nothing", full>>20)
	}
	if s.Compactions() == 0 {
		t.Error("the cleanup compacted nothing")
	}
	if after > 16<<20 {
		t.Errorf("after retention the store's files take %d MiB, want under 16", after>>20)
	}
}

// BenchmarkDiskAfterRetention reports the store's files (MiB) full and
// after retention for HOOKLINE_RECLAIM_EVENTS (default 20,000) events of
// 4 KiB; the target is 1M under 100 MiB:
//
//	HOOKLINE_RECLAIM_EVENTS=1000000 go test -run '^$' -bench DiskAfterRetention -benchtime 1x -timeout 1h ./storage/embedded/
func BenchmarkDiskAfterRetention(b *testing.B) {
	n := 20_000
	if v, err := strconv.Atoi(os.Getenv("HOOKLINE_RECLAIM_EVENTS")); err == nil && v > 0 {
		n = v
	}
	for range b.N {
		full, after, _ := reclaimed(b, n, 4096)
		b.ReportMetric(float64(full)/(1<<20), "MiB-full")
		b.ReportMetric(float64(after)/(1<<20), "MiB-after")
	}
}
