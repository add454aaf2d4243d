package embedded_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded"
	"github.com/hookline/hookline/storage/embedded/kv"
	"github.com/hookline/hookline/storage/storagetest"
)

// withHeaders gives ev headers (fanOut's have none).
func withHeaders(ev *storage.Event) *storage.Event {
	ev.Headers = http.Header{"Content-Type": {"application/json"}, "X-Multi": {"1", "2"}}
	return ev
}

// asLegacyRecord rewrites the job record id of b as a version before
// payload records wrote it: its body and headers in the record itself, not
// marked shared. It fails when the record was not marked shared.
func asLegacyRecord(b *kv.Bucket, id string, ev *storage.Event) error {
	var rec map[string]any
	if err := json.Unmarshal(b.Get([]byte(id)), &rec); err != nil {
		return err
	}
	if rec["shared_payload"] != true {
		return fmt.Errorf("record %s is not marked shared: %v", id, rec)
	}
	delete(rec, "shared_payload")
	rec["body"], rec["headers"] = ev.Body, ev.Headers
	v, _ := json.Marshal(rec)
	return b.Put([]byte(id), v)
}

// wantNoKeysLeft fails t when the events or deliveries bucket of s still
// holds a key (what cleanup must leave once every event is gone).
func wantNoKeysLeft(t *testing.T, s *embedded.Store) {
	t.Helper()
	err := s.UpdateForTest(t.Context(), func(tx *kv.Tx) error {
		for _, b := range []string{"events", "deliveries"} {
			if n := tx.Bucket([]byte(b)).KeyN(); n != 0 {
				t.Errorf("%d keys left in %s after cleanup", n, b)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestLegacyFanOutRecords: the deliveries of an event stored before payload
// records existed (each job with its own body, no payload record) lease,
// replay and are cleaned up as before, beside events stored now.
func TestLegacyFanOutRecords(t *testing.T) {
	s := openWithOptions(t, embedded.Options{})
	ctx := t.Context()
	until := time.Now().Add(time.Hour)
	legacy, current := withHeaders(fanOut("evt_legacy")), withHeaders(fanOut("evt_current"))
	for _, ev := range []*storage.Event{legacy, current} {
		if _, err := s.Enqueue(ctx, ev, until); err != nil {
			t.Fatal(err)
		}
	}
	// rewrite legacy's records as an earlier version wrote them
	err := s.UpdateForTest(ctx, func(tx *kv.Tx) error {
		b := tx.Bucket([]byte("events"))
		if err := b.Delete([]byte(legacy.ID + "\x00")); err != nil {
			return err
		}
		for _, d := range legacy.Deliveries {
			if err := asLegacyRecord(b, storage.DeliveryID(legacy.ID, d.Destination), legacy); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := s.Lease(ctx, time.Now(), 10, time.Minute, nil)
	if err != nil || len(jobs) != 6 {
		t.Fatalf("Lease = %d jobs, %v; want 6", len(jobs), err)
	}
	for _, j := range jobs {
		if !bytes.Equal(j.Body, legacy.Body) || !reflect.DeepEqual(j.Headers, legacy.Headers) {
			t.Errorf("job %s: body %q headers %v", j.ID, j.Body, j.Headers)
		}
		if err := s.Finish(ctx, j, storage.Outcome{Result: storage.Delivered, Attempt: &storage.Attempt{N: 1, At: time.Now(), Status: 200}}); err != nil {
			t.Fatal(err)
		}
	}
	page, err := s.ListDelivered(ctx, storage.ReplayFilter{Destination: "billing"})
	infos := page.Events
	if err != nil || len(infos) != 2 {
		t.Fatalf("ListDelivered = %+v, %v", infos, err)
	}
	for i := range infos {
		if err := s.Replay(ctx, &infos[i], time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err = s.Lease(ctx, time.Now(), 10, time.Minute, nil)
	if err != nil || len(jobs) != 2 {
		t.Fatalf("Lease of the replays = %d jobs, %v", len(jobs), err)
	}
	for _, j := range jobs {
		if !bytes.Equal(j.Body, legacy.Body) {
			t.Errorf("replay %s: body %q", j.ID, j.Body)
		}
		if err := s.Finish(ctx, j, storage.Outcome{Result: storage.Delivered, Attempt: &storage.Attempt{N: 2, At: time.Now(), Status: 200}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Cleanup(ctx, time.Now().Add(2*time.Hour), time.Hour, 0); err != nil {
		t.Fatal(err)
	}
	wantNoKeysLeft(t, s)
}

// TestPoisonSharedPayload: a job sharing its event's payload whose record
// cannot be decoded is dead-lettered with that payload.
func TestPoisonSharedPayload(t *testing.T) {
	s := openWithOptions(t, embedded.Options{})
	defer storagetest.WantRecounted(t, s, "after the poison record")
	ctx := t.Context()
	ev := withHeaders(fanOut("evt_poison_shared"))
	if _, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	billing := storage.DeliveryID(ev.ID, "billing")
	raw := fmt.Sprintf(`{"id":%q,"event_id":"evt_poison_shared","source":"stripe","destination":"billing","upstream":"http://127.0.0.1:1/billing","shared_payload":true,"attempts":"oops"}`, billing)
	if err := s.PutRawRecordForTest(billing, []byte(raw)); err != nil {
		t.Fatal(err)
	}
	jobs, err := s.Lease(ctx, time.Now(), 10, time.Minute, nil)
	if err != nil || len(jobs) != 2 {
		t.Fatalf("Lease = %d jobs, %v; want the 2 others", len(jobs), err)
	}
	e, err := s.DLQGet(ctx, billing)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(e.Payload, ev.Body) || !reflect.DeepEqual(e.Headers, ev.Headers) {
		t.Errorf("poison entry payload %q headers %v, want the shared payload %q", e.Payload, e.Headers, ev.Body)
	}
}

// TestLonePayloadRecord: an event with one delivery stores its payload in
// a payload record and a job record without it (the record a lease and a
// finish rewrite), leases with its exact body and headers, and leaves no
// key behind once cleaned up; a job stored by an earlier version, its
// body in its own record, leases and is cleaned up beside it.
func TestLonePayloadRecord(t *testing.T) {
	s := openWithOptions(t, embedded.Options{})
	ctx := t.Context()
	until := time.Now().Add(time.Hour)
	lone, legacy := withHeaders(storagetest.NewEvent("stripe", "evt_lone")), withHeaders(storagetest.NewEvent("stripe", "evt_legacy"))
	for _, ev := range []*storage.Event{lone, legacy} {
		if _, err := s.Enqueue(ctx, ev, until); err != nil {
			t.Fatal(err)
		}
	}
	err := s.UpdateForTest(ctx, func(tx *kv.Tx) error {
		b := tx.Bucket([]byte("events"))
		if b.Get([]byte(lone.ID+"\x00")) == nil {
			t.Errorf("no payload record for the lone delivery")
		}
		if rec := b.Get([]byte(lone.ID)); bytes.Contains(rec, []byte(`"body"`)) || !bytes.Contains(rec, []byte(`"shared_payload":true`)) {
			t.Errorf("the lone delivery's record keeps its body or is not marked: %s", rec)
		}
		// legacy's records as an earlier version wrote them: the body in
		// the job's own record, no payload record
		if err := b.Delete([]byte(legacy.ID + "\x00")); err != nil {
			return err
		}
		return asLegacyRecord(b, legacy.ID, legacy)
	})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := s.Lease(ctx, time.Now(), 10, time.Minute, nil)
	if err != nil || len(jobs) != 2 {
		t.Fatalf("Lease = %d jobs, %v; want 2", len(jobs), err)
	}
	for _, j := range jobs {
		if !bytes.Equal(j.Body, lone.Body) || !reflect.DeepEqual(j.Headers, lone.Headers) {
			t.Errorf("job %s: body %q headers %v", j.ID, j.Body, j.Headers)
		}
		if err := s.Finish(ctx, j, storage.Outcome{Result: storage.Delivered, Attempt: &storage.Attempt{N: 1, At: time.Now(), Status: 200}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Cleanup(ctx, time.Now().Add(2*time.Hour), time.Hour, 0); err != nil {
		t.Fatal(err)
	}
	wantNoKeysLeft(t, s)
}
