package embedded_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded"
	"github.com/hookline/hookline/storage/storagetest"
)

// TestLegacyLeaseRequeued: a job an earlier version leased in the file
// (its record in flight, its due key at the lease's end) is a queued job
// once this version opens the file, due when that lease ends, as the
// earlier version would have leased it again; the old lease is lost.
func TestLegacyLeaseRequeued(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "hookline.db")
	s := openStore(t, path)
	old := storagetest.NewEvent("stripe", "evt_leased_before")
	other := storagetest.NewEvent("stripe", "evt_queued")
	for _, ev := range []*storage.Event{old, other} {
		if _, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	until := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	if err := embedded.RewriteAsLegacyLease(path, old.ID, "token-of-before", until); err != nil {
		t.Fatal(err)
	}

	s = openStore(t, path)
	if n, err := s.LegacyLeasesLeft(); err != nil || n != 0 {
		t.Errorf("leases of the earlier version left in the file: %d, %v", n, err)
	}
	info, err := s.Lookup(ctx, "stripe", old.EventID)
	if err != nil || info.Status != storage.StatusQueued || !info.NextAttempt.Equal(until) {
		t.Fatalf("Lookup = %+v, %v; want queued, next attempt at the old lease's end %v", info, err, until)
	}
	if c, err := s.Counts(ctx); err != nil || c != (storage.Counts{Queued: 2}) {
		t.Errorf("Counts = %+v, %v; want 2 queued", c, err)
	}
	jobs, err := s.Lease(ctx, time.Now(), 10, time.Minute, nil)
	if err != nil || len(jobs) != 1 || jobs[0].ID != other.ID {
		t.Fatalf("Lease before the old lease's end = %d jobs, %v; want only %s", len(jobs), err, other.ID)
	}
	if err := s.Finish(ctx, jobs[0], storage.Outcome{Result: storage.Delivered}); err != nil {
		t.Fatal(err)
	}
	stale := &storage.Job{Event: *old, Lease: "token-of-before", LeaseUntil: until}
	if err := s.Finish(ctx, stale, storage.Outcome{Result: storage.Delivered}); !errors.Is(err, storage.ErrLeaseLost) {
		t.Errorf("Finish under the earlier version's lease: %v, want ErrLeaseLost", err)
	}
	jobs, err = s.Lease(ctx, until.Add(time.Millisecond), 10, time.Minute, nil)
	if err != nil || len(jobs) != 1 || jobs[0].ID != old.ID {
		t.Fatalf("Lease after the old lease's end = %d jobs, %v; want %s", len(jobs), err, old.ID)
	}
	if err := s.Finish(ctx, jobs[0], storage.Outcome{Result: storage.Delivered}); err != nil {
		t.Fatal(err)
	}
}
