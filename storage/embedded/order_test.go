package embedded_test

import (
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded"
	"github.com/hookline/hookline/storage/storagetest"
)

// TestPoisonOrderedHead: an ordered head whose record cannot be decoded is
// dead-lettered as any dead head: with on_dead skip the next job of its key
// goes at once; with block the key waits until the entry is settled.
func TestPoisonOrderedHead(t *testing.T) {
	for _, skip := range []bool{true, false} {
		t.Run(map[bool]string{true: "skip", false: "block"}[skip], func(t *testing.T) {
			s := openWithOptions(t, embedded.Options{})
			defer storagetest.WantRecounted(t, s, "after the poison record")
			ctx := t.Context()
			var evs []*storage.Event
			for _, id := range []string{"evt_poison", "evt_next"} {
				ev := storagetest.NewEvent("stripe", id)
				ev.OrderKey, ev.OrderSkip = "cus_1", skip
				if _, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
					t.Fatal(err)
				}
				evs = append(evs, ev)
			}
			raw := `{"id":"` + evs[0].ID + `","event_id":"evt_poison","source":"stripe","upstream":"http://127.0.0.1:1/","attempts":"oops",` +
				`"order_key":"cus_1","order_skip":` + map[bool]string{true: "true", false: "false"}[skip] + `,"status":"queued"}`
			if err := s.PutRawRecordForTest(evs[0].ID, []byte(raw)); err != nil {
				t.Fatal(err)
			}
			now := time.Now().Add(time.Second)
			if jobs, err := s.Lease(ctx, now, 10, time.Minute, nil); err != nil || len(jobs) != 0 {
				t.Fatalf("Lease meeting the poison head: %d jobs, %v", len(jobs), err)
			}
			e, err := s.DLQGet(ctx, evs[0].ID)
			if err != nil {
				t.Fatalf("no DLQ entry for the poison head: %v", err)
			}
			wantWaiting := map[bool]int{true: 0, false: 1}[skip]
			if e.OrderKey != "cus_1" || e.Waiting != wantWaiting {
				t.Errorf("entry: order key %q, waiting %d; want cus_1, %d", e.OrderKey, e.Waiting, wantWaiting)
			}
			jobs, err := s.Lease(ctx, now, 10, time.Minute, nil)
			if err != nil || len(jobs) != map[bool]int{true: 1, false: 0}[skip] {
				t.Fatalf("Lease after the poison head: %d jobs, %v", len(jobs), err)
			}
			if !skip {
				if err := s.DLQSetStatus(ctx, evs[0].ID, storage.DLQResolved, "", now); err != nil {
					t.Fatal(err)
				}
				if jobs, err = s.Lease(ctx, now, 10, time.Minute, nil); err != nil || len(jobs) != 1 {
					t.Fatalf("Lease after the entry was resolved: %d jobs, %v", len(jobs), err)
				}
			}
			if jobs[0].ID != evs[1].ID {
				t.Errorf("leased %s, want the next job %s", jobs[0].ID, evs[1].ID)
			}
		})
	}
}

// TestPoisonOrderedFollower: a job waiting in a chain whose record cannot
// be decoded does not fail the Finish that makes it the head: it becomes
// due all the same, and the lease that meets it dead-letters it, blocking
// its key as any dead head until its entry is settled.
func TestPoisonOrderedFollower(t *testing.T) {
	s := openWithOptions(t, embedded.Options{})
	defer storagetest.WantRecounted(t, s, "after the poison record")
	ctx := t.Context()
	var evs []*storage.Event
	for _, id := range []string{"evt_1", "evt_2", "evt_3"} {
		ev := storagetest.NewEvent("stripe", id)
		ev.OrderKey = "cus_1"
		if _, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	if err := s.PutRawRecordForTest(evs[1].ID, []byte("\x00garbage")); err != nil {
		t.Fatal(err)
	}
	jobs, err := s.Lease(ctx, time.Now(), 10, time.Minute, nil)
	if err != nil || len(jobs) != 1 || jobs[0].ID != evs[0].ID {
		t.Fatalf("Lease = %d jobs, %v; want the head", len(jobs), err)
	}
	if err := s.Finish(ctx, jobs[0], storage.Outcome{Result: storage.Delivered}); err != nil {
		t.Fatalf("Finish of the head before a poison job: %v", err)
	}
	now := time.Now().Add(time.Second)
	if jobs, err := s.Lease(ctx, now, 10, time.Minute, nil); err != nil || len(jobs) != 0 {
		t.Fatalf("Lease meeting the poison job: %d jobs, %v", len(jobs), err)
	}
	if _, err := s.DLQGet(ctx, evs[1].ID); err != nil {
		t.Fatalf("no DLQ entry for the poison job: %v", err)
	}
	if err := s.DLQSetStatus(ctx, evs[1].ID, storage.DLQDiscarded, "", now); err != nil {
		t.Fatal(err)
	}
	if jobs, err := s.Lease(ctx, now, 10, time.Minute, nil); err != nil || len(jobs) != 1 || jobs[0].ID != evs[2].ID {
		t.Fatalf("Lease after the poison job's entry was discarded: %d jobs, %v; want %s", len(jobs), err, evs[2].ID)
	}
}
