package webhooks

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/operator"
	"github.com/hookline/hookline/storage"
)

// fanOutEvent is storagetestEvent with one delivery per destination
// (default: forward_to's), each to its own path.
func fanOutEvent(source, eventID string, dests ...string) *storage.Event {
	ev := storagetestEvent(source, eventID, "order.created")
	for _, d := range dests {
		ev.Deliveries = append(ev.Deliveries, storage.Delivery{Destination: d, Upstream: "http://127.0.0.1:1/" + d})
	}
	return ev
}

// finishAll leases every due job of st and finishes each with the result
// result picks by destination, reporting each to the app as the
// dispatcher does; it returns the jobs by destination.
func finishAll(t *testing.T, app *App, st storage.Store, result func(dest string) storage.Result) map[string]*storage.Job {
	t.Helper()
	jobs, err := st.Lease(t.Context(), time.Now(), 100, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*storage.Job{}
	for _, j := range jobs {
		dest := storage.DestinationOf(&j.Event)
		res := result(dest)
		a := &storage.Attempt{N: 1, At: time.Now(), Status: 200}
		o := storage.Outcome{Result: res, Attempt: a}
		if res == storage.Dead {
			a.Status, o.Error = 422, "permanent failure"
		}
		if err := st.Finish(t.Context(), j, o); err != nil {
			t.Fatal(err)
		}
		app.onResult(delivery.Report{Job: j, Result: res, Attempt: a, Error: o.Error})
		out[dest] = j
	}
	return out
}

// TestStatsByDestination: each delivery result counts under its
// destination (the default's as "default"), in the store, where the
// operator API reads it; retries count in neither.
func TestStatsByDestination(t *testing.T) {
	app, err := provisionApp(t, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Cleanup()
	st, err := app.Store()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := st.Enqueue(t.Context(), fanOutEvent("shop", fmt.Sprint("e", i), "default", "billing", "crm"), time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Enqueue(t.Context(), storagetestEvent("plain", "p1", ""), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	finishAll(t, app, st, func(dest string) storage.Result {
		if dest == "billing" {
			return storage.Dead
		}
		return storage.Delivered
	})
	// a retry is neither delivered nor dead
	j := &storage.Job{Event: storage.Event{Source: "shop", Destination: "crm"}}
	app.onResult(delivery.Report{Job: j, Result: storage.Retry, Attempt: &storage.Attempt{N: 1}})
	app.flushStats(t.Context(), st)

	s, err := app.Stats(t.Context(), time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		source, counter string
		want            int64
	}{
		{"shop", operator.DestinationCounter("delivered", "default"), 2},
		{"shop", operator.DestinationCounter("delivered", "crm"), 2},
		{"shop", operator.DestinationCounter("dead", "billing"), 2},
		{"shop", operator.DestinationCounter("dead", "default"), 0},
		{"shop", operator.DestinationCounter("delivered", "billing"), 0},
		{"shop", "delivered", 4},
		{"shop", "dead", 2},
		{"plain", operator.DestinationCounter("delivered", "default"), 1},
	} {
		if got := s.Sources[tc.source].Recent[tc.counter]; got != tc.want {
			t.Errorf("%s %s: last hour %d, want %d", tc.source, tc.counter, got, tc.want)
		}
		if got := s.Sources[tc.source].AllTime[tc.counter]; got != tc.want {
			t.Errorf("%s %s: all time %d, want %d", tc.source, tc.counter, got, tc.want)
		}
	}
}

// TestStatsDestinationsBounded: a source's destinations are counted apart
// up to maxDestinationsPerSource, the rest as otherType; each source, and
// the type breakdown, has its own bound.
func TestStatsDestinationsBounded(t *testing.T) {
	var b statsBuffer
	for i := range maxDestinationsPerSource + 3 {
		b.addDestination("src", "delivered", fmt.Sprintf("d%d", i), 1)
	}
	b.addDestination("src", "dead", "d0", 1)
	b.addDestination("other-src", "dead", "d999", 1)
	b.addType("src", "accepted", "t0", 1) // the types' bound is their own
	d := takeCounters(&b)
	for _, tc := range []struct {
		source, counter string
		want            int64
	}{
		{"src", operator.DestinationCounter("delivered", otherType), 3},
		{"src", operator.DestinationCounter("dead", "d0"), 1},
		{"src", operator.DestinationCounter("delivered", fmt.Sprintf("d%d", maxDestinationsPerSource-1)), 1},
		{"other-src", operator.DestinationCounter("dead", "d999"), 1},
		{"src", operator.TypeCounter("accepted", "t0"), 1},
	} {
		if got := d[tc.source][tc.counter]; got != tc.want {
			t.Errorf("%s %s = %d, want %d", tc.source, tc.counter, got, tc.want)
		}
	}
}

// TestRedriveByDestination: a bulk retry with a destination re-enqueues
// only that destination's entries; "default" is forward_to's; "" every
// destination's.
func TestRedriveByDestination(t *testing.T) {
	for _, tc := range []struct {
		dest string
		want []string // destinations re-enqueued
	}{
		{"billing", []string{"billing"}},
		{"default", []string{"default"}},
		{"", []string{"billing", "crm", "default"}},
		{"nowhere", nil},
	} {
		t.Run("destination "+tc.dest, func(t *testing.T) {
			app, st := shopWithThreeDestinations(t)
			jobs := finishAll(t, app, st, func(string) storage.Result { return storage.Dead })

			f := storage.DLQFilter{Source: "shop", Destination: tc.dest, Status: storage.DLQPending, Limit: 100}
			dry, err := app.RedriveDead(t.Context(), f, true)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, d := range tc.want {
				want = append(want, jobs[d].ID)
			}
			slices.Sort(want)
			got := slices.Sorted(slices.Values(dry.Retried))
			if dry.Matched != len(tc.want) || !slices.Equal(got, want) {
				t.Fatalf("dry run: %+v, want %v", dry, want)
			}
			res, err := app.RedriveDead(t.Context(), f, false)
			if err != nil || len(res.Retried) != len(tc.want) || len(res.Failed) != 0 {
				t.Fatalf("redrive: %+v %v", res, err)
			}
			for d, j := range jobs {
				e, err := st.DLQGet(t.Context(), j.ID)
				if err != nil {
					t.Fatal(err)
				}
				wantStatus := storage.DLQPending
				if slices.Contains(tc.want, d) {
					wantStatus = storage.DLQRetried
				}
				if e.Status != wantStatus {
					t.Errorf("%s's entry: %s, want %s", d, e.Status, wantStatus)
				}
			}
		})
	}
}

// TestDeliveredMeanwhile: a bulk retry skips an entry only when another
// event with its provider id went through to the entry's own destination.
func TestDeliveredMeanwhile(t *testing.T) {
	multi := func(id string, sts map[string]storage.Status) *storage.EventInfo {
		info := &storage.EventInfo{ID: id}
		for _, d := range slices.Sorted(maps.Keys(sts)) {
			info.Deliveries = append(info.Deliveries, storage.DeliveryInfo{Destination: d, ID: storage.DeliveryID(id, d), Status: sts[d]})
		}
		return info
	}
	for _, tc := range []struct {
		name  string
		info  *storage.EventInfo
		entry storage.DLQEntry
		want  bool
	}{
		{"the entry's own event", &storage.EventInfo{ID: "a", Status: storage.StatusDelivered},
			storage.DLQEntry{ID: "a"}, false},
		{"the entry's own event, another destination", multi("a", map[string]storage.Status{"billing": storage.StatusDelivered}),
			storage.DLQEntry{ID: "a~billing", Destination: "billing"}, false},
		{"resent, delivered to default", &storage.EventInfo{ID: "b", Status: storage.StatusDelivered},
			storage.DLQEntry{ID: "a"}, true},
		{"resent, still queued", &storage.EventInfo{ID: "b", Status: storage.StatusQueued},
			storage.DLQEntry{ID: "a"}, false},
		{"resent to default only, entry of billing", &storage.EventInfo{ID: "b", Status: storage.StatusDelivered},
			storage.DLQEntry{ID: "a~billing", Destination: "billing"}, false},
		{"resent, billing delivered", multi("b", map[string]storage.Status{"default": storage.StatusDead, "billing": storage.StatusDelivered}),
			storage.DLQEntry{ID: "a~billing", Destination: "billing"}, true},
		{"resent, billing dead though default delivered", multi("b", map[string]storage.Status{"default": storage.StatusDelivered, "billing": storage.StatusDead}),
			storage.DLQEntry{ID: "a~billing", Destination: "billing"}, false},
		{"resent, default delivered among several", multi("b", map[string]storage.Status{"default": storage.StatusDelivered, "crm": storage.StatusQueued}),
			storage.DLQEntry{ID: "a"}, true},
		{"resent without the entry's destination", multi("b", map[string]storage.Status{"crm": storage.StatusDelivered}),
			storage.DLQEntry{ID: "a~billing", Destination: "billing"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := deliveredMeanwhile(tc.info, &tc.entry); got != tc.want {
				t.Errorf("deliveredMeanwhile = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestReplayByDestination: a replay with a destination re-enqueues only
// the deliveries to it, each named with its destination.
func TestReplayByDestination(t *testing.T) {
	for _, tc := range []struct {
		dest string
		want []string
	}{
		{"billing", []string{"billing"}},
		{"default", []string{"default"}},
		{"", []string{"billing", "crm", "default"}},
	} {
		t.Run("destination "+tc.dest, func(t *testing.T) {
			app, st := shopWithThreeDestinations(t)
			jobs := finishAll(t, app, st, func(string) storage.Result { return storage.Delivered })
			res, err := app.ReplayDelivered(t.Context(), storage.ReplayFilter{Source: "shop", Destination: tc.dest}, false)
			if err != nil || len(res.Failed) != 0 {
				t.Fatalf("replay: %+v %v", res, err)
			}
			var got []string
			for _, ev := range res.Replayed {
				if ev.ID != jobs[ev.Destination].ID || ev.EventID != "e1" {
					t.Errorf("replayed %+v: not the delivery to %s (%s)", ev, ev.Destination, jobs[ev.Destination].ID)
				}
				got = append(got, ev.Destination)
			}
			if slices.Sort(got); !slices.Equal(got, tc.want) {
				t.Errorf("replayed %v, want %v", got, tc.want)
			}
			left, err := st.ListDelivered(t.Context(), storage.ReplayFilter{})
			if err != nil || len(left.Events) != 3-len(tc.want) {
				t.Errorf("%d deliveries left delivered (%v), want %d", len(left.Events), err, 3-len(tc.want))
			}
		})
	}
}

// shopWithThreeDestinations provisions an app (cleaned up with the test)
// whose store holds event e1 of source shop for default, billing and crm.
func shopWithThreeDestinations(t *testing.T) (*App, storage.Store) {
	t.Helper()
	app, err := provisionApp(t, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Cleanup() })
	st, _ := app.Store()
	if _, err := st.Enqueue(t.Context(), fanOutEvent("shop", "e1", "default", "billing", "crm"), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	return app, st
}
