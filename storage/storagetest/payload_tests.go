package storagetest

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

// Shared payloads: the deliveries of an event with several store its body
// and headers once (storage.SharePayload); every job handed out, DLQ entry
// and replay has them all the same.

// markerEvent is newEvent with a random 1 KiB body (a marker Dump can
// find), multi-valued headers, and one delivery per destination given
// (none: the event's own, to the default destination).
func markerEvent(t testing.TB, source string, destinations ...string) *storage.Event {
	t.Helper()
	ev := newEvent(t, source, "")
	ev.Body = make([]byte, 1024)
	rand.Read(ev.Body)
	ev.Headers.Add("X-Multi", "one")
	ev.Headers.Add("X-Multi", "two")
	ev.Headers.Set("X-Empty", "")
	for _, d := range destinations {
		ev.Deliveries = append(ev.Deliveries, storage.Delivery{Destination: d, Upstream: "http://127.0.0.1:8080/" + d})
	}
	return ev
}

// wantPayload fails unless job has ev's exact body and headers.
func wantPayload(t testing.TB, what string, job *storage.Job, ev *storage.Event) {
	t.Helper()
	if !bytes.Equal(job.Body, ev.Body) || !headersEqual(job.Headers, ev.Headers) {
		t.Errorf("%s: body (%d bytes) or headers %v differ from the event's (%d bytes, %v)", what, len(job.Body), job.Headers, len(ev.Body), ev.Headers)
	}
}

// wantEntryPayload fails unless DLQ entry id has ev's exact body and headers.
func wantEntryPayload(t testing.TB, s storage.Store, id string, ev *storage.Event) {
	t.Helper()
	if e := dlqGet(t, s, id); !bytes.Equal(e.Payload, ev.Body) || !headersEqual(e.Headers, ev.Headers) {
		t.Errorf("DLQ entry %s: payload (%d bytes) or headers %v differ from the event's", id, len(e.Payload), e.Headers)
	}
}

// stored counts, in what f.Dump returns of s, the copies of ev's body
// (raw or base64, as JSON has it) and of its payload record
// (storage.EncodePayload); ok is false without Dump.
func stored(t testing.TB, f Factory, s storage.Store, ev *storage.Event) (bodies, records int, ok bool) {
	t.Helper()
	if f.Dump == nil {
		return 0, 0, false
	}
	tt, _ := t.(*testing.T)
	if tt == nil {
		return 0, 0, false
	}
	b64 := []byte(base64.StdEncoding.EncodeToString(ev.Body))
	record := storage.EncodePayload(ev.Headers, ev.Body)
	for _, v := range f.Dump(tt, s) {
		bodies += bytes.Count(v, ev.Body) + bytes.Count(v, b64)
		records += bytes.Count(v, record)
	}
	return bodies, records, true
}

// testPayloadOnce: an event's body is stored once however many deliveries
// it has, encoded as a payload record only when it has several (or always,
// on a backend with Factory.LonePayload); every delivery leases with the
// exact body and headers.
func testPayloadOnce(t *testing.T, f Factory) {
	for _, tc := range []struct {
		name         string
		destinations []string
		records      int
	}{
		{"default alone", nil, 0},
		{"one destination", []string{"billing"}, 0},
		{"two destinations", []string{"default", "crm"}, 1},
		{"three destinations", []string{"default", "billing", "crm"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := f.Open(t)
			ev := markerEvent(t, "stripe", tc.destinations...)
			mustEnqueue(t, s, ev, time.Now().Add(time.Hour))
			want := tc.records
			if f.LonePayload {
				want = 1
			}
			if bodies, records, ok := stored(t, f, s, ev); ok && (bodies != 1 || records != want) {
				t.Errorf("stored the body %d times, %d payload records; want once, %d payload records", bodies, records, want)
			}
			jobs := lease(t, s, time.Now(), 10, time.Minute)
			if want := max(len(tc.destinations), 1); len(jobs) != want {
				t.Fatalf("leased %d jobs, want %d", len(jobs), want)
			}
			for _, j := range jobs {
				wantPayload(t, "leased "+j.ID, j, ev)
				finish(t, s, j, storage.Outcome{Result: storage.Delivered, Attempt: attempt(1, time.Now(), 200, "")})
			}
			if bodies, _, ok := stored(t, f, s, ev); ok && bodies != 1 {
				t.Errorf("delivered, the body is stored %d times, want once", bodies)
			}
			if _, err := s.Cleanup(t.Context(), time.Now().Add(2*time.Hour), time.Hour, 0); err != nil {
				t.Fatalf("Cleanup: %v", err)
			}
			if bodies, records, ok := stored(t, f, s, ev); ok && (bodies != 0 || records != 0) {
				t.Errorf("past retention, the body is stored %d times (%d payload records), want none", bodies, records)
			}
		})
	}
}

