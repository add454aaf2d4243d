package storagetest

import (
	"reflect"
	"sync"
	"sync/atomic"
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

// testPaused: pauses of sources, destinations and tenants are set, changed,
// listed and resumed through the store and survive reopening.
func testPaused(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := t.Context()
	if p, err := s.Pauses(ctx); err != nil || len(p) != 0 {
		t.Fatalf("Pauses on a new store = %v, %v", p, err)
	}
	now := time.Now()
	stripe, _ := storage.NewPause("stripe", "", false, "upstream deploy", 0, now)
	github, _ := storage.NewPause("github", "", true, "", time.Hour, now)
	crm, _ := storage.NewPause("github", "crm", true, "crm down", 30*time.Minute, now)
	// tenants' pauses: one whose name holds '/' and '#', and one resumed
	shop, _ := storage.NewPause("github", "", false, "abuse", 0, now)
	shop.Tenant = "org/4#2"
	other, _ := storage.NewPause("github", "", true, "", 0, now)
	other.Tenant = "org-9"
	for _, p := range []storage.Pause{stripe, github, crm, shop, other} {
		if err := s.SetPause(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	// changed without resuming: mode, reason and end
	stripe2, _ := storage.NewPause("stripe", "", true, "held instead", 10*time.Minute, now.Add(time.Second))
	if err := s.SetPause(ctx, stripe2); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := s.Resume(ctx, "github"); err != nil || !ok || !reflect.DeepEqual(got, github) {
		t.Fatalf("Resume(github) = %+v, %v, %v; want %+v", got, ok, err, github)
	}
	if _, ok, err := s.Resume(ctx, "never-paused"); err != nil || ok {
		t.Fatalf("resuming a source that is not paused: %v, %v", ok, err)
	}
	if got, ok, err := s.Resume(ctx, storage.TenantPauseKey("github", "org-9")); err != nil || !ok || !reflect.DeepEqual(got, other) {
		t.Fatalf("Resume(tenant org-9) = %+v, %v, %v; want %+v", got, ok, err, other)
	}
	if f.Reopen != nil {
		s = f.Reopen(t, s)
	}
	got, err := s.Pauses(ctx)
	if want := []storage.Pause{shop, crm, stripe2}; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Pauses = %+v, %v; want %+v", got, err, want)
	}
	if got[0].Holds() || got[0].Key() != "github#org/4#2" || !got[1].Holds() || got[1].Mode() != storage.PauseHold || got[2].Expired(now) || !got[2].Expired(now.Add(time.Hour)) {
		t.Errorf("rules of %+v", got)
	}
}

// testPauseExpiry: an expired pause is removed by exactly one of the
// callers that saw it (compare-and-delete), across clients too; a pause
// changed meanwhile is not removed.
func testPauseExpiry(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := t.Context()
	seen, _ := storage.NewPause("stripe", "", true, "short", 10*time.Millisecond, time.Now())
	if err := s.SetPause(ctx, seen); err != nil {
		t.Fatal(err)
	}
	clients := []storage.Store{s, s}
	if f.Second != nil {
		clients[1] = f.Second(t, s)
	}
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := clients[i%2].ExpirePause(ctx, seen)
			if err != nil {
				t.Error(err)
			}
			if ok {
				wins.Add(1)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d callers removed the expired pause, want exactly 1", wins.Load())
	}
	if p, err := s.Pauses(ctx); err != nil || len(p) != 0 {
		t.Fatalf("Pauses after expiry = %v, %v", p, err)
	}
	// changed after it was read: the old record no longer matches
	changed, _ := storage.NewPause("stripe", "", false, "longer", time.Hour, time.Now().Add(time.Millisecond))
	if err := s.SetPause(ctx, changed); err != nil {
		t.Fatal(err)
	}
	if ok, err := clients[1].ExpirePause(ctx, seen); err != nil || ok {
		t.Fatalf("ExpirePause of a changed pause = %v, %v; want false", ok, err)
	}
	if p, err := s.Pauses(ctx); err != nil || len(p) != 1 || p[0] != changed {
		t.Fatalf("Pauses = %+v, %v; want the changed pause", p, err)
	}
}

// testPauseLegacy: a pause written by earlier versions (Factory.Legacy)
// reads as a refuse-mode pause of the source with no reason and no end,
// and can be changed and resumed.
func testPauseLegacy(t *testing.T, f Factory) {
	if f.Legacy == nil {
		t.Skip("Factory.Legacy not set")
	}
	s := f.Open(t)
	ctx := t.Context()
	f.Legacy(t, s, "stripe")
	f.Legacy(t, s, "github")
	got, err := s.Pauses(ctx)
	if want := []storage.Pause{{Source: "github"}, {Source: "stripe"}}; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("legacy Pauses = %+v, %v; want %+v", got, err, want)
	}
	if got[0].Holds() || got[0].Expired(time.Now()) || got[0].RetryAfter(time.Now()) != 60 {
		t.Errorf("a legacy pause must refuse with no end: %+v", got[0])
	}
	if p, ok, err := s.Resume(ctx, "github"); err != nil || !ok || p != (storage.Pause{Source: "github"}) {
		t.Fatalf("Resume of a legacy pause = %+v, %v, %v", p, ok, err)
	}
	held, _ := storage.NewPause("stripe", "", true, "now held", 0, time.Now())
	if err := s.SetPause(ctx, held); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Pauses(ctx); err != nil || len(got) != 1 || got[0] != held {
		t.Fatalf("Pauses after changing a legacy pause = %+v, %v", got, err)
	}
}

// testQueueBySource counts queued and leased jobs per source.
func testQueueBySource(t *testing.T, f Factory) {
	s := f.Open(t)
	for _, src := range []string{"stripe", "stripe", "stripe", "github"} {
		mustEnqueue(t, s, newEvent(t, src, ""), time.Now().Add(time.Hour))
		time.Sleep(2 * time.Millisecond) // due times apart at a backend's millisecond resolution
	}
	// lease one stripe job (the oldest is a stripe one; within one
	// millisecond, lanes tie by name and github's would go first)
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
		if err := s.AddStats(ctx, storage.StatsBatch{At: step.at, Counters: step.d}); err != nil {
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
