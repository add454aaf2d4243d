package storagetest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

// Encryption at rest (storage.SealingStore over the backend) and rekey
// (storage.Rekey with the backend's Rekeyer). These tests wrap the
// backend themselves, with keyrings of their own.

// rekeyWorld is a record of every kind that can hold a payload, sealed
// under test key 1: a queued event, a fan-out event (its payload record)
// with one dead delivery, a fan-out event none of whose deliveries was
// ever leased (a backend may keep it as one record until a lease), a dead
// event (its DLQ entry), a delivered event (kept for replay), and an
// event the backend stored in clear (before encryption was on).
type rekeyWorld struct {
	queued, fan, fanWaiting, dead, delivered, clear *storage.Event
	fanDead                                         string // the fan-out event's dead delivery
}

func (w *rekeyWorld) events() []*storage.Event {
	return []*storage.Event{w.queued, w.fan, w.fanWaiting, w.dead, w.delivered, w.clear}
}

// sealedEvent is markerEvent with a marker header.
func sealedEvent(t testing.TB, source string, destinations ...string) *storage.Event {
	ev := markerEvent(t, source, destinations...)
	ev.Headers.Set("X-Marker", "hdr-marker-"+ev.ID)
	return ev
}

func makeRekeyWorld(t *testing.T, back storage.Store) *rekeyWorld {
	t.Helper()
	old := storage.NewSealingStore(back, TestKeyring(t, 1))
	until := time.Now().Add(time.Hour)
	w := &rekeyWorld{queued: sealedEvent(t, "stripe"), fan: sealedEvent(t, "stripe", "billing", "crm"),
		dead: sealedEvent(t, "github"), delivered: sealedEvent(t, "shopify"), clear: sealedEvent(t, "clear")}
	mustEnqueue(t, old, w.queued, until)
	mustEnqueue(t, old, w.fan, until)
	mustEnqueue(t, old, w.dead, until)
	mustEnqueue(t, back, w.clear, until) // in clear
	finish(t, old, leaseOneOf(t, old, w.dead.ID), storage.Outcome{Result: storage.Dead, Attempt: attempt(1, time.Now(), 400, "bad"), Error: "400"})
	w.fanDead = deliveryIDs(w.fan)[1]
	finish(t, old, leaseOneOf(t, old, w.fanDead), storage.Outcome{Result: storage.Dead, Attempt: attempt(1, time.Now(), 400, "bad"), Error: "400"})
	deliver(t, old, w.delivered, 1)
	// after every lease above, which would have taken it too
	w.fanWaiting = sealedEvent(t, "stripe", "billing", "crm")
	mustEnqueue(t, old, w.fanWaiting, until)
	return w
}

// markers are the markers of ev's body and header.
func markers(ev *storage.Event) []string {
	return []string{string(ev.Body[100:148]), ev.Headers.Get("X-Marker")}
}

// wantAtRest checks, with a Dump, which events' markers the raw store
// holds: those of clear, none of the others.
func wantAtRest(t *testing.T, f Factory, s storage.Store, all []*storage.Event, clear ...*storage.Event) {
	t.Helper()
	if f.Dump == nil {
		return
	}
	dump := f.Dump(t, s)
	for _, ev := range all {
		want := false
		for _, c := range clear {
			want = want || c == ev
		}
		for _, m := range markers(ev) {
			found := false
			for _, v := range dump {
				found = found || HasMarker(v, m)
			}
			if found != want {
				t.Errorf("event %s: marker found in the raw store: %v, want %v", ev.ID, found, want)
			}
		}
	}
}