// testPayloadCleanup: the payload record goes with the event's last
// delivery, not before: a delivery left after its siblings were cleaned up
// still leases with its body, dies with it in its DLQ entry, and is
// retried with it.
func testPayloadCleanup(t *testing.T, f Factory) {
	s := f.Open(t)
	ev := markerEvent(t, "stripe", fanOutDestinations...)
	mustEnqueue(t, s, ev, time.Now().Add(48*time.Hour))
	crm := storage.DeliveryID(ev.ID, "crm")
	for _, j := range lease(t, s, time.Now(), 10, time.Minute) {
		out := storage.Outcome{Result: storage.Delivered, Attempt: attempt(1, time.Now(), 200, "")}
		if j.ID == crm {
			out = storage.Outcome{Result: storage.Release}
		}
		finish(t, s, j, out)
	}
	later := time.Now().Add(2 * time.Hour)
	if _, err := s.Cleanup(t.Context(), later, time.Hour, 0); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	if _, records, ok := stored(t, f, s, ev); ok && records != 1 {
		t.Errorf("%d payload records with one delivery left, want 1", records)
	}
	j := leaseOne(t, s, time.Now(), time.Minute, crm)
	wantPayload(t, "the delivery left", j, ev)
	finish(t, s, j, storage.Outcome{Result: storage.Dead, Attempt: attempt(1, time.Now(), 400, "bad"), Error: "bad"})
	wantEntryPayload(t, s, crm, ev)

	// its record past retention: the payload record goes, the entry keeps its copy
	if _, err := s.Cleanup(t.Context(), later.Add(2*time.Hour), time.Hour, 0); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	if bodies, records, ok := stored(t, f, s, ev); ok && (bodies != 1 || records != 0) {
		t.Errorf("every record past retention: the body stored %d times, %d payload records; want the DLQ entry's alone", bodies, records)
	}
	wantEntryPayload(t, s, crm, ev)
	if err := s.DLQRetry(t.Context(), crm, time.Now()); err != nil {
		t.Fatalf("DLQRetry: %v", err)
	}
	wantPayload(t, "retried", leaseOne(t, s, time.Now(), time.Minute, crm), ev)
}

// testPayloadDead: a dead delivery's DLQ entry has the payload, whether
// its siblings are still there or already cleaned up; retried (its
// siblings' payload record still there) it has it too.
func testPayloadDead(t *testing.T, f Factory) {
	s := f.Open(t)
	ev := markerEvent(t, "stripe", fanOutDestinations...)
	mustEnqueue(t, s, ev, time.Now().Add(48*time.Hour))
	billing, crm := storage.DeliveryID(ev.ID, "billing"), storage.DeliveryID(ev.ID, "crm")
	jobs := lease(t, s, time.Now(), 10, time.Minute)
	for _, j := range jobs {
		wantPayload(t, "leased "+j.ID, j, ev)
	}
	finish(t, s, jobByID(t, jobs, billing), storage.Outcome{Result: storage.Dead, Attempt: attempt(1, time.Now(), 410, "gone"), Error: "gone"})
	wantEntryPayload(t, s, billing, ev)
	if err := s.DLQRetry(t.Context(), billing, time.Now()); err != nil {
		t.Fatalf("DLQRetry: %v", err)
	}
	wantPayload(t, "retried", leaseOne(t, s, time.Now(), time.Minute, billing), ev)

	// the others delivered and cleaned up, the last one dies
	finish(t, s, jobByID(t, jobs, ev.ID), storage.Outcome{Result: storage.Delivered, Attempt: attempt(1, time.Now(), 200, "")})
	if _, err := s.Cleanup(t.Context(), time.Now().Add(2*time.Hour), time.Hour, 0); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	finish(t, s, jobByID(t, jobs, crm), storage.Outcome{Result: storage.Dead, Attempt: attempt(1, time.Now(), 400, "bad"), Error: "bad"})
	wantEntryPayload(t, s, crm, ev)
}

