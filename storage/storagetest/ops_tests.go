package storagetest

import (
	"maps"
	"reflect"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

func testCounts(t *testing.T, f Factory) {
	s := f.Open(t)
	wantCounts(t, s, storage.Counts{})
	if _, ok, err := s.NextDue(t.Context(), nil); err != nil || ok {
		t.Errorf("NextDue on an empty store: ok %v err %v", ok, err)
	}
	for range 5 {
		mustEnqueue(t, s, newEvent(t, "stripe", ""), time.Now().Add(time.Hour))
	}
	wantCounts(t, s, storage.Counts{Queued: 5})
	base := time.Now()
	jobs := lease(t, s, base, 2, time.Minute)
	wantCounts(t, s, storage.Counts{Queued: 3, InFlight: 2})
	finish(t, s, jobs[0], storage.Outcome{Result: storage.Delivered, Attempt: attempt(1, base, 200, "")})
	wantCounts(t, s, storage.Counts{Queued: 3, InFlight: 1})
	finish(t, s, jobs[1], storage.Outcome{Result: storage.Retry, Attempt: attempt(1, base, 500, ""), Due: base.Add(time.Second)})
	wantCounts(t, s, storage.Counts{Queued: 4})
	jobs = lease(t, s, base, 3, time.Minute)
	wantCounts(t, s, storage.Counts{Queued: 1, InFlight: 3})
	for _, j := range jobs {
		finish(t, s, j, storage.Outcome{Result: storage.Dead, Attempt: attempt(1, base, 400, ""), Error: "bad"})
	}
	wantCounts(t, s, storage.Counts{Queued: 1, Dead: 3})
	if err := s.DLQSetStatus(t.Context(), jobs[0].ID, storage.DLQInvestigating, "", time.Now()); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, s, storage.Counts{Queued: 1, Dead: 3})
	if err := s.DLQSetStatus(t.Context(), jobs[1].ID, storage.DLQResolved, "fixed", time.Now()); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, s, storage.Counts{Queued: 1, Dead: 2})
	if err := s.DLQRetry(t.Context(), jobs[2].ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, s, storage.Counts{Queued: 2, Dead: 1})
}

// testPaused: pausing is shared through the store and survives reopening.
func testPaused(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := t.Context()
	if p, err := s.Paused(ctx); err != nil || len(p) != 0 {
		t.Fatalf("Paused on a new store = %v, %v", p, err)
	}
	for _, src := range []string{"stripe", "github"} {
		if err := s.SetPaused(ctx, src, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetPaused(ctx, "github", false); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPaused(ctx, "never-paused", false); err != nil {
		t.Fatalf("resuming a source that is not paused: %v", err)
	}
	if f.Reopen != nil {
		s = f.Reopen(t, s)
	}
	if p, err := s.Paused(ctx); err != nil || !maps.Equal(p, map[string]bool{"stripe": true}) {
		t.Fatalf("Paused = %v, %v; want only stripe", p, err)
	}
}

// testQueueBySource counts queued and leased jobs per source.
func testQueueBySource(t *testing.T, f Factory) {
	s := f.Open(t)
	for _, src := range []string{"stripe", "stripe", "stripe", "github"} {
		mustEnqueue(t, s, newEvent(t, src, ""), time.Now().Add(time.Hour))
	}
	// lease one stripe job (the oldest is a stripe one)
	if jobs := lease(t, s, time.Now(), 1, time.Minute); len(jobs) != 1 || jobs[0].Source != "stripe" {
		t.Fatalf("leased %v", jobIDs(jobs))
	}
	got, err := s.QueueBySource(t.Context())
	want := map[string]storage.Counts{"stripe": {Queued: 2, InFlight: 1}, "github": {Queued: 1}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("QueueBySource = %v, %v; want %v", got, err, want)
	}
}

// testStats: counters add up per source in minute buckets and all-time.
func testStats(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := t.Context()
	now := time.Now()
	old := now.Add(-3 * time.Hour)
	for _, step := range []struct {
		at time.Time
		d  map[string]map[string]int64
	}{
		{old, map[string]map[string]int64{"stripe": {"accepted": 5, "dead": 1}}},
		{now.Add(-10 * time.Minute), map[string]map[string]int64{"stripe": {"accepted": 2}, "github": {"unauthorized": 3}}},
		{now, map[string]map[string]int64{"stripe": {"accepted": 1, "delivered": 3}}},
	} {
		if err := s.AddStats(ctx, step.at, step.d); err != nil {
			t.Fatal(err)
		}
	}
	recent, all, err := s.Stats(ctx, now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	wantRecent := map[string]map[string]int64{"stripe": {"accepted": 3, "delivered": 3}, "github": {"unauthorized": 3}}
	wantAll := map[string]map[string]int64{"stripe": {"accepted": 8, "dead": 1, "delivered": 3}, "github": {"unauthorized": 3}}
	if !reflect.DeepEqual(recent, wantRecent) {
		t.Errorf("last hour = %v, want %v", recent, wantRecent)
	}
	if !reflect.DeepEqual(all, wantAll) {
		t.Errorf("all time = %v, want %v", all, wantAll)
	}
}