// wantWorld checks that every record of w reads through s: the queued
// jobs, the DLQ entries (retried and leased again), the delivered event
// (replayed and leased).
func wantWorld(t *testing.T, s storage.Store, w *rekeyWorld) {
	t.Helper()
	jobs := lease(t, s, time.Now(), 1000, time.Minute)
	byID := map[string]*storage.Job{}
	for _, j := range jobs {
		byID[j.ID] = j
	}
	want := map[string]*storage.Event{w.queued.ID: w.queued, w.clear.ID: w.clear}
	for _, id := range deliveryIDs(w.fan) {
		if id != w.fanDead {
			want[id] = w.fan
		}
	}
	for _, id := range deliveryIDs(w.fanWaiting) {
		want[id] = w.fanWaiting
	}
	for id, ev := range want {
		j := byID[id]
		if j == nil {
			t.Errorf("job %s not leased (leased %v)", id, jobIDs(jobs))
			continue
		}
		wantPayload(t, "job "+id, j, ev)
		finish(t, s, j, storage.Outcome{Result: storage.Delivered, Attempt: attempt(1, time.Now(), 200, "")})
	}
	wantEntryPayload(t, s, w.dead.ID, w.dead)
	wantEntryPayload(t, s, w.fanDead, w.fan)
	for _, id := range []string{w.dead.ID, w.fanDead} {
		if err := s.DLQRetry(t.Context(), id, time.Now()); err != nil {
			t.Fatalf("DLQRetry(%s): %v", id, err)
		}
	}
	if err := s.Replay(t.Context(), infoOf(t, s, w.delivered), time.Now()); err != nil {
		t.Fatalf("Replay: %v", err)
	}
	again := lease(t, s, time.Now(), 1000, time.Minute)
	got := map[string]*storage.Job{}
	for _, j := range again {
		got[j.ID] = j
	}
	for id, ev := range map[string]*storage.Event{w.dead.ID: w.dead, w.fanDead: w.fan, w.delivered.ID: w.delivered} {
		if got[id] == nil {
			t.Errorf("job %s not leased after its retry or replay (leased %v)", id, jobIDs(again))
			continue
		}
		wantPayload(t, "retried or replayed job "+id, got[id], ev)
	}
}

func rekey(t *testing.T, s *storage.SealingStore, batch int) storage.RekeyProgress {
	t.Helper()
	p, err := s.Rekey(t.Context(), storage.RekeyOptions{Batch: batch}, nil)
	if err != nil {
		t.Fatalf("Rekey: %v", err)
	}
	if p.State != storage.RekeyDone || p.Failed != 0 || p.KeyID != s.Keys().CurrentID() {
		t.Fatalf("Rekey = %+v, want done under %s, none failed", p, s.Keys().CurrentID())
	}
	return p
}

// testSealedAtRest: with a key, no body or header reaches the backend in
// clear; the records read back whole.
func testSealedAtRest(t *testing.T, f Factory) {
	back := Unseal(f.Open(t))
	w := makeRekeyWorld(t, back)
	wantAtRest(t, f, back, w.events(), w.clear)
	wantWorld(t, storage.NewSealingStore(back, TestKeyring(t, 1)), w)
}

// testSealedKeyMissing: a job whose key is missing is not handed out but
// dead-lettered with its sealed payload and an error naming the key; its
// entry cannot be read (ErrKeyMissing) until the key is back, and its
// retry then delivers it.
func testSealedKeyMissing(t *testing.T, f Factory) {
	back := Unseal(f.Open(t))
	old := storage.NewSealingStore(back, TestKeyring(t, 1))
	other := storage.NewSealingStore(back, TestKeyring(t, 2))
	ev := sealedEvent(t, "stripe")
	mustEnqueue(t, old, ev, time.Now().Add(time.Hour))
	if jobs := lease(t, other, time.Now(), 10, time.Minute); len(jobs) != 0 {
		t.Fatalf("Lease without the key handed out %v", jobIDs(jobs))
	}
	raw, err := back.DLQGet(t.Context(), ev.ID)
	if err != nil {
		t.Fatalf("the job is not in the DLQ: %v", err)
	}
	keyID := storage.KeyID(TestKey(1))
	if !strings.Contains(raw.Error, keyID) || raw.Sealed == nil || raw.Payload != nil {
		t.Errorf("entry: error %q (want key %s named), sealed %d bytes, payload %d bytes", raw.Error, keyID, len(raw.Sealed), len(raw.Payload))
	}
	var km *storage.KeyMissingError
	if _, err := other.DLQGet(t.Context(), ev.ID); !errors.Is(err, storage.ErrKeyMissing) || !errors.As(err, &km) || km.KeyID != keyID {
		t.Errorf("DLQGet without the key: err = %v", err)
	}
	wantEntryPayload(t, old, ev.ID, ev)
	if err := old.DLQRetry(t.Context(), ev.ID, time.Now()); err != nil {
		t.Fatalf("DLQRetry: %v", err)
	}
	wantPayload(t, "retried job", leaseOne(t, old, time.Now(), time.Minute, ev.ID), ev)
}