// testPayloadReplay: a replayed delivery of an event with several has its
// body, also once its siblings are cleaned up.
func testPayloadReplay(t *testing.T, f Factory) {
	s := f.Open(t)
	ev := markerEvent(t, "stripe", fanOutDestinations...)
	mustEnqueue(t, s, ev, time.Now().Add(48*time.Hour))
	billing := storage.DeliveryID(ev.ID, "billing")
	for _, j := range lease(t, s, time.Now(), 10, time.Minute) {
		finish(t, s, j, storage.Outcome{Result: storage.Delivered, Attempt: attempt(1, time.Now(), 200, "")})
	}
	replay := func(what string) *storage.Job {
		t.Helper()
		page, err := s.ListDelivered(t.Context(), storage.ReplayFilter{Destination: "billing"})
		infos := page.Events
		if err != nil || len(infos) != 1 || infos[0].ID != billing {
			t.Fatalf("ListDelivered(destination billing) = %+v, %v", infos, err)
		}
		if err := s.Replay(t.Context(), &infos[0], time.Now()); err != nil {
			t.Fatalf("Replay: %v", err)
		}
		j := leaseOne(t, s, time.Now(), time.Minute, billing)
		wantPayload(t, what, j, ev)
		return j
	}
	j := replay("replayed")
	// the siblings go past retention while the replay is in flight
	if _, err := s.Cleanup(t.Context(), time.Now().Add(2*time.Hour), time.Hour, 0); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	if bodies, records, ok := stored(t, f, s, ev); ok && (bodies != 1 || records != 1) {
		t.Errorf("one delivery left: the body stored %d times, %d payload records; want once, in the payload record", bodies, records)
	}
	finish(t, s, j, storage.Outcome{Result: storage.Release})
	j = leaseOne(t, s, time.Now(), time.Minute, billing)
	wantPayload(t, "replay leased again", j, ev)
	finish(t, s, j, storage.Outcome{Result: storage.Delivered, Attempt: attempt(2, time.Now(), 200, "")})
	replay("replayed again, its siblings gone")
}

// testPayloadOrdered: ordered deliveries of events with several share
// their payload too, and lease with it in order.
func testPayloadOrdered(t *testing.T, f Factory) {
	s := f.Open(t)
	var evs []*storage.Event
	for range 2 {
		ev := markerEvent(t, "shop")
		ev.Deliveries = []storage.Delivery{
			{Destination: "default", Upstream: "http://127.0.0.1:8080/a", OrderKey: "K"},
			{Destination: "crm", Upstream: "http://127.0.0.1:8080/crm", OrderKey: "K"},
		}
		mustEnqueue(t, s, ev, time.Now().Add(time.Hour))
		evs = append(evs, ev)
	}
	for _, ev := range evs {
		jobs := leaseExactly(t, s, time.Now(), ev.ID, storage.DeliveryID(ev.ID, "crm"))
		for _, j := range jobs {
			wantPayload(t, "ordered "+j.ID, j, ev)
			delivered(t, s, j)
		}
	}
	leaseExactly(t, s, time.Now())
}
