package embedded_test

import (
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded"
	"github.com/hookline/hookline/storage/embedded/kv"
	"github.com/hookline/hookline/storage/storagetest"
)

// fanOut is an event with three deliveries.
func fanOut(eventID string) *storage.Event {
	ev := storagetest.NewEvent("stripe", eventID)
	for _, d := range []string{"default", "billing", "crm"} {
		ev.Deliveries = append(ev.Deliveries, storage.Delivery{Destination: d, Upstream: "http://127.0.0.1:1/" + d})
	}
	return ev
}

// TestFanOutAllOrNothing: a commit that fails leaves nothing of a
// fanned-out event (no delivery, no claim, no index); the next attempt
// stores all of it.
func TestFanOutAllOrNothing(t *testing.T) {
	var fail atomic.Bool
	s := openWithOptions(t, embedded.Options{BeforeCommit: func(int) error {
		if fail.Load() {
			return errors.New("disk gone")
		}
		return nil
	}})
	ctx := t.Context()
	until := time.Now().Add(time.Hour)
	fail.Store(true)
	if _, err := s.Enqueue(ctx, fanOut("evt_1"), until); !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("Enqueue through a failing commit: err = %v, want ErrUnavailable", err)
	}
	fail.Store(false)
	if c, err := s.Counts(ctx); err != nil || c != (storage.Counts{}) {
		t.Fatalf("Counts after a failed commit = %+v, %v; want nothing", c, err)
	}
	if _, err := s.Lookup(ctx, "stripe", "evt_1"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Lookup after a failed commit: err = %v, want ErrNotFound", err)
	}
	ev := fanOut("evt_1")
	if res, err := s.Enqueue(ctx, ev, until); err != nil || res.Duplicate {
		t.Fatalf("Enqueue after a failed commit = %+v, %v; want stored (no claim left)", res, err)
	}
	if c, _ := s.Counts(ctx); c.Queued != 3 {
		t.Errorf("Counts = %+v, want 3 queued", c)
	}
}

// TestDefaultRecordUnchanged: the record of an event delivered to the
// default destination alone is as before destinations existed: under the
// event's id, without a destination field, without a deliveries index;
// such a record (as an earlier version wrote it) is the default's.
func TestDefaultRecordUnchanged(t *testing.T) {
	s := openWithOptions(t, embedded.Options{})
	ev := storagetest.NewEvent("stripe", "evt_default")
	if _, err := s.Enqueue(t.Context(), ev, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	err := s.UpdateForTest(t.Context(), func(tx *kv.Tx) error {
		v := tx.Bucket([]byte("events")).Get([]byte(ev.ID))
		var raw map[string]any
		if err := json.Unmarshal(v, &raw); err != nil {
			return err
		}
		if _, ok := raw["destination"]; ok {
			t.Errorf("default record has a destination field: %s", v)
		}
		if tx.Bucket([]byte("deliveries")).KeyN() != 0 {
			t.Error("a deliveries index for a default-only event")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Lookup(t.Context(), "stripe", "evt_default")
	if err != nil || info.ID != ev.ID || info.Deliveries != nil || info.Destination != "" {
		t.Errorf("Lookup of a default-only event = %+v, %v", info, err)
	}
}
