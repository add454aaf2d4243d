package storagetest

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

func testDedupeConcurrent(t *testing.T, f Factory) {
	s := f.Open(t)
	const n = 100
	evs := make([]*storage.Event, n)
	for i := range evs {
		evs[i] = newEvent(t, "stripe", "evt_race")
	}
	until := time.Now().Add(time.Hour)
	results := make([]storage.EnqueueResult, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range evs {
		wg.Go(func() {
			<-start
			results[i], errs[i] = s.Enqueue(t.Context(), evs[i], until)
		})
	}
	close(start)
	wg.Wait()

	winner := -1
	for i, r := range results {
		if errs[i] != nil {
			t.Fatalf("Enqueue %d: %v", i, errs[i])
		}
		if r.Duplicate {
			continue
		}
		if winner >= 0 {
			t.Fatalf("two non-duplicate results: %s and %s", evs[winner].ID, evs[i].ID)
		}
		winner = i
		if r.ID != evs[i].ID || r.Status != storage.StatusQueued {
			t.Errorf("winner result = %+v, want ID %s status queued", r, evs[i].ID)
		}
	}
	if winner < 0 {
		t.Fatal("every concurrent Enqueue was a duplicate")
	}
	for i, r := range results {
		if i != winner && (r.ID != evs[winner].ID || r.Status != storage.StatusQueued) {
			t.Errorf("duplicate %d = %+v, want ID %s status queued", i, r, evs[winner].ID)
		}
	}
	jobs := lease(t, s, time.Now(), 2*n, time.Minute)
	if len(jobs) != 1 {
		t.Fatalf("Lease returned %d jobs, want exactly 1", len(jobs))
	}
	checkEvent(t, "leased job", jobs[0].Event, *evs[winner])
	wantCounts(t, s, storage.Counts{InFlight: 1})
}

func testDedupeScope(t *testing.T, f Factory) {
	type enq struct {
		source, eventID string
		dedupe          bool
		dupOf           int // index of the earlier event it duplicates, -1: none
	}
	tests := []struct {
		name string
		enqs []enq
	}{
		{"same event id in different sources", []enq{
			{"stripe", "evt_1", true, -1},
			{"github", "evt_1", true, -1},
			{"stripe", "evt_1", true, 0},
			{"github", "evt_1", true, 1},
		}},
		{"dedupe disabled never collides", []enq{
			{"stripe", "evt_1", false, -1},
			{"stripe", "evt_1", false, -1},
			{"stripe", "evt_1", false, -1},
		}},
		{"dedupe disabled takes no claim", []enq{
			{"stripe", "evt_1", false, -1},
			{"stripe", "evt_1", true, -1},
			{"stripe", "evt_1", false, -1},
			{"stripe", "evt_1", true, 1},
		}},
		{"event id differing in case or source prefix", []enq{
			{"stripe", "evt_1", true, -1},
			{"stripe", "EVT_1", true, -1},
			{"stripe2", "evt_1", true, -1},
			{"strip", "eevt_1", true, -1},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := f.Open(t)
			var stored []string
			evs := make([]*storage.Event, len(tc.enqs))
			for i, e := range tc.enqs {
				evs[i] = newEvent(t, e.source, e.eventID)
				evs[i].Dedupe = e.dedupe
				res := enqueue(t, s, evs[i], time.Now().Add(time.Hour))
				switch {
				case e.dupOf < 0 && (res.Duplicate || res.ID != evs[i].ID):
					t.Errorf("enqueue %d (%s/%s dedupe=%v) = %+v, want stored as %s", i, e.source, e.eventID, e.dedupe, res, evs[i].ID)
				case e.dupOf >= 0 && (!res.Duplicate || res.ID != evs[e.dupOf].ID):
					t.Errorf("enqueue %d (%s/%s) = %+v, want duplicate of %s", i, e.source, e.eventID, res, evs[e.dupOf].ID)
				}
				if e.dupOf < 0 {
					stored = append(stored, evs[i].ID)
				}
			}
			jobs := lease(t, s, time.Now(), 100, time.Minute)
			if got := jobIDs(jobs); !sameSet(got, stored) {
				t.Errorf("leased %v, want %v", got, stored)
			}
		})
	}
}

func testDedupeWindow(t *testing.T, f Factory) {
	s := f.Open(t)
	// long enough for two enqueues on a loaded machine (a race build on a
	// Cluster took more than 50 ms)
	until := time.Now().Add(400 * time.Millisecond)
	first := newEvent(t, "stripe", "evt_window")
	mustEnqueue(t, s, first, until)
	dup := newEvent(t, "stripe", "evt_window")
	res := enqueue(t, s, dup, until)
	if !res.Duplicate || res.ID != first.ID {
		t.Fatalf("enqueue within the window = %+v, want duplicate of %s", res, first.ID)
	}
	// a duplicate tells when its claim ends (the L1 cache must not outlive it)
	if d := res.DedupeUntil.Sub(until); d < -5*time.Millisecond || d > 5*time.Millisecond {
		t.Errorf("duplicate's DedupeUntil = %v, want about %v", res.DedupeUntil, until)
	}
	time.Sleep(time.Until(until) + 30*time.Millisecond)

	again := newEvent(t, "stripe", "evt_window")
	mustEnqueue(t, s, again, time.Now().Add(time.Hour))
	if res := enqueue(t, s, newEvent(t, "stripe", "evt_window"), time.Now().Add(time.Hour)); !res.Duplicate || res.ID != again.ID {
		t.Errorf("enqueue after the new claim = %+v, want duplicate of %s", res, again.ID)
	}
	if info := lookup(t, s, "stripe", "evt_window"); info.ID != again.ID {
		t.Errorf("Lookup found %s, want the newest event %s", info.ID, again.ID)
	}
	jobs := lease(t, s, time.Now(), 10, time.Minute)
	if got, want := jobIDs(jobs), []string{first.ID, again.ID}; !slices.Equal(got, want) {
		t.Errorf("leased %v, want %v", got, want)
	}
}

func testDuplicateStatus(t *testing.T, f Factory) {
	tests := []struct {
		name string
		do   func(t *testing.T, s storage.Store, job *storage.Job)
		want storage.Status
	}{
		{"queued", nil, storage.StatusQueued},
		{"in flight", func(t *testing.T, s storage.Store, job *storage.Job) {}, storage.StatusInFlight},
		{"retry scheduled", func(t *testing.T, s storage.Store, job *storage.Job) {
			finish(t, s, job, storage.Outcome{Result: storage.Retry, Attempt: attempt(1, time.Now(), 503, ""), Due: time.Now().Add(time.Hour)})
		}, storage.StatusQueued},
		{"delivered", func(t *testing.T, s storage.Store, job *storage.Job) {
			finish(t, s, job, storage.Outcome{Result: storage.Delivered, Attempt: attempt(1, time.Now(), 204, "")})
		}, storage.StatusDelivered},
		{"dead", func(t *testing.T, s storage.Store, job *storage.Job) {
			finish(t, s, job, storage.Outcome{Result: storage.Dead, Attempt: attempt(1, time.Now(), 400, ""), Error: "rejected"})
		}, storage.StatusDead},
		{"retried from the DLQ", func(t *testing.T, s storage.Store, job *storage.Job) {
			finish(t, s, job, storage.Outcome{Result: storage.Dead, Attempt: attempt(1, time.Now(), 400, ""), Error: "rejected"})
			if err := s.DLQRetry(t.Context(), job.ID, time.Now()); err != nil {
				t.Fatalf("DLQRetry: %v", err)
			}
		}, storage.StatusQueued},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := f.Open(t)
			ev := newEvent(t, "stripe", "evt_status")
			mustEnqueue(t, s, ev, time.Now().Add(time.Hour))
			if tc.do != nil {
				tc.do(t, s, leaseOne(t, s, time.Now(), time.Minute, ev.ID))
			}
			res := enqueue(t, s, newEvent(t, "stripe", "evt_status"), time.Now().Add(time.Hour))
			if !res.Duplicate || res.ID != ev.ID || res.Status != tc.want {
				t.Errorf("duplicate = %+v, want duplicate of %s with status %s", res, ev.ID, tc.want)
			}
			if info := lookup(t, s, "stripe", "evt_status"); info.ID != ev.ID || info.Status != tc.want {
				t.Errorf("Lookup = %s %s, want %s %s", info.ID, info.Status, ev.ID, tc.want)
			}
		})
	}
}
