package storagetest

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

// testListEvents: the event browser lists every stored event (queued, in
// flight, delivered, dead; fan-out ones once, with each delivery), newest
// first, as Lookup reports them; each filter selects what
// EventFilter.Matches says; pages do not overlap; a narrow filter stops
// after the scan budget with a cursor; erased events are not listed, and
// an event past retention is listed while its DLQ entry is kept.
func testListEvents(t *testing.T, f Factory) {
	s := f.Open(t)
	const n = 24
	evs := make([]*storage.Event, n)
	for i := range evs {
		src := "stripe"
		if i%3 == 0 {
			src = "github"
		}
		if i == 5 || i == 11 {
			evs[i] = fanOutEvent(t, src, "")
		} else {
			evs[i] = newEvent(t, src, "")
		}
		mustEnqueue(t, s, evs[i], time.Now().Add(time.Hour))
	}
	jobs := lease(t, s, time.Now(), 1000, time.Minute)
	// by plan: i%4 == 0 delivered, 1 dead, 2 released (queued), 3 left
	// in flight; a fan-out event's deliveries: default delivered, billing
	// dead, crm queued
	for _, j := range jobs {
		i := slices.IndexFunc(evs, func(ev *storage.Event) bool { return ev.ID == storage.EventIDOfDelivery(j.ID) })
		plan := i % 4
		if len(evs[i].Deliveries) > 0 {
			plan = slices.Index(fanOutDestinations, storage.DestinationOf(&j.Event))
		}
		switch plan {
		case 0:
			finish(t, s, j, storage.Outcome{Result: storage.Delivered, Attempt: attempt(1, time.Now(), 200, "")})
		case 1:
			finish(t, s, j, storage.Outcome{Result: storage.Dead, Attempt: attempt(1, time.Now(), 500, ""), Error: "HTTP 500"})
		case 2:
			finish(t, s, j, storage.Outcome{Result: storage.Release})
		}
	}
	erased := evs[7]
	erase(t, s, erased.Source, erased.EventID)

	// the model: what Lookup reports of each event left, newest first
	// (by provider id, or once claims expired by internal id)
	model := func(byID bool) []*storage.EventInfo {
		var out []*storage.EventInfo
		for i := n - 1; i >= 0; i-- {
			id := evs[i].EventID
			if byID {
				id = evs[i].ID
			}
			info, err := s.Lookup(t.Context(), evs[i].Source, id)
			if errors.Is(err, storage.ErrNotFound) {
				continue
			}
			if err != nil {
				t.Fatalf("Lookup: %v", err)
			}
			out = append(out, info)
		}
		return out
	}
	newest := model(false)
	if len(newest) != n-1 {
		t.Fatalf("%d events found by Lookup, want %d", len(newest), n-1)
	}
	statuses := map[storage.Status]int{}
	for _, info := range newest {
		statuses[info.Status]++
	}
	for _, st := range []storage.Status{storage.StatusQueued, storage.StatusInFlight, storage.StatusDelivered, storage.StatusDead} {
		if statuses[st] == 0 {
			t.Fatalf("no event is %s: %v", st, statuses)
		}
	}
	oldest := newest[len(newest)-1]

	check := func(t *testing.T, filter storage.EventFilter, newest []*storage.EventInfo) {
		t.Helper()
		var want []string
		for _, info := range newest {
			if filter.Matches(info) {
				want = append(want, info.ID)
			}
		}
		var got []string
		for _, p := range ListAllEvents(t, s, filter) {
			for _, info := range p.Events {
				got = append(got, info.ID)
				i := slices.IndexFunc(newest, func(m *storage.EventInfo) bool { return m.ID == info.ID })
				if i < 0 {
					t.Errorf("listed event %s is not stored", info.ID)
					continue
				}
				checkListed(t, &info, newest[i])
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("listed %d events %v\nwant %d %v", len(got), got, len(want), want)
		}
	}
	tests := []struct {
		name   string
		filter storage.EventFilter
	}{
		{"all", storage.EventFilter{}},
		{"limit 1", storage.EventFilter{Limit: 1}},
		{"limit 5", storage.EventFilter{Limit: 5}},
		{"source", storage.EventFilter{Source: "github", Limit: 3}},
		{"type", storage.EventFilter{Type: "stripe.type_1", Limit: 2}},
		{"status queued", storage.EventFilter{Status: storage.StatusQueued}},
		{"status in flight", storage.EventFilter{Status: storage.StatusInFlight, Limit: 2}},
		{"status delivered", storage.EventFilter{Status: storage.StatusDelivered}},
		{"status dead", storage.EventFilter{Status: storage.StatusDead, Limit: 4}},
		{"destination", storage.EventFilter{Destination: "billing"}},
		{"destination default", storage.EventFilter{Destination: "default", Limit: 6}},
		{"destination and status", storage.EventFilter{Destination: "crm", Status: storage.StatusQueued}},
		{"destination delivered", storage.EventFilter{Destination: "default", Status: storage.StatusDelivered}},
		{"since", storage.EventFilter{Since: newest[10].ReceivedAt, Limit: 4}},
		{"until", storage.EventFilter{Until: newest[10].ReceivedAt, Limit: 4}},
		{"since and until", storage.EventFilter{Since: newest[15].ReceivedAt, Until: newest[5].ReceivedAt}},
		{"exact id", storage.EventFilter{ID: newest[3].ID}},
		{"id prefix", storage.EventFilter{ID: newest[3].ID[:30]}},
		{"provider event id", storage.EventFilter{ID: newest[4].EventID}},
		{"provider id prefix", storage.EventFilter{ID: "evt_", Limit: 7}},
		{"erased", storage.EventFilter{ID: erased.ID}},
		{"no match", storage.EventFilter{Source: "nobody"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { check(t, tc.filter, newest) })
	}

	t.Run("scan budget", func(t *testing.T) {
		// the oldest event alone matches: the first page gives up after
		// its budget (20 events examined) with a cursor, the next finds it
		filter := storage.EventFilter{ID: oldest.ID, Limit: 1}
		p, err := s.ListEvents(t.Context(), filter)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Events) != 0 || p.NextCursor == "" {
			t.Fatalf("first page: %d events, cursor %q; want none and a cursor (budget %d < %d events)",
				len(p.Events), p.NextCursor, filter.ScanBudget(), len(newest))
		}
		check(t, filter, newest)
	})

	t.Run("invalid cursor", func(t *testing.T) {
		for _, c := range []string{"%%% not a cursor %%%", "="} {
			if _, err := s.ListEvents(t.Context(), storage.EventFilter{Cursor: c}); !errors.Is(err, storage.ErrInvalidCursor) {
				t.Errorf("cursor %q: err = %v, want storage.ErrInvalidCursor", c, err)
			}
		}
	})

	t.Run("after retention", func(t *testing.T) {
		// finished jobs go; DLQ entries (kept) still name their events
		if _, err := s.Cleanup(t.Context(), time.Now().Add(time.Hour), time.Minute, 0); err != nil {
			t.Fatal(err)
		}
		left := model(true)
		dead := 0
		for _, info := range left {
			if info.Status == storage.StatusDead {
				dead++
			}
		}
		if dead == 0 || len(left) >= len(newest) {
			t.Fatalf("after Cleanup: %d events left, %d dead; want fewer than %d, some dead", len(left), dead, len(newest))
		}
		check(t, storage.EventFilter{}, left)
		check(t, storage.EventFilter{Status: storage.StatusDead, Limit: 2}, left)
	})
}

// checkListed compares what ListEvents reports of an event with what
// Lookup does.
func checkListed(t testing.TB, got, want *storage.EventInfo) {
	t.Helper()
	if got.ID != want.ID || got.EventID != want.EventID || got.Source != want.Source || got.EventType != want.EventType ||
		got.Status != want.Status || !got.ReceivedAt.Equal(want.ReceivedAt) || len(got.Deliveries) != len(want.Deliveries) {
		t.Errorf("listed %+v\nLookup %+v", *got, *want)
		return
	}
	attemptsEqual(t, "listed "+got.ID, got.Attempts, want.Attempts)
	for i, d := range got.Deliveries {
		w := want.Deliveries[i]
		if d.Destination != w.Destination || d.ID != w.ID || d.Status != w.Status {
			t.Errorf("listed %s delivery %+v, Lookup %+v", got.ID, d, w)
		}
	}
}

// ListAllEvents pages through an event listing from f on and checks that
// pages hold at most their limit, no event is listed twice and each
// cursor moves on. A backend's own tests use it too.
func ListAllEvents(t testing.TB, s storage.Store, f storage.EventFilter) []storage.EventPage {
	t.Helper()
	var pages []storage.EventPage
	seen := map[string]bool{}
	for {
		if len(pages) > 1000 {
			t.Fatal("ListEvents pagination does not end")
		}
		p, err := s.ListEvents(t.Context(), f)
		if err != nil {
			t.Fatalf("ListEvents(%+v): %v", f, err)
		}
		if len(p.Events) > f.EffectiveLimit() {
			t.Fatalf("ListEvents returned %d events, limit %d", len(p.Events), f.EffectiveLimit())
		}
		for _, info := range p.Events {
			if seen[info.ID] {
				t.Fatalf("event %s listed twice", info.ID)
			}
			seen[info.ID] = true
		}
		pages = append(pages, p)
		if p.NextCursor == "" {
			return pages
		}
		if p.NextCursor == f.Cursor {
			t.Fatalf("ListEvents returned the cursor it was given: %q", f.Cursor)
		}
		f.Cursor = p.NextCursor
	}
}

// billingDead stores an event to default, billing and crm, and finishes
// its deliveries: billing's dead (a DLQ entry), the others delivered.
func billingDead(t *testing.T, s storage.Store) *storage.Event {
	t.Helper()
	ev := fanOutEvent(t, "stripe", "")
	mustEnqueue(t, s, ev, time.Now().Add(time.Hour))
	for _, j := range lease(t, s, time.Now(), 10, time.Minute) {
		if storage.DestinationOf(&j.Event) == "billing" {
			finish(t, s, j, storage.Outcome{Result: storage.Dead, Attempt: attempt(1, time.Now(), 500, ""), Error: "HTTP 500"})
		} else {
			finish(t, s, j, storage.Outcome{Result: storage.Delivered, Attempt: attempt(1, time.Now(), 200, "")})
		}
	}
	return ev
}

// listedIDs are the ids of every event s lists.
func listedIDs(t *testing.T, s storage.Store) []string {
	t.Helper()
	var ids []string
	for _, page := range ListAllEvents(t, s, storage.EventFilter{}) {
		for _, info := range page.Events {
			ids = append(ids, info.ID)
		}
	}
	return ids
}

// cleanup runs s's Cleanup at now.
func cleanup(t *testing.T, s storage.Store, now time.Time, retention, dlqRetention time.Duration) {
	t.Helper()
	if _, err := s.Cleanup(t.Context(), now, retention, dlqRetention); err != nil {
		t.Fatal(err)
	}
}

// wantDelivery checks the status Lookup reports of ev's delivery to
// destination d.
func wantDelivery(t *testing.T, s storage.Store, ev *storage.Event, d string, want storage.Status, when string) {
	t.Helper()
	info, err := s.Lookup(t.Context(), ev.Source, ev.ID)
	if err != nil {
		t.Errorf("Lookup %s: %v", when, err)
		return
	}
	if st, ok := storage.DeliveryStatus(info, d); !ok || st != want {
		t.Errorf("Lookup %s: %s's delivery %v (%v), want %s", when, d, st, ok, want)
	}
}

// wantGone checks that ev is neither listed nor found by Lookup.
func wantGone(t *testing.T, s storage.Store, ev *storage.Event, when string) {
	t.Helper()
	if got := listedIDs(t, s); slices.Contains(got, ev.ID) {
		t.Errorf("%s: listed %v", when, got)
	}
	if _, err := s.Lookup(t.Context(), ev.Source, ev.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Lookup %s: %v, want ErrNotFound", when, err)
	}
}

// testListedWhileEntryKept: an event whose deliveries all finished, one of
// them (to a named destination) dead, is listed and found by Lookup after
// its jobs' retention, with that delivery's DLQ entry, until the entry's
// own retention.
func testListedWhileEntryKept(t *testing.T, f Factory) {
	s := f.Open(t)
	ev := billingDead(t, s)
	cleanup(t, s, time.Now().Add(time.Hour), time.Minute, 2*time.Hour)
	if got := listedIDs(t, s); !slices.Equal(got, []string{ev.ID}) {
		t.Errorf("past its jobs' retention, with billing's DLQ entry kept: listed %v, want [%s]", got, ev.ID)
	}
	wantDelivery(t, s, ev, "billing", storage.StatusDead, "past its jobs' retention, with billing's DLQ entry kept")
	cleanup(t, s, time.Now().Add(4*time.Hour), time.Minute, 2*time.Hour)
	wantGone(t, s, ev, "past its DLQ entry's retention")
}

// testRetriedPastRetention: a DLQ entry retried after its event's jobs
// went with retention is delivered with the event's body, and the event
// is listed and found with the new outcome; the retried job's retention,
// then the entry's, take the rest of it.
func testRetriedPastRetention(t *testing.T, f Factory) {
	s := f.Open(t)
	ev := billingDead(t, s)
	cleanup(t, s, time.Now().Add(time.Hour), time.Minute, 24*time.Hour)
	billing := storage.DeliveryID(ev.ID, "billing")
	if err := s.DLQRetry(t.Context(), billing, time.Now()); err != nil {
		t.Fatalf("DLQRetry past its jobs' retention: %v", err)
	}
	jobs := lease(t, s, time.Now(), 10, time.Minute)
	if len(jobs) != 1 || jobs[0].ID != billing || !bytes.Equal(jobs[0].Body, ev.Body) {
		t.Fatalf("leased %d jobs %v, want billing's with the event's body", len(jobs), jobs)
	}
	finish(t, s, jobs[0], storage.Outcome{Result: storage.Delivered, Attempt: attempt(2, time.Now(), 200, "")})
	if got := listedIDs(t, s); !slices.Contains(got, ev.ID) {
		t.Errorf("retried and delivered: listed %v, want %s", got, ev.ID)
	}
	wantDelivery(t, s, ev, "billing", storage.StatusDelivered, "retried and delivered")
	cleanup(t, s, time.Now().Add(2*time.Hour), time.Minute, 24*time.Hour)
	if got := listedIDs(t, s); !slices.Contains(got, ev.ID) {
		t.Errorf("past the retried job's retention, its entry kept: listed %v, want %s", got, ev.ID)
	}
	cleanup(t, s, time.Now().Add(48*time.Hour), time.Minute, 24*time.Hour)
	wantGone(t, s, ev, "past the entry's retention")
}

// testDLQRetentionShorter: with dlq_retention shorter than retention, an
// event whose dead delivery's entry went is listed and found from its
// jobs until their retention.
func testDLQRetentionShorter(t *testing.T, f Factory) {
	s := f.Open(t)
	ev := billingDead(t, s)
	cleanup(t, s, time.Now().Add(2*time.Hour), 24*time.Hour, time.Hour)
	if page, err := s.DLQList(t.Context(), storage.DLQFilter{}); err != nil || len(page.Entries) != 0 {
		t.Errorf("past dlq_retention: DLQ %+v, %v; want empty", page.Entries, err)
	}
	if got := listedIDs(t, s); !slices.Equal(got, []string{ev.ID}) {
		t.Errorf("past dlq_retention, its jobs kept: listed %v, want [%s]", got, ev.ID)
	}
	wantDelivery(t, s, ev, "billing", storage.StatusDead, "past dlq_retention, its jobs kept")
	wantDelivery(t, s, ev, "crm", storage.StatusDelivered, "past dlq_retention, its jobs kept")
	cleanup(t, s, time.Now().Add(48*time.Hour), 24*time.Hour, time.Hour)
	wantGone(t, s, ev, "past retention")
}

// testProviderIDTakenAgain: a delivered event whose claim ended, and
// whose provider's id a later event then took, goes with retention
// without taking the id from the later one: Lookup by the id finds the
// later event, queued, while its claim holds, and once the first event
// went with retention and the later one's claim ended too (the id's
// claim or index is then the later event's alone to hold).
func testProviderIDTakenAgain(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := t.Context()
	first := newEvent(t, "stripe", "")
	mustEnqueue(t, s, first, time.Now().Add(time.Minute))
	for _, j := range lease(t, s, time.Now(), 10, time.Minute) {
		finish(t, s, j, storage.Outcome{Result: storage.Delivered, Attempt: attempt(1, time.Now(), 200, "")})
	}
	cleanup(t, s, time.Now().Add(2*time.Minute), 24*time.Hour, 24*time.Hour) // the claim ends, the job stays
	later := newEvent(t, "stripe", first.EventID)
	mustEnqueue(t, s, later, time.Now().Add(time.Hour))
	found := func(when string) {
		t.Helper()
		info, err := s.Lookup(ctx, later.Source, later.EventID)
		if err != nil || info.ID != later.ID {
			t.Fatalf("Lookup by provider id %s: %+v, %v; want %s", when, info, err, later.ID)
		}
		if st, ok := storage.DeliveryStatus(info, storage.DefaultDestination); !ok || st != storage.StatusQueued {
			t.Errorf("Lookup by provider id %s: the later event's delivery %v (%v), want queued", when, st, ok)
		}
	}
	found("while the later event's claim holds")
	cleanup(t, s, time.Now().Add(25*time.Hour), 24*time.Hour, 24*time.Hour)
	wantGone(t, s, first, "the first event past retention")
	found("once the first event it named went with retention and the later one's claim ended")
}

// testFoundByProviderIDWhileEntryKept: an event whose claim ended and
// whose jobs went with retention is still found by its provider's id
// while a DLQ entry of one of its deliveries is kept (a named
// destination's, or the default one's); a new event with the same id,
// accepted once the claim ended, is then the one found, and the old
// entries' retention does not take it from the lookup.
func testFoundByProviderIDWhileEntryKept(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := t.Context()
	named := billingDead(t, s)
	plain := newEvent(t, "stripe", "")
	mustEnqueue(t, s, plain, time.Now().Add(time.Hour))
	for _, j := range lease(t, s, time.Now(), 10, time.Minute) {
		finish(t, s, j, storage.Outcome{Result: storage.Dead, Attempt: attempt(1, time.Now(), 500, ""), Error: "HTTP 500"})
	}
	cleanup(t, s, time.Now().Add(2*time.Hour), time.Minute, 24*time.Hour)
	for _, tc := range []struct {
		ev *storage.Event
		d  string
	}{{named, "billing"}, {plain, storage.DefaultDestination}} {
		info, err := s.Lookup(ctx, tc.ev.Source, tc.ev.EventID)
		if err != nil || info.ID != tc.ev.ID {
			t.Errorf("Lookup by provider id %s past its claim and its jobs' retention, its entry kept: %+v, %v", tc.ev.EventID, info, err)
			continue
		}
		if st, ok := storage.DeliveryStatus(info, tc.d); !ok || st != storage.StatusDead {
			t.Errorf("Lookup by provider id %s: %s's delivery %v (%v), want dead", tc.ev.EventID, tc.d, st, ok)
		}
	}
	again := newEvent(t, "stripe", plain.EventID)
	mustEnqueue(t, s, again, time.Now().Add(time.Hour))
	if info, err := s.Lookup(ctx, again.Source, again.EventID); err != nil || info.ID != again.ID {
		t.Errorf("Lookup by provider id of the event that took it again: %+v, %v; want %s", info, err, again.ID)
	}
	cleanup(t, s, time.Now().Add(48*time.Hour), time.Minute, 24*time.Hour)
	if _, err := s.Lookup(ctx, named.Source, named.EventID); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Lookup by provider id past its entry's retention: %v, want ErrNotFound", err)
	}
	if info, err := s.Lookup(ctx, again.Source, again.EventID); err != nil || info.ID != again.ID {
		t.Errorf("Lookup by provider id of the event that took it again, past the old entry's retention: %+v, %v; want %s", info, err, again.ID)
	}
}
