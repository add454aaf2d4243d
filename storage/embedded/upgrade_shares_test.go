package embedded_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded"
	"github.com/hookline/hookline/storage/storagetest"
)

// TestTenantSharesMigrated: jobs of events with a tenant that an earlier
// version queued, or kept waiting behind an ordered head, in their base
// lane are in their tenant's share once this version opens the file: a
// retry goes back to the share, at its backoff, and is leased once; the
// counts are the same.
func TestTenantSharesMigrated(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "hookline.db")
	s := openStore(t, path)
	plain := storagetest.NewEvent("shop", "evt_plain")
	plain.Tenant = "a.myshopify.com"
	head := storagetest.NewEvent("shop", "evt_head")
	head.Tenant, head.OrderKey = "b.myshopify.com", "K"
	next := storagetest.NewEvent("shop", "evt_next")
	next.Tenant, next.OrderKey = "c.myshopify.com", "K"
	for _, ev := range []*storage.Event{plain, head, next} {
		if _, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := embedded.RewriteInBaseLanes(path); err != nil {
		t.Fatal(err)
	}

	s = openStore(t, path)
	for lane := range s.FloorsForTest() {
		if lane == "shop" {
			t.Errorf("lanes after the upgrade: %v; the base lane still holds jobs", s.FloorsForTest())
		}
	}
	byLane, err := s.QueueByLane(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c := storage.ByBaseLane(byLane)["shop"]; c.Queued != 3 {
		t.Errorf("counts after the upgrade: %v, want 3 queued in shop's shares", byLane)
	}
	jobs, err := s.Lease(ctx, time.Now(), 10, time.Minute, nil)
	if err != nil || len(jobs) != 2 {
		t.Fatalf("Lease = %d jobs, %v; want the plain one and the ordered head", len(jobs), err)
	}
	due := time.Now().Add(time.Hour)
	for _, j := range jobs {
		out := storage.Outcome{Result: storage.Retry, Attempt: &storage.Attempt{At: time.Now(), Status: 503}, Due: due}
		if j.ID == head.ID {
			out = storage.Outcome{Result: storage.Delivered, Attempt: &storage.Attempt{At: time.Now(), Status: 200}}
		}
		if err := s.Finish(ctx, j, out); err != nil {
			t.Fatalf("Finish %s after the upgrade: %v", j.ID, err)
		}
	}
	// the retried job waits for its backoff; the chain's next one goes
	jobs, err = s.Lease(ctx, time.Now().Add(time.Second), 10, time.Minute, nil)
	if err != nil || len(jobs) != 1 || jobs[0].ID != next.ID || !strings.Contains(laneOf(jobs[0]), "#") {
		t.Fatalf("Lease after the head = %v, %v; want only %s, from its share", jobs, err, next.ID)
	}
	if c, err := s.Counts(ctx); err != nil || c.Queued+c.InFlight != 2 {
		t.Errorf("Counts = %+v, %v; want 2 jobs (one retrying, one in flight)", c, err)
	}
}

func laneOf(j *storage.Job) string { return storage.LaneOf(&j.Event) }
