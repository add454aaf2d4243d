package storagetest

import (
	"slices"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

// The bulk listings' bounds (storage/listindex.go): a page of DLQList or
// ListDelivered examines at most its ScanBudget index entries, a narrow
// filter over a large index answers a short page with a cursor instead of
// reading it all, time bounds start the walk where they say, and paging
// while entries arrive lists every entry once.

// finishMany stores n events of source and finishes each with result
// (one lease for all, finished in turn, so that several finish within the
// backend's time resolution): their ids, in finish order.
func finishMany(t testing.TB, s storage.Store, source string, n int, result storage.Result) []string {
	t.Helper()
	want := map[string]bool{}
	for range n {
		ev := newEvent(t, source, "")
		mustEnqueue(t, s, ev, time.Now().Add(time.Hour))
		want[ev.ID] = true
	}
	var ids []string
	for len(ids) < n {
		jobs := lease(t, s, time.Now(), 2*n, time.Minute)
		if len(jobs) == 0 {
			t.Fatalf("leased %d of %d jobs", len(ids), n)
		}
		for _, j := range jobs {
			if !want[j.ID] {
				t.Fatalf("leased %s, not one of the %d stored", j.ID, n)
			}
			out := storage.Outcome{Result: result, Attempt: attempt(1, time.Now(), 200, "")}
			if result == storage.Dead {
				out = storage.Outcome{Result: result, Attempt: attempt(1, time.Now(), 500, "boom"), Error: "boom"}
			}
			finish(t, s, j, out)
			ids = append(ids, j.ID)
		}
	}
	return ids
}

// dlqIDs is the ids listAll lists under f, page after page.
func dlqIDs(t testing.TB, s storage.Store, f storage.DLQFilter) []string {
	t.Helper()
	var ids []string
	for _, p := range listAll(t, s, f) {
		for _, e := range p.Entries {
			ids = append(ids, e.ID)
		}
	}
	return ids
}

func testDLQListBounded(t *testing.T, f Factory) {
	s := f.Open(t)
	rare := finishMany(t, s, "rare", 1, storage.Dead)
	time.Sleep(2 * time.Millisecond) // past the backend's time resolution
	before := time.Now()
	noise := finishMany(t, s, "noise", 150, storage.Dead)

	// a narrow filter: the first page examines its budget (40 entries for
	// a limit of 2), not the 150 entries in front of the one match
	narrow := storage.DLQFilter{Source: "rare", Limit: 2}
	p, err := s.DLQList(t.Context(), narrow)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Entries) != 0 || p.NextCursor == "" {
		t.Errorf("first page of a narrow filter: %d entries, cursor %q; want none and a cursor (bounded work)", len(p.Entries), p.NextCursor)
	}
	if got := dlqIDs(t, s, narrow); !slices.Equal(got, rare) {
		t.Errorf("paging the narrow filter to its end: %v, want %v", got, rare)
	}
	// the same filter with until: the walk starts there
	entry := dlqGet(t, s, rare[0])
	p, err = s.DLQList(t.Context(), storage.DLQFilter{Source: "rare", Until: entry.CreatedAt, Limit: 2})
	if err != nil || len(p.Entries) != 1 || p.Entries[0].ID != rare[0] {
		t.Errorf("DLQList(until its creation) = %+v, %v; want the entry on the first page", p, err)
	}
	// since: the walk stops there (a cursor only while the budget, not
	// the range, ended the page)
	if got := dlqIDs(t, s, storage.DLQFilter{Source: "rare", Since: before, Limit: 2}); len(got) != 0 {
		t.Errorf("DLQList(since after it) = %v, want none", got)
	}
	// every entry once, newest first, whatever the page size and the
	// entries finished within one clock tick
	all := slices.Concat(rare, noise)
	slices.Reverse(all)
	for _, limit := range []int{1, 7, 50, 1000} {
		if got := dlqIDs(t, s, storage.DLQFilter{Limit: limit}); !slices.Equal(got, all) {
			t.Errorf("limit %d: listed %d entries, want the %d newest first", limit, len(got), len(all))
		}
	}
	// a filter on the status, which changes after the entry is written
	for _, id := range noise[:10] {
		if err := s.DLQSetStatus(t.Context(), id, storage.DLQInvestigating, "", time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	want := slices.Clone(noise[:10])
	slices.Reverse(want)
	if got := dlqIDs(t, s, storage.DLQFilter{Status: storage.DLQInvestigating, Limit: 3}); !slices.Equal(got, want) {
		t.Errorf("status investigating: %v, want %v", got, want)
	}
}

func testDLQListArrivals(t *testing.T, f Factory) {
	s := f.Open(t)
	old := finishMany(t, s, "src", 30, storage.Dead)
	slices.Reverse(old) // newest first
	f0 := storage.DLQFilter{Limit: 4}
	var got []string
	arrived := 0
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatal("no end")
		}
		p, err := s.DLQList(t.Context(), f0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Entries {
			got = append(got, e.ID)
		}
		if p.NextCursor == "" {
			break
		}
		f0.Cursor = p.NextCursor
		// entries arrive between the pages
		arrived += len(finishMany(t, s, "src", 2, storage.Dead))
	}
	if !slices.Equal(got, old) {
		t.Errorf("paged %v\nwant every entry there before paging once, newest first: %v", got, old)
	}
	if arrived == 0 {
		t.Fatal("nothing arrived while paging")
	}
}

func testReplayListBounded(t *testing.T, f Factory) {
	s := f.Open(t)
	noise := finishMany(t, s, "noise", 150, storage.Delivered)
	time.Sleep(2 * time.Millisecond) // past the backend's time resolution
	before := time.Now()
	// and past it again: a store keeping finish times to the millisecond
	// starts a since within a millisecond at the next one
	time.Sleep(2 * time.Millisecond)
	rare := finishMany(t, s, "rare", 1, storage.Delivered)

	narrow := storage.ReplayFilter{Source: "rare", Limit: 2}
	p, err := s.ListDelivered(t.Context(), narrow)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Events) != 0 || p.NextCursor == "" {
		t.Errorf("first page of a narrow filter: %d events, cursor %q; want none and a cursor (bounded work)", len(p.Events), p.NextCursor)
	}
	if got := listDelivered(t, s, narrow); !slices.Equal(got, rare) {
		t.Errorf("paging the narrow filter to its end: %v, want %v", got, rare)
	}
	p, err = s.ListDelivered(t.Context(), storage.ReplayFilter{Source: "rare", Since: before, Limit: 2})
	if err != nil || len(p.Events) != 1 || p.Events[0].ID != rare[0] {
		t.Errorf("ListDelivered(since just before it) = %+v, %v; want it on the first page", p, err)
	}
	all := slices.Concat(noise, rare)
	for _, limit := range []int{1, 7, 1000} {
		if got := listDelivered(t, s, storage.ReplayFilter{Limit: limit}); !slices.Equal(got[:min(len(got), limit)], all[:min(len(all), limit)]) {
			t.Errorf("limit %d: listed %v..., want the oldest first", limit, got[:min(len(got), 3)])
		}
	}
	if _, err := s.ListDelivered(t.Context(), storage.ReplayFilter{Cursor: "%%% not a cursor"}); err == nil {
		t.Error("ListDelivered with a bad cursor: no error")
	}
}

func testReplayListArrivals(t *testing.T, f Factory) {
	s := f.Open(t)
	old := finishMany(t, s, "src", 30, storage.Delivered)
	var got, arrived []string
	flt := storage.ReplayFilter{Limit: 4}
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatal("no end")
		}
		p, err := s.ListDelivered(t.Context(), flt)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Events {
			got = append(got, e.ID)
		}
		if p.NextCursor == "" {
			break
		}
		flt.Cursor = p.NextCursor
		if pages < 3 { // deliveries finish between the first pages
			arrived = append(arrived, finishMany(t, s, "src", 2, storage.Delivered)...)
		}
	}
	// oldest first: what finished meanwhile comes after, each once
	if want := slices.Concat(old, arrived); !slices.Equal(got, want) {
		t.Errorf("paged %d events %v\nwant %d: %v", len(got), got, len(want), want)
	}
}
