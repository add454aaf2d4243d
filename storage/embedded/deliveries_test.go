package embedded_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded/kv"
	"github.com/hookline/hookline/storage/storagetest"
)

// TestDeliveriesRestored: an earlier version took an event's deliveries
// index away with its last job record even while a DLQ entry of a named
// destination was kept, so that the event list, Lookup and erasure saw
// its default delivery alone; and its claim, by which it was found by its
// provider's id. Open makes both again, once, from the entries (and the
// default delivery's record or entry): the events are listed, found by
// either id with their dead deliveries, and erased with every entry.
func TestDeliveriesRestored(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "hookline.db")
	s := openStore(t, path)
	now := time.Now()
	events := storagetest.EntriesKept(t, s, now)
	// as an earlier version left them: no index, no claim, not restored yet
	err := s.UpdateForTest(ctx, func(tx *kv.Tx) error {
		for _, ev := range events[:2] {
			if tx.Bucket([]byte("deliveries")).Get([]byte(ev.ID)) == nil {
				t.Errorf("event %s has no deliveries index past its jobs' retention", ev.EventID)
			}
			if err := tx.Bucket([]byte("deliveries")).Delete([]byte(ev.ID)); err != nil {
				return err
			}
		}
		for _, ev := range events {
			ck := []byte(storage.ClaimKey(ev.Source, ev.EventID))
			if tx.Bucket([]byte("claims")).Get(ck) == nil {
				t.Errorf("event %s has no claim past its jobs' retention, its entry kept", ev.EventID)
			}
			if err := tx.Bucket([]byte("claims")).Delete(ck); err != nil {
				return err
			}
		}
		return tx.Bucket([]byte("meta")).Delete([]byte("lookups:entries"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lookup(ctx, events[0].Source, events[0].ID); err == nil {
		t.Fatal("the test does not make the gap: the event is found without its index")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, path)
	storagetest.EntriesFound(t, s, events, now)
	// erased, or past their entries' retention: no claim nor index is left
	err = s.UpdateForTest(ctx, func(tx *kv.Tx) error {
		for _, ev := range events {
			if tx.Bucket([]byte("claims")).Get([]byte(storage.ClaimKey(ev.Source, ev.EventID))) != nil {
				t.Errorf("the claim of %s is left", ev.EventID)
			}
			if tx.Bucket([]byte("deliveries")).Get([]byte(ev.ID)) != nil {
				t.Errorf("the deliveries index of %s is left", ev.EventID)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRestoredClaimLaterEvent: two events with one provider's id, the
// later accepted once the earlier's claim ended, both with a DLQ entry
// kept past their jobs' retention and neither claim left (as an earlier
// version left them): the restore gives the id to the later one, as
// Enqueue did, and Lookup by it finds that one.
func TestRestoredClaimLaterEvent(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "hookline.db")
	s := openStore(t, path)
	evs := storagetest.SharedIDEntries(t, s, time.Now())
	ck := []byte(storage.ClaimKey("stripe", "evt_same"))
	err := s.UpdateForTest(ctx, func(tx *kv.Tx) error {
		if err := tx.Bucket([]byte("claims")).Delete(ck); err != nil {
			return err
		}
		return tx.Bucket([]byte("meta")).Delete([]byte("lookups:entries"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, path)
	if info, err := s.Lookup(ctx, "stripe", "evt_same"); err != nil || info.ID != evs[1].ID {
		t.Errorf("Lookup by the shared provider id: %+v, %v; want the later event %s", info, err, evs[1].ID)
	}
	for _, ev := range evs {
		if _, err := s.Lookup(ctx, "stripe", ev.ID); err != nil {
			t.Errorf("Lookup of %s by its internal id: %v", ev.ID, err)
		}
	}
}