// testRekey: a rekey re-seals every record under the new first key (and
// seals the one in clear); with the old key removed every record still
// reads; a second rekey rewrites nothing.
func testRekey(t *testing.T, f Factory) {
	back := Unseal(f.Open(t))
	w := makeRekeyWorld(t, back)
	both := storage.NewSealingStore(back, TestKeyring(t, 2, 1))
	p := rekey(t, both, 3)
	// the queued job, the fan-out events' payload records (their jobs
	// have none of their own), two DLQ entries, the delivered event, the
	// clear one (a dead event's record keeps no payload)
	if p.Resealed < 7 {
		t.Errorf("first rekey resealed %d records, want at least 7 (%+v)", p.Resealed, p)
	}
	if p2 := rekey(t, both, 3); p2.Resealed != 0 {
		t.Errorf("second rekey resealed %d records, want none", p2.Resealed)
	}
	wantAtRest(t, f, back, w.events())
	wantWorld(t, storage.NewSealingStore(back, TestKeyring(t, 2)), w)
}

// testRekeyResume: a rekey cut short (its context cancelled after a
// batch; or batches written and no progress saved, as after a kill -9)
// goes on when started again, and leaves every record readable under the
// new key alone.
func testRekeyResume(t *testing.T, f Factory) {
	back := Unseal(f.Open(t))
	w := makeRekeyWorld(t, back)
	old := storage.NewSealingStore(back, TestKeyring(t, 1))
	var extra []*storage.Event
	for range 12 {
		ev := sealedEvent(t, "extra")
		mustEnqueue(t, old, ev, time.Now().Add(time.Hour))
		extra = append(extra, ev)
	}
	both := storage.NewSealingStore(back, TestKeyring(t, 2, 1))
	// batches written, progress never saved (killed between the two)
	step, err := back.RekeyBatch(t.Context(), both.Keys(), "", 2)
	if err != nil || step.Scanned == 0 || step.Done {
		t.Fatalf("RekeyBatch = %+v, %v", step, err)
	}
	// a rekey cancelled after its first batch
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	first, err := both.Rekey(ctx, storage.RekeyOptions{Batch: 2}, func(storage.RekeyProgress) { cancel() })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Rekey = %+v, %v", first, err)
	}
	saved, err := back.RekeyState(t.Context())
	if err != nil || saved.State != storage.RekeyRunning || saved.Cursor == "" || saved.Scanned == 0 {
		t.Fatalf("saved progress %+v, %v: want running with a cursor", saved, err)
	}
	p := rekey(t, both, 2)
	if !p.StartedAt.Equal(saved.StartedAt) || p.Scanned <= saved.Scanned {
		t.Errorf("the second rekey did not resume the first: %+v after %+v", p, saved)
	}
	if p2 := rekey(t, both, 50); p2.Resealed != 0 {
		t.Errorf("a rekey after the resumed one resealed %d records", p2.Resealed)
	}
	only := storage.NewSealingStore(back, TestKeyring(t, 2))
	wantAtRest(t, f, back, append(w.events(), extra...))
	jobs := lease(t, only, time.Now(), 1000, time.Minute)
	got := map[string]*storage.Job{}
	for _, j := range jobs {
		got[j.ID] = j
	}
	for _, ev := range extra {
		if got[ev.ID] == nil {
			t.Errorf("extra job %s not leased", ev.ID)
			continue
		}
		wantPayload(t, "extra job", got[ev.ID], ev)
	}
}

