package redisstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/storagetest"
)

// payloadEvent is an event with headers and three deliveries.
func payloadEvent(eventID string) *storage.Event {
	ev := storagetest.NewEvent("stripe", eventID)
	ev.Headers = http.Header{"Content-Type": {"application/json"}, "X-Multi": {"1", "2"}}
	for _, d := range []string{"default", "billing", "crm"} {
		ev.Deliveries = append(ev.Deliveries, storage.Delivery{Destination: d, Upstream: "http://127.0.0.1:1/" + d})
	}
	return ev
}

// TestPayloadKeys: an event with several deliveries has one payload key
// its jobs name (field pl); a lone delivery keeps its payload in its own
// hash (field pb), with no payload key; and no job's JSON carries body or
// headers (Lease hands out the payload's raw bytes).
func TestPayloadKeys(t *testing.T) {
	srv := redistest.Start(t)
	prefix := redistest.Prefix()
	s := openTest(t, srv.Addr, Options{Prefix: prefix, Partitions: 4})
	ctx := t.Context()
	fan, one := payloadEvent("evt_fan"), storagetest.NewEvent("stripe", "evt_one")
	one.Headers = http.Header{"Content-Type": {"application/json"}}
	for _, ev := range []*storage.Event{fan, one} {
		if _, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	// the fan-out record holds the payload until it is expanded
	if rec := s.c.Get(ctx, s.partitionForEvent(fan).fan(fan.ID)).Val(); !strings.HasSuffix(rec, string(storage.EncodePayload(fan.Headers, fan.Body))) {
		t.Errorf("fan-out record %q does not end with the payload record", rec)
	}
	expandEvent(t, s, fan)
	keys, err := s.c.Keys(ctx, "{"+prefix+":*}:pl:*").Result()
	if want := []string{s.partitionForEvent(fan).payload(fan.ID)}; err != nil || !slices.Equal(keys, want) {
		t.Errorf("payload keys %v, %v; want %v", keys, err, want)
	}
	jobs := map[string]*storage.Event{one.ID: one}
	for _, d := range fan.Deliveries {
		jobs[storage.DeliveryID(fan.ID, d.Destination)] = fan
	}
	for id, ev := range jobs {
		p := s.partitionForEvent(ev)
		h := s.c.HMGet(ctx, p.ev(id), "pl", "pb", "ev").Val()
		if ev == one {
			if h[0] != nil || h[1] != string(storage.EncodePayload(one.Headers, one.Body)) {
				t.Errorf("lone job %s: pl %v, pb %q; want no record and its payload", id, h[0], h[1])
			}
		} else if h[0] != p.payload(storage.PayloadID(id)) || h[1] != nil {
			t.Errorf("job %s names payload %v, holds %v", id, h[0], h[1])
		}
		if rec, _ := h[2].(string); strings.Contains(rec, `"body"`) || !strings.Contains(rec, `"shared_payload":true`) {
			t.Errorf("job %s keeps its body or is not marked: %s", id, rec)
		}
	}
	// the lease hands out the body and headers of either
	got, err := s.Lease(ctx, time.Now(), 10, time.Minute, nil)
	if err != nil || len(got) != 4 {
		t.Fatalf("Lease = %d jobs, %v; want 4", len(got), err)
	}
	for _, j := range got {
		ev := jobs[j.ID]
		if !bytes.Equal(j.Body, ev.Body) || !reflect.DeepEqual(j.Headers, ev.Headers) {
			t.Errorf("leased %s: body %q headers %v", j.ID, j.Body, j.Headers)
		}
	}
	// admin reads leave the payload where it is
	if info, err := s.Lookup(ctx, "stripe", "evt_one"); err != nil || info.ID != one.ID {
		t.Errorf("Lookup = %+v, %v", info, err)
	}
}

// asLayout2Lone rewrites the lone delivery of ev as layout 2 stored it:
// its payload in a payload record its hash names (field pl).
func asLayout2Lone(t *testing.T, s *Store, ev *storage.Event) {
	t.Helper()
	ctx := t.Context()
	p := s.partitionForEvent(ev)
	pb, err := s.c.HGet(ctx, p.ev(ev.ID), "pb").Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.c.Set(ctx, p.payload(ev.ID), pb, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.c.HSet(ctx, p.ev(ev.ID), "pl", p.payload(ev.ID)).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.c.HDel(ctx, p.ev(ev.ID), "pb").Err(); err != nil {
		t.Fatal(err)
	}
}

// asLegacyJob rewrites job hash k as a version before payload records
// wrote it: ev's body and headers in its JSON, not marked shared, no pl.
func asLegacyJob(t *testing.T, s *Store, k string, ev *storage.Event) {
	t.Helper()
	ctx := t.Context()
	var rec map[string]any
	if err := json.Unmarshal([]byte(s.c.HGet(ctx, k, "ev").Val()), &rec); err != nil || rec["shared_payload"] != true {
		t.Fatalf("job %s: %v, %v", k, rec, err)
	}
	delete(rec, "shared_payload")
	rec["body"], rec["headers"] = ev.Body, ev.Headers
	v, _ := json.Marshal(rec)
	if err := s.c.HSet(ctx, k, "ev", v).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.c.HDel(ctx, k, "pl", "pb").Err(); err != nil {
		t.Fatal(err)
	}
}

// TestLegacyFanOutRecords: the deliveries of an event stored before payload
// records existed (each job with its own body, no payload key), a lone
// delivery stored before it had one, and one stored by layout 2 (its
// payload in a record of its own, layout.go), lease, replay and are cleaned
// up as before, beside events stored now.
func TestLegacyFanOutRecords(t *testing.T) {
	srv := redistest.Start(t)
	prefix := redistest.Prefix()
	s := openTest(t, srv.Addr, Options{Prefix: prefix, Partitions: 4})
	ctx := t.Context()
	legacy, current := payloadEvent("evt_legacy"), payloadEvent("evt_current")
	for _, ev := range []*storage.Event{legacy, current} {
		if _, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	expandEvent(t, s, legacy)
	// rewrite legacy's jobs as an earlier version wrote them
	p := s.partitionForEvent(legacy)
	if err := s.c.Del(ctx, p.payload(legacy.ID)).Err(); err != nil {
		t.Fatal(err)
	}
	for _, d := range legacy.Deliveries {
		asLegacyJob(t, s, p.ev(storage.DeliveryID(legacy.ID, d.Destination)), legacy)
	}
	// and an event with one delivery, as every version before this one
	// wrote it
	lone := storagetest.NewEvent("stripe", "evt_legacy_lone")
	lone.Body, lone.Headers = legacy.Body, legacy.Headers
	if _, err := s.Enqueue(ctx, lone, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	asLegacyJob(t, s, s.partitionForEvent(lone).ev(lone.ID), lone)
	// and one as layout 2 wrote it, its payload in a record of its own
	lone2 := storagetest.NewEvent("stripe", "evt_layout2_lone")
	lone2.Body, lone2.Headers = legacy.Body, legacy.Headers
	if _, err := s.Enqueue(ctx, lone2, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	asLayout2Lone(t, s, lone2)
	deliverAll := func(want int) {
		t.Helper()
		jobs, err := s.Lease(ctx, time.Now(), 10, time.Minute, nil)
		if err != nil || len(jobs) != want {
			t.Fatalf("Lease = %d jobs, %v; want %d", len(jobs), err, want)
		}
		for _, j := range jobs {
			if !bytes.Equal(j.Body, legacy.Body) || !reflect.DeepEqual(j.Headers, legacy.Headers) {
				t.Errorf("job %s: body %q headers %v", j.ID, j.Body, j.Headers)
			}
			if err := s.Finish(ctx, j, storage.Outcome{Result: storage.Delivered, Attempt: &storage.Attempt{N: 1, At: time.Now(), Status: 200}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	deliverAll(8)
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
	deliverAll(2)
	if _, err := s.Cleanup(ctx, time.Now().Add(2*time.Hour), time.Hour, 0); err != nil {
		t.Fatal(err)
	}
	for _, pattern := range []string{":ev:*", ":pl:*", ":dests:*"} {
		if keys, err := s.c.Keys(ctx, "{"+prefix+":*}"+pattern).Result(); err != nil || len(keys) != 0 {
			t.Errorf("keys %s after cleanup: %v, %v", pattern, keys, err)
		}
	}
}

// TestPoisonSharedPayload: a job sharing its event's payload whose event
// JSON cannot be decoded is dead-lettered with that payload.
func TestPoisonSharedPayload(t *testing.T) {
	srv := redistest.Start(t)
	s := openTest(t, srv.Addr, Options{Prefix: redistest.Prefix(), Partitions: 4})
	defer storagetest.WantRecounted(t, s, "after the poison record")
	ctx := t.Context()
	ev := payloadEvent("evt_poison_shared")
	if _, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	expandEvent(t, s, ev)
	billing := storage.DeliveryID(ev.ID, "billing")
	raw := fmt.Sprintf(`{"id":%q,"event_id":"evt_poison_shared","source":"stripe","destination":"billing","upstream":"http://127.0.0.1:1/billing","shared_payload":true,"received_at":5}`, billing)
	if err := s.c.HSet(ctx, s.partitionForEvent(ev).ev(billing), "ev", raw).Err(); err != nil {
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
