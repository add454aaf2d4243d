package embedded_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

// TestStatsRetention: Cleanup removes the minute buckets past 48 hours
// and the hour buckets past 35 days, never the all-time totals.
func TestStatsRetention(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "hookline.db"))
	ctx := t.Context()
	at := time.Now().Truncate(time.Hour).Add(30 * time.Minute)
	if err := s.AddStats(ctx, storage.StatsBatch{At: at, Counters: map[string]map[string]int64{"stripe": {"accepted": 3}}}); err != nil {
		t.Fatal(err)
	}
	buckets := func(res storage.StatsResolution) int {
		t.Helper()
		bs, err := s.StatsBuckets(ctx, res, at.Add(-res.Width()), at.Add(res.Width()))
		if err != nil {
			t.Fatal(err)
		}
		return len(bs)
	}
	for _, tc := range []struct {
		after          time.Duration
		minutes, hours int
	}{
		{time.Hour, 1, 1},
		{storage.StatsRetention + 2*time.Minute, 0, 1},
		{storage.StatsHourRetention + 2*time.Hour, 0, 0},
	} {
		if _, err := s.Cleanup(ctx, at.Add(tc.after), 365*24*time.Hour, 0); err != nil {
			t.Fatal(err)
		}
		if m, h := buckets(storage.StatsByMinute), buckets(storage.StatsByHour); m != tc.minutes || h != tc.hours {
			t.Errorf("%v later: %d minute and %d hour buckets, want %d and %d", tc.after, m, h, tc.minutes, tc.hours)
		}
	}
	if _, all, err := s.Stats(ctx, at); err != nil || all["stripe"]["accepted"] != 3 {
		t.Errorf("all-time totals after the sweeps: %v %v", all, err)
	}
}

// TestStatsBatchIDsForgotten: Cleanup forgets the IDs of batches applied
// more than storage.StatsBatchMemory ago (the bucket holds the last hour's
// only): a batch sent again within the memory is applied once, one sent
// again after it counts again.
func TestStatsBatchIDsForgotten(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "hookline.db"))
	ctx := t.Context()
	batch := storage.StatsBatch{ID: "b-1", At: time.Now(), Counters: map[string]map[string]int64{"stripe": {"accepted": 1}}}
	add := func() {
		t.Helper()
		if err := s.AddStats(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	total := func() int64 {
		t.Helper()
		_, all, err := s.Stats(ctx, time.Now().Add(-time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		return all["stripe"]["accepted"]
	}
	add()
	if _, err := s.Cleanup(ctx, time.Now().Add(storage.StatsBatchMemory-time.Minute), 365*24*time.Hour, 0); err != nil {
		t.Fatal(err)
	}
	add()
	if n := total(); n != 1 {
		t.Fatalf("within the memory: counted %d, want 1", n)
	}
	if _, err := s.Cleanup(ctx, time.Now().Add(storage.StatsBatchMemory+time.Minute), 365*24*time.Hour, 0); err != nil {
		t.Fatal(err)
	}
	add()
	if n := total(); n != 2 {
		t.Fatalf("after the memory: counted %d, want 2 (the ID forgotten)", n)
	}
}