// testRekeyUnderTraffic: a rekey while events are enqueued, leased and
// finished loses nothing, and leaves nothing under the old key.
func testRekeyUnderTraffic(t *testing.T, f Factory) {
	back := Unseal(f.Open(t))
	old := storage.NewSealingStore(back, TestKeyring(t, 1))
	events := map[string]*storage.Event{}
	for range 30 {
		ev := sealedEvent(t, "before")
		mustEnqueue(t, old, ev, time.Now().Add(time.Hour))
		events[ev.ID] = ev
	}
	both := storage.NewSealingStore(back, TestKeyring(t, 2, 1))
	var mu sync.Mutex
	done := make(chan struct{})
	trafficDone := make(chan error, 1)
	go func() {
		trafficDone <- func() error {
			ctx := context.Background()
			for i := 0; ; i++ {
				select {
				case <-done:
					return nil
				default:
				}
				ev := sealedEvent(t, "during")
				if i%3 == 0 {
					ev = sealedEvent(t, "during", "billing", "crm")
				}
				if _, err := both.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
					return err
				}
				mu.Lock()
				events[ev.ID] = ev
				mu.Unlock()
				jobs, err := both.Lease(ctx, time.Now(), 3, time.Minute, nil)
				if err != nil {
					return err
				}
				for k, j := range jobs {
					out := []storage.Outcome{{Result: storage.Delivered, Attempt: attempt(1, time.Now(), 200, "")},
						{Result: storage.Retry, Attempt: attempt(1, time.Now(), 503, "busy"), Due: time.Now()},
						{Result: storage.Dead, Attempt: attempt(1, time.Now(), 400, "bad"), Error: "400"}}[(i+k)%3]
					if err := both.Finish(ctx, j, out); err != nil {
						return err
					}
				}
			}
		}()
	}()
	_, err := both.Rekey(t.Context(), storage.RekeyOptions{Batch: 4}, nil)
	time.Sleep(50 * time.Millisecond)
	close(done)
	if terr := <-trafficDone; terr != nil {
		t.Fatalf("traffic: %v", terr)
	}
	if err != nil {
		t.Fatalf("Rekey under traffic: %v", err)
	}
	if p := rekey(t, storage.NewSealingStore(back, TestKeyring(t, 2)), 50); p.Resealed != 0 {
		t.Errorf("records left under the old key (or in clear): the next rekey resealed %d", p.Resealed)
	}
	only := storage.NewSealingStore(back, TestKeyring(t, 2))
	for _, j := range lease(t, only, time.Now(), 10000, time.Minute) {
		ev := events[storage.EventIDOfDelivery(j.ID)]
		if ev == nil {
			t.Fatalf("leased unknown job %s", j.ID)
		}
		wantPayload(t, "job "+j.ID, j, ev)
	}
	page, err := only.DLQList(t.Context(), storage.DLQFilter{Limit: storage.DLQMaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range page.Entries {
		if strings.Contains(e.Error, storage.KeyMissingReason) {
			t.Errorf("entry %s: %s", e.ID, e.Error)
		}
		wantEntryPayload(t, only, e.ID, events[storage.EventIDOfDelivery(e.ID)])
	}
	for _, ev := range events {
		if _, err := only.Lookup(t.Context(), ev.Source, ev.EventID); err != nil {
			t.Errorf("event %s lost: %v", ev.ID, err)
		}
	}
}
