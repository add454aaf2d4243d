package embedded_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded"
	"github.com/hookline/hookline/storage/storagetest"
)

// deliverEvent enqueues ev with a claim until claimUntil and delivers it.
func deliverEvent(t *testing.T, s *testStore, ev *storage.Event, claimUntil time.Time) {
	t.Helper()
	ctx := t.Context()
	if res, err := s.Enqueue(ctx, ev, claimUntil); err != nil || res.Duplicate {
		t.Fatalf("Enqueue: %+v, %v", res, err)
	}
	jobs, err := s.Lease(ctx, time.Now(), 10, time.Minute, nil)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Lease: %d jobs, %v", len(jobs), err)
	}
	if err := s.Finish(ctx, jobs[0], storage.Outcome{Result: storage.Delivered, Attempt: &storage.Attempt{N: 1, At: time.Now(), Status: 200}}); err != nil {
		t.Fatal(err)
	}
}

// claimOf is the expiry of the claim key of (source, eventID), and whether
// the key is there.
func claimOf(t *testing.T, s *testStore, source, eventID string) (time.Time, bool) {
	t.Helper()
	claims, _, err := s.Claims()
	if err != nil {
		t.Fatal(err)
	}
	exp, ok := claims[storage.ClaimKey(source, eventID)]
	return exp, ok
}

// TestClaimLifetimes: one key is an event's claim and how it is found by
// its provider's id, so it lives until both its claim has ended and the
// event's last record is gone, whichever comes last; then it goes (the
// claims do not grow with every event ever received).
func TestClaimLifetimes(t *testing.T) {
	day := 24 * time.Hour
	t.Run("the claim ends first", func(t *testing.T) {
		s := openStore(t, filepath.Join(t.TempDir(), "hookline.db"))
		ctx := t.Context()
		ev := storagetest.NewEvent("stripe", "evt_short_claim")
		deliverEvent(t, s, ev, time.Now().Add(time.Minute))
		// an hour later: the claim has ended, the record is retained
		if _, err := s.Cleanup(ctx, time.Now().Add(time.Hour), 7*day, 0); err != nil {
			t.Fatal(err)
		}
		if exp, ok := claimOf(t, s, "stripe", "evt_short_claim"); !ok || !exp.Equal(time.Unix(0, 0)) {
			t.Fatalf("claim after it ended, its record kept: %v %v, want kept with expiry 0", exp, ok)
		}
		if info, err := s.Lookup(ctx, "stripe", "evt_short_claim"); err != nil || info.ID != ev.ID {
			t.Fatalf("Lookup after the claim ended: %+v, %v", info, err)
		}
		// past retention the record goes, and the key with it
		if _, err := s.Cleanup(ctx, time.Now().Add(8*day), 7*day, 0); err != nil {
			t.Fatal(err)
		}
		if _, ok := claimOf(t, s, "stripe", "evt_short_claim"); ok {
			t.Fatal("claim key left after its event's last record went")
		}
	})
	t.Run("the records go first", func(t *testing.T) {
		s := openStore(t, filepath.Join(t.TempDir(), "hookline.db"))
		ctx := t.Context()
		until := time.Now().Add(30 * day)
		ev := storagetest.NewEvent("stripe", "evt_long_claim")
		deliverEvent(t, s, ev, until)
		if _, err := s.Cleanup(ctx, time.Now().Add(8*day), 7*day, 0); err != nil {
			t.Fatal(err)
		}
		if exp, ok := claimOf(t, s, "stripe", "evt_long_claim"); !ok || !exp.Equal(until) {
			t.Fatalf("claim after its records went: %v %v, want kept until %v", exp, ok, until)
		}
		if res, err := s.Enqueue(ctx, storagetest.NewEvent("stripe", "evt_long_claim"), until); err != nil || !res.Duplicate || res.ID != ev.ID {
			t.Fatalf("resend within the claim: %+v, %v; want a duplicate of %s", res, err, ev.ID)
		}
		if _, err := s.Cleanup(ctx, until.Add(time.Minute), 7*day, 0); err != nil {
			t.Fatal(err)
		}
		if _, ok := claimOf(t, s, "stripe", "evt_long_claim"); ok {
			t.Fatal("claim key left after it expired, its records gone")
		}
	})
	t.Run("erasure", func(t *testing.T) {
		s := openStore(t, filepath.Join(t.TempDir(), "hookline.db"))
		ctx := t.Context()
		ended := storagetest.NewEvent("stripe", "evt_ended")
		deliverEvent(t, s, ended, time.Now().Add(time.Minute))
		holding := storagetest.NewEvent("stripe", "evt_holding")
		deliverEvent(t, s, holding, time.Now().Add(day))
		if _, err := s.Cleanup(ctx, time.Now().Add(time.Hour), 7*day, 0); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"evt_ended", "evt_holding"} {
			if _, err := s.Erase(ctx, "stripe", id, time.Now()); err != nil {
				t.Fatalf("Erase %s: %v", id, err)
			}
		}
		if _, ok := claimOf(t, s, "stripe", "evt_ended"); ok {
			t.Error("an erased event's ended claim was kept")
		}
		if _, ok := claimOf(t, s, "stripe", "evt_holding"); !ok {
			t.Error("an erased event's claim that holds was removed: a resend would be delivered again")
		}
	})
}

// TestLegacyIDsFolded: a file with the (source, event id) index of earlier
// versions is upgraded when opened: every event is still found by its
// provider's id, those whose claim had been swept too, and their ids are
// free for new events; the index is emptied.
func TestLegacyIDsFolded(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "hookline.db")
	s := openStore(t, path)
	holding := storagetest.NewEvent("stripe", "evt_holding")
	swept := storagetest.NewEvent("stripe", "evt_swept")
	for _, ev := range []*storage.Event{holding, swept} {
		if _, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := embedded.RewriteAsLegacyIDs(path, storage.ClaimKey("stripe", "evt_swept")); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, path)
	if _, legacy, err := s.Claims(); err != nil || legacy != 0 {
		t.Errorf("keys of the earlier index left: %d, %v", legacy, err)
	}
	for _, ev := range []*storage.Event{holding, swept} {
		if info, err := s.Lookup(ctx, "stripe", ev.EventID); err != nil || info.ID != ev.ID {
			t.Errorf("Lookup(%s) after the upgrade: %+v, %v; want %s", ev.EventID, info, err, ev.ID)
		}
	}
	if res, err := s.Enqueue(ctx, storagetest.NewEvent("stripe", "evt_holding"), time.Now().Add(time.Hour)); err != nil || !res.Duplicate {
		t.Errorf("resend within the claim after the upgrade: %+v, %v; want a duplicate", res, err)
	}
	again := storagetest.NewEvent("stripe", "evt_swept")
	if res, err := s.Enqueue(ctx, again, time.Now().Add(time.Hour)); err != nil || res.Duplicate || res.ID != again.ID {
		t.Errorf("new event with the id of a swept claim after the upgrade: %+v, %v; want stored as %s", res, err, again.ID)
	}
}
