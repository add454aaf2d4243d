package embedded_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/storagetest"
)

// TestLeaseIndexKeyNotItsRecords: Lease hands out a job when its record is
// queued at the candidate's due key, and reads the index only when it is
// not. An index key that names a job whose record is queued elsewhere (an
// older due time), or a job with no record, is dropped from the queue and
// its count: the job is handed out once, from its own key, and the counts
// come back to zero once it is delivered.
func TestLeaseIndexKeyNotItsRecords(t *testing.T) {
	ctx := t.Context()
	s := openStore(t, filepath.Join(t.TempDir(), "hookline.db"))
	ev := storagetest.NewEvent("stripe", "evt_stale")
	res, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour))
	if err != nil || len(res.Due) != 1 {
		t.Fatalf("Enqueue: %+v, %v", res, err)
	}
	own := res.Due[0]
	stale := own.Due.Add(-time.Minute) // leased before the job's own key
	if err := s.PutDueKeyForTest(own.Lane, stale, own.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.PutDueKeyForTest(own.Lane, stale, "no-such-job"); err != nil {
		t.Fatal(err)
	}
	keys := func(id string) []string {
		t.Helper()
		k, err := s.DueKeysForTest(id)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	if got := keys(own.ID); len(got) != 2 {
		t.Fatalf("due keys before the lease: %v, want the job's own and the stale one", got)
	}

	var got []*storage.Job
	for range 3 { // the stale keys are dropped by the first lease; the job is handed out once
		jobs, err := s.Lease(ctx, time.Now(), 10, time.Minute, nil)
		if err != nil {
			t.Fatalf("Lease: %v", err)
		}
		got = append(got, jobs...)
	}
	if len(got) != 1 || got[0].ID != own.ID || string(got[0].Body) != string(ev.Body) {
		ids := make([]string, len(got))
		for i, j := range got {
			ids[i] = j.ID
		}
		t.Fatalf("leased %v, want %s once with its body", ids, own.ID)
	}
	want := []string{fmt.Sprintf("%s@%d", own.Lane, own.Due.UnixNano())}
	if k := keys(own.ID); !slices.Equal(k, want) {
		t.Errorf("due keys after the lease: %v, want only the job's own %v", k, want)
	}
	if k := keys("no-such-job"); len(k) != 0 {
		t.Errorf("the key of a job with no record is still queued: %v", k)
	}
	if err := s.Finish(ctx, got[0], storage.Outcome{Result: storage.Delivered, Attempt: &storage.Attempt{N: 1, At: time.Now(), Status: 200}}); err != nil {
		t.Fatalf("Finish: %v", err)
	}
	c, err := s.Counts(ctx)
	if err != nil || c.Queued != 0 || c.InFlight != 0 {
		t.Errorf("counts once delivered: %+v, %v; want nothing queued or in flight", c, err)
	}
	if jobs, err := s.Lease(ctx, time.Now().Add(time.Hour), 10, time.Minute, nil); err != nil || len(jobs) != 0 {
		t.Errorf("a lease once delivered: %d jobs, %v", len(jobs), err)
	}
}

// TestLeaseStaleKeyOnly: a job whose only index key is one its record
// does not name (its own lost, as a build keeping it under another lane
// could leave it) is not lost when a lease drops that key: its own key is
// put back, and the job is handed out once it is due, then delivered.
func TestLeaseStaleKeyOnly(t *testing.T) {
	ctx := t.Context()
	s := openStore(t, filepath.Join(t.TempDir(), "hookline.db"))
	res, err := s.Enqueue(ctx, storagetest.NewEvent("stripe", "evt_lost_key"), time.Now().Add(time.Hour))
	if err != nil || len(res.Due) != 1 {
		t.Fatalf("Enqueue: %+v, %v", res, err)
	}
	own := res.Due[0]
	stale := own.Due.Add(-time.Minute)
	if err := s.PutDueKeyForTest(own.Lane, stale, own.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteDueKeyForTest(own.Lane, own.Due, own.ID); err != nil {
		t.Fatal(err)
	}
	// due at the stale key's time, not yet at the job's own
	if jobs, err := s.Lease(ctx, stale, 10, time.Minute, nil); err != nil || len(jobs) != 0 {
		t.Fatalf("Lease at the stale key's time: %d jobs, %v; want none", len(jobs), err)
	}
	want := []string{fmt.Sprintf("%s@%d", own.Lane, own.Due.UnixNano())}
	if k, err := s.DueKeysForTest(own.ID); err != nil || !slices.Equal(k, want) {
		t.Fatalf("due keys after the lease: %v, %v; want the job's own %v", k, err, want)
	}
	if c, err := s.Counts(ctx); err != nil || c.Queued != 1 {
		t.Fatalf("counts: %+v, %v; want one queued", c, err)
	}
	jobs, err := s.Lease(ctx, own.Due, 10, time.Minute, nil)
	if err != nil || len(jobs) != 1 || jobs[0].ID != own.ID {
		t.Fatalf("Lease once due: %d jobs, %v; want %s", len(jobs), err, own.ID)
	}
	if err := s.Finish(ctx, jobs[0], storage.Outcome{Result: storage.Delivered, Attempt: &storage.Attempt{N: 1, At: time.Now(), Status: 200}}); err != nil {
		t.Fatalf("Finish: %v", err)
	}
	if c, err := s.Counts(ctx); err != nil || c.Queued != 0 || c.InFlight != 0 {
		t.Errorf("counts once delivered: %+v, %v; want nothing queued or in flight", c, err)
	}
}

// TestLeaseNamedSettledMeanwhile: a candidate whose job was delivered
// since it was read (its record no longer queued at its key) is not handed
// out: the job reads delivered.
func TestLeaseNamedSettledMeanwhile(t *testing.T) {
	ctx := t.Context()
	s := openStore(t, filepath.Join(t.TempDir(), "hookline.db"))
	res, err := s.Enqueue(ctx, storagetest.NewEvent("stripe", "evt_settled"), time.Now().Add(time.Hour))
	if err != nil || len(res.Due) != 1 {
		t.Fatalf("Enqueue: %+v, %v", res, err)
	}
	jobs, err := s.LeaseNamed(ctx, time.Now(), res.Due, time.Minute)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("LeaseNamed: %d jobs, %v", len(jobs), err)
	}
	if err := s.Finish(ctx, jobs[0], storage.Outcome{Result: storage.Delivered, Attempt: &storage.Attempt{N: 1, At: time.Now(), Status: 200}}); err != nil {
		t.Fatal(err)
	}
	// the same candidate, read before the outcome was committed
	again, err := s.LeaseNamed(ctx, time.Now(), res.Due, time.Minute)
	if err != nil || len(again) != 0 {
		t.Fatalf("LeaseNamed of a delivered job: %d jobs, %v", len(again), err)
	}
	info, err := s.Lookup(ctx, "stripe", "evt_settled")
	if err != nil || info.Status != storage.StatusDelivered {
		t.Errorf("Lookup: %+v, %v; want delivered", info, err)
	}
}
