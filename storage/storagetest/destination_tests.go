package storagetest

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

// Destinations (fan-out): one event, one delivery per destination, each a
// job of its own.

// fanOutDestinations are the suite's destinations of a fanned-out event.
var fanOutDestinations = []string{"default", "billing", "crm"}

// fanOutEvent is newEvent with one delivery per fanOutDestinations, each
// to its own upstream.
func fanOutEvent(t testing.TB, source, eventID string) *storage.Event {
	t.Helper()
	ev := newEvent(t, source, eventID)
	for _, d := range fanOutDestinations {
		ev.Deliveries = append(ev.Deliveries, storage.Delivery{Destination: d, Upstream: "http://127.0.0.1:8080/" + d})
	}
	return ev
}

// deliveryIDs are the job IDs of ev's deliveries.
func deliveryIDs(ev *storage.Event) []string {
	var ids []string
	for _, d := range ev.Deliveries {
		ids = append(ids, storage.DeliveryID(ev.ID, d.Destination))
	}
	return ids
}

// jobByID finds the job id among jobs.
func jobByID(t testing.TB, jobs []*storage.Job, id string) *storage.Job {
	t.Helper()
	i := slices.IndexFunc(jobs, func(j *storage.Job) bool { return j.ID == id })
	if i < 0 {
		t.Fatalf("job %s not among %v", id, jobIDs(jobs))
	}
	return jobs[i]
}

// deliveryState is the status Lookup reports of ev's delivery to dest.
func deliveryState(t testing.TB, info *storage.EventInfo, dest string) storage.Status {
	t.Helper()
	for _, d := range info.Deliveries {
		if d.Destination == dest {
			return d.Status
		}
	}
	t.Fatalf("Lookup has no delivery to %s: %+v", dest, info.Deliveries)
	return ""
}

// testFanOut: an event with three deliveries is three jobs, leased
// independently, each a full copy of the event in its own lane; finishing
// one leaves the others; a duplicate creates nothing; Lookup reports each
// delivery and the aggregate.
func testFanOut(t *testing.T, f Factory) {
	s := f.Open(t)
	ev := fanOutEvent(t, "stripe", "evt_fan")
	mustEnqueue(t, s, ev, time.Now().Add(time.Hour))
	wantCounts(t, s, storage.Counts{Queued: 3})
	if info := lookup(t, s, "stripe", "evt_fan"); info.ID != ev.ID || info.Status != storage.StatusQueued || len(info.Deliveries) != 3 {
		t.Fatalf("Lookup of a new fanned-out event: %+v", info)
	}

	jobs := lease(t, s, time.Now(), 10, time.Minute)
	if got := jobIDs(jobs); !sameSet(got, deliveryIDs(ev)) {
		t.Fatalf("leased %v, want the deliveries %v", got, deliveryIDs(ev))
	}
	for _, d := range ev.Deliveries {
		j := jobByID(t, jobs, storage.DeliveryID(ev.ID, d.Destination))
		want := cloneEvent(ev)
		want.ID, want.Upstream = j.ID, d.Upstream
		checkEvent(t, "delivery to "+d.Destination, j.Event, want)
		if storage.DestinationOf(&j.Event) != d.Destination {
			t.Errorf("job %s: destination %q, want %q", j.ID, j.Destination, d.Destination)
		}
		wantLane := "stripe"
		if d.Destination != "default" {
			wantLane = "stripe/" + d.Destination
		}
		if lane := storage.LaneOf(&j.Event); lane != wantLane {
			t.Errorf("job %s in lane %q, want %q", j.ID, lane, wantLane)
		}
	}
	if res := enqueue(t, s, fanOutEvent(t, "stripe", "evt_fan"), time.Now().Add(time.Hour)); !res.Duplicate || res.ID != ev.ID || res.Status != storage.StatusInFlight {
		t.Errorf("duplicate of a fanned-out event = %+v, want duplicate of %s, in flight", res, ev.ID)
	}
	wantCounts(t, s, storage.Counts{InFlight: 3})

	billing := jobByID(t, jobs, storage.DeliveryID(ev.ID, "billing"))
	finish(t, s, billing, storage.Outcome{Result: storage.Delivered, Attempt: attempt(1, time.Now(), 200, "")})
	wantCounts(t, s, storage.Counts{InFlight: 2})
	info := lookup(t, s, "stripe", "evt_fan")
	if info.Status != storage.StatusInFlight || deliveryState(t, info, "billing") != storage.StatusDelivered ||
		deliveryState(t, info, "crm") != storage.StatusInFlight || deliveryState(t, info, "default") != storage.StatusInFlight {
		t.Errorf("Lookup after one delivery finished: %+v", info)
	}
	for _, d := range []string{"default", "crm"} {
		finish(t, s, jobByID(t, jobs, storage.DeliveryID(ev.ID, d)), storage.Outcome{Result: storage.Delivered, Attempt: attempt(1, time.Now(), 200, "")})
	}
	info = lookup(t, s, "stripe", "evt_fan")
	if info.Status != storage.StatusDelivered || info.FinishedAt.IsZero() || len(info.Attempts) != 3 {
		t.Errorf("Lookup once every delivery is delivered: %+v", info)
	}
	if jobs := lease(t, s, time.Now().Add(time.Hour), 10, time.Minute); len(jobs) != 0 {
		t.Errorf("jobs left after every delivery finished: %v", jobIDs(jobs))
	}
}

// testFanOutWithoutProviderID: an event without a provider id fans out
// too, and is found by its internal id.
func testFanOutWithoutProviderID(t *testing.T, f Factory) {
	s := f.Open(t)
	ev := fanOutEvent(t, "stripe", "")
	ev.Dedupe, ev.EventID = false, ev.ID
	mustEnqueue(t, s, ev, time.Now().Add(time.Hour))
	jobs := lease(t, s, time.Now(), 10, time.Minute)
	if got := jobIDs(jobs); !sameSet(got, deliveryIDs(ev)) {
		t.Fatalf("leased %v, want %v", got, deliveryIDs(ev))
	}
	finish(t, s, jobByID(t, jobs, storage.DeliveryID(ev.ID, "crm")), storage.Outcome{Result: storage.Delivered, Attempt: attempt(1, time.Now(), 200, "")})
	if info := lookup(t, s, "stripe", ev.ID); deliveryState(t, info, "crm") != storage.StatusDelivered || info.Status != storage.StatusInFlight {
		t.Errorf("Lookup by internal id: %+v", info)
	}
}

// testFanOutDead: a dead delivery has its own DLQ entry (its ID and
// destination), listed by destination; retrying it re-enqueues it alone.
func testFanOutDead(t *testing.T, f Factory) {
	s := f.Open(t)
	ev := fanOutEvent(t, "stripe", "evt_fan_dead")
	mustEnqueue(t, s, ev, time.Now().Add(time.Hour))
	jobs := lease(t, s, time.Now(), 10, time.Minute)
	deadID := storage.DeliveryID(ev.ID, "billing")
	for _, j := range jobs {
		out := storage.Outcome{Result: storage.Delivered, Attempt: attempt(1, time.Now(), 200, "")}
		if j.ID == deadID {
			out = storage.Outcome{Result: storage.Dead, Attempt: attempt(1, time.Now(), 400, "bad"), Error: "permanent"}
		}
		finish(t, s, j, out)
	}
	wantCounts(t, s, storage.Counts{Dead: 1})
	e := dlqGet(t, s, deadID)
	if e.Destination != "billing" || e.EventID != "evt_fan_dead" || e.Upstream != "http://127.0.0.1:8080/billing" || !bytes.Equal(e.Payload, ev.Body) {
		t.Errorf("DLQ entry of the dead delivery: %+v", e)
	}
	if _, err := s.DLQGet(t.Context(), ev.ID); !errors.Is(err, storage.ErrDLQNotFound) {
		t.Errorf("DLQ entry for the delivered default delivery: err = %v", err)
	}
	for _, tc := range []struct {
		dest string
		want []string
	}{{"", []string{deadID}}, {"billing", []string{deadID}}, {"default", nil}, {"crm", nil}} {
		var got []string
		for _, p := range listAll(t, s, storage.DLQFilter{Destination: tc.dest}) {
			for _, e := range p.Entries {
				got = append(got, e.ID)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("DLQList(destination %q) = %v, want %v", tc.dest, got, tc.want)
		}
	}
	info := lookup(t, s, "stripe", "evt_fan_dead")
	if info.Status != storage.StatusDead || deliveryState(t, info, "billing") != storage.StatusDead || deliveryState(t, info, "crm") != storage.StatusDelivered {
		t.Errorf("Lookup with one dead delivery: %+v", info)
	}

	if err := s.DLQRetry(t.Context(), deadID, time.Now()); err != nil {
		t.Fatalf("DLQRetry: %v", err)
	}
	j := leaseOne(t, s, time.Now(), time.Minute, deadID)
	if j.Destination != "billing" || j.Upstream != "http://127.0.0.1:8080/billing" || storage.LaneOf(&j.Event) != "stripe/billing" {
		t.Errorf("retried delivery: destination %q upstream %q lane %q", j.Destination, j.Upstream, storage.LaneOf(&j.Event))
	}
	finish(t, s, j, storage.Outcome{Result: storage.Delivered, Attempt: attempt(2, time.Now(), 200, "")})
	if info := lookup(t, s, "stripe", "evt_fan_dead"); info.Status != storage.StatusDelivered {
		t.Errorf("Lookup after the retried delivery was delivered: %s", info.Status)
	}
}

// testFanOutReplay: delivered deliveries are listed with their destination;
// replaying one re-enqueues it alone, in its destination's replay lane.
func testFanOutReplay(t *testing.T, f Factory) {
	s := f.Open(t)
	ev := fanOutEvent(t, "stripe", "evt_fan_replay")
	mustEnqueue(t, s, ev, time.Now().Add(time.Hour))
	for _, j := range lease(t, s, time.Now(), 10, time.Minute) {
		finish(t, s, j, storage.Outcome{Result: storage.Delivered, Attempt: attempt(1, time.Now(), 200, "")})
	}
	if got := listDelivered(t, s, storage.ReplayFilter{}); !sameSet(got, deliveryIDs(ev)) {
		t.Errorf("ListDelivered = %v, want every delivery %v", got, deliveryIDs(ev))
	}
	page, err := s.ListDelivered(t.Context(), storage.ReplayFilter{Destination: "billing"})
	infos := page.Events
	if err != nil || len(infos) != 1 || infos[0].ID != storage.DeliveryID(ev.ID, "billing") || infos[0].Destination != "billing" {
		t.Fatalf("ListDelivered(destination billing) = %+v, %v", infos, err)
	}
	if got := listDelivered(t, s, storage.ReplayFilter{Destination: "default"}); !slices.Equal(got, []string{ev.ID}) {
		t.Errorf("ListDelivered(destination default) = %v, want [%s]", got, ev.ID)
	}
	if err := s.Replay(t.Context(), &infos[0], time.Now()); err != nil {
		t.Fatalf("Replay: %v", err)
	}
	j := leaseOne(t, s, time.Now(), time.Minute, infos[0].ID)
	if !j.Replay || storage.LaneOf(&j.Event) != "stripe/billing~replay" || j.Upstream != "http://127.0.0.1:8080/billing" {
		t.Errorf("replayed delivery: replay %v lane %q upstream %q", j.Replay, storage.LaneOf(&j.Event), j.Upstream)
	}
}

// testFanOutGate: a destination's lanes are gated with its source's.
func testFanOutGate(t *testing.T, f Factory) {
	s := f.Open(t)
	ev := fanOutEvent(t, "held", "")
	mustEnqueue(t, s, ev, time.Now().Add(time.Hour))
	other := newEvent(t, "open", "")
	mustEnqueue(t, s, other, time.Now().Add(time.Hour))
	gate := &storage.Gate{Skip: map[string]bool{}}
	for _, lane := range storage.LanesOf("held") {
		gate.Skip[lane] = true
	}
	if jobs := gateLease(t, s, time.Now(), 10, time.Minute, gate); !slices.Equal(jobIDs(jobs), []string{other.ID}) {
		t.Errorf("Lease with the source skipped = %v, want only %s", jobIDs(jobs), other.ID)
	}
	gate.Skip, gate.Cap = nil, map[string]int{"held": 1}
	jobs := gateLease(t, s, time.Now(), 10, time.Minute, gate)
	if len(jobs) != 3 {
		t.Errorf("Lease with the source capped at 1 a lane = %v, want one of each destination's lane", jobIDs(jobs))
	}
}

// testFanOutRetention: each delivery goes on its own finish time; the event
// is found as long as one of its deliveries is left.
func testFanOutRetention(t *testing.T, f Factory) {
	s := f.Open(t)
	long := time.Now().Add(48 * time.Hour)
	ev := fanOutEvent(t, "stripe", "evt_fan_retention")
	mustEnqueue(t, s, ev, long)
	jobs := lease(t, s, time.Now(), 10, time.Minute)
	crm := storage.DeliveryID(ev.ID, "crm")
	for _, j := range jobs {
		if j.ID != crm {
			finish(t, s, j, storage.Outcome{Result: storage.Delivered, Attempt: attempt(1, time.Now(), 200, "")})
		}
	}
	later := time.Now().Add(2 * time.Hour)
	if _, err := s.Cleanup(t.Context(), later, time.Hour, 0); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	info := lookup(t, s, "stripe", "evt_fan_retention")
	if info.ID != ev.ID || info.Status != storage.StatusInFlight || deliveryState(t, info, "crm") != storage.StatusInFlight ||
		deliveryState(t, info, "billing") != storage.StatusDelivered {
		t.Errorf("Lookup with two deliveries past retention: %+v", info)
	}
	if res := enqueue(t, s, fanOutEvent(t, "stripe", "evt_fan_retention"), long); !res.Duplicate || res.ID != ev.ID {
		t.Errorf("duplicate after a partial cleanup = %+v", res)
	}
	finish(t, s, jobByID(t, jobs, crm), storage.Outcome{Result: storage.Delivered, Attempt: attempt(1, time.Now(), 200, "")})
	if _, err := s.Cleanup(t.Context(), later.Add(2*time.Hour), time.Hour, 0); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	if _, err := s.Lookup(t.Context(), "stripe", "evt_fan_retention"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Lookup once every delivery is past retention: err = %v, want ErrNotFound", err)
	}
	if jobs := lease(t, s, time.Now().Add(time.Hour), 10, time.Minute); len(jobs) != 0 {
		t.Errorf("jobs left: %v", jobIDs(jobs))
	}
}

// testFanOutDurability: fanned-out events enqueued concurrently are, after
// a reopen, each stored with every delivery.
func testFanOutDurability(t *testing.T, f Factory) {
	if f.Reopen == nil {
		t.Skip("no Reopen")
	}
	s := f.Open(t)
	const n = 20
	evs := make([]*storage.Event, n)
	var want []string
	for i := range evs {
		evs[i] = fanOutEvent(t, "stripe", "")
		want = append(want, deliveryIDs(evs[i])...)
	}
	enqueueConcurrently(t, s, evs)
	s = f.Reopen(t, s)
	if got := jobIDs(lease(t, s, time.Now(), 10*n, time.Minute)); !sameSet(got, want) {
		t.Errorf("after reopen leased %d jobs, want every delivery (%d)", len(got), len(want))
	}
}

// testFanOutBeforeLease: every reader answers for a fanned-out event that
// nothing has leased yet (a backend may keep it in another form until
// then: one record expanded by Lease, redisstore's fan-out record) as it
// does once its deliveries are jobs: per-lane counts, the next due time
// whatever the gate, a duplicate's status, an erasure, and a lease with
// one destination held back that leaves that delivery queued.
func testFanOutBeforeLease(t *testing.T, f Factory) {
	held := &storage.Gate{Skip: map[string]bool{"stripe/billing": true, "stripe/billing~replay": true}}
	t.Run("QueueByLane", func(t *testing.T) {
		s := f.Open(t)
		mustEnqueue(t, s, fanOutEvent(t, "stripe", "evt_fan_lanes"), time.Now().Add(time.Hour))
		byLane, err := s.QueueByLane(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, lane := range []string{"stripe", "stripe/billing", "stripe/crm"} {
			if byLane[lane] != (storage.Counts{Queued: 1}) {
				t.Errorf("lane %s: %+v, want 1 queued (all: %v)", lane, byLane[lane], byLane)
			}
		}
	})
	t.Run("NextDue", func(t *testing.T) {
		s := f.Open(t)
		before := time.Now()
		mustEnqueue(t, s, fanOutEvent(t, "stripe", "evt_fan_due"), time.Now().Add(time.Hour))
		// the other destinations are due: so is the event
		due, ok, err := s.NextDue(t.Context(), held)
		if err != nil || !ok || due.Before(before.Add(-time.Millisecond)) || due.After(time.Now()) {
			t.Errorf("NextDue = %v, %v, %v; want about now", due, ok, err)
		}
	})
	t.Run("QueueHeads", func(t *testing.T) {
		s := f.Open(t)
		mustEnqueue(t, s, fanOutEvent(t, "stripe", "evt_fan_heads"), time.Now().Add(time.Hour))
		heads, err := s.QueueHeads(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var bySource bool
		for lane := range heads {
			bySource = bySource || storage.SourceOfLane(lane) == "stripe"
		}
		if !bySource {
			t.Errorf("QueueHeads = %v, want the stripe event's", heads)
		}
	})
	t.Run("ListEvents", func(t *testing.T) {
		s := f.Open(t)
		ev := fanOutEvent(t, "stripe", "evt_fan_list")
		mustEnqueue(t, s, ev, time.Now().Add(time.Hour))
		page, err := s.ListEvents(t.Context(), storage.EventFilter{Source: "stripe"})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Events) != 1 || page.Events[0].ID != ev.ID || len(page.Events[0].Deliveries) != 3 || page.Events[0].Status != storage.StatusQueued {
			t.Errorf("ListEvents = %+v, want %s with its 3 deliveries, queued", page.Events, ev.ID)
		}
	})
	t.Run("Duplicate", func(t *testing.T) {
		s := f.Open(t)
		ev := fanOutEvent(t, "stripe", "evt_fan_dup")
		mustEnqueue(t, s, ev, time.Now().Add(time.Hour))
		if res := enqueue(t, s, fanOutEvent(t, "stripe", "evt_fan_dup"), time.Now().Add(time.Hour)); !res.Duplicate || res.ID != ev.ID || res.Status != storage.StatusQueued {
			t.Errorf("duplicate = %+v, want a duplicate of %s, queued", res, ev.ID)
		}
		if jobs := lease(t, s, time.Now(), 10, time.Minute); !sameSet(jobIDs(jobs), deliveryIDs(ev)) {
			t.Errorf("leased %v after the duplicate, want %v", jobIDs(jobs), deliveryIDs(ev))
		}
	})
	t.Run("Erase", func(t *testing.T) {
		s := f.Open(t)
		until := time.Now().Add(time.Hour)
		ev := fanOutEvent(t, "stripe", "evt_fan_erase")
		mustEnqueue(t, s, ev, until)
		if res := erase(t, s, "stripe", "evt_fan_erase"); res.ID != ev.ID || res.Deliveries != 3 {
			t.Errorf("Erase = %+v, want 3 deliveries of %s", res, ev.ID)
		}
		wantErased(t, s, ev, until)
		wantCounts(t, s, storage.Counts{})
		if jobs := lease(t, s, time.Now(), 10, time.Minute); len(jobs) != 0 {
			t.Errorf("leased %v after Erase", jobIDs(jobs))
		}
	})
	t.Run("LeaseHeld", func(t *testing.T) {
		s := f.Open(t)
		ev := fanOutEvent(t, "stripe", "evt_fan_held")
		mustEnqueue(t, s, ev, time.Now().Add(time.Hour))
		jobs := gateLease(t, s, time.Now(), 10, time.Minute, held)
		if want := []string{storage.DeliveryID(ev.ID, "default"), storage.DeliveryID(ev.ID, "crm")}; !sameSet(jobIDs(jobs), want) {
			t.Fatalf("leased %v with billing held, want %v", jobIDs(jobs), want)
		}
		wantCounts(t, s, storage.Counts{Queued: 1, InFlight: 2})
		info := lookup(t, s, "stripe", "evt_fan_held")
		if deliveryState(t, info, "billing") != storage.StatusQueued || deliveryState(t, info, "crm") != storage.StatusInFlight {
			t.Errorf("Lookup with billing held: %+v", info.Deliveries)
		}
		billing := leaseOne(t, s, time.Now(), time.Minute, storage.DeliveryID(ev.ID, "billing"))
		wantPayload(t, "billing's delivery", billing, ev)
	})
}
