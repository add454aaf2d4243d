package storagetest

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

// deliver enqueues ev and finishes it as delivered after attempts (the
// earlier ones failed and were retried).
func deliver(t *testing.T, s storage.Store, ev *storage.Event, attempts int) {
	t.Helper()
	mustEnqueue(t, s, ev, time.Now().Add(time.Hour))
	for n := 1; n <= attempts; n++ {
		j := leaseOneOf(t, s, ev.ID)
		out := storage.Outcome{Result: storage.Retry, Attempt: attempt(n, time.Now(), 503, "busy"), Due: time.Now()}
		if n == attempts {
			out = storage.Outcome{Result: storage.Delivered, Attempt: attempt(n, time.Now(), 200, "")}
		}
		finish(t, s, j, out)
	}
}

// listDelivered is the ids ListDelivered lists under f, page after page
// until f's limit is reached or no cursor is left.
func listDelivered(t *testing.T, s storage.Store, f storage.ReplayFilter) []string {
	t.Helper()
	ids := []string{}
	for limit, pages := f.EffectiveLimit(), 0; len(ids) < limit; pages++ {
		if pages == 1000 {
			t.Fatalf("ListDelivered(%+v): no end after %d pages", f, pages)
		}
		page, err := s.ListDelivered(t.Context(), f)
		if err != nil {
			t.Fatalf("ListDelivered(%+v): %v", f, err)
		}
		for _, info := range page.Events {
			if info.Status != storage.StatusDelivered {
				t.Errorf("ListDelivered listed %s as %s", info.ID, info.Status)
			}
			ids = append(ids, info.ID)
		}
		if page.NextCursor == "" {
			break
		}
		f.Cursor = page.NextCursor
		f.Limit = limit - len(ids)
	}
	return ids
}

func infoOf(t *testing.T, s storage.Store, ev *storage.Event) *storage.EventInfo {
	t.Helper()
	return lookup(t, s, ev.Source, ev.EventID)
}

// testReplayList: delivered events are listed by source, type and
// delivery time, oldest first; queued, in-flight and dead ones are not.
func testReplayList(t *testing.T, f Factory) {
	s := f.Open(t)
	var early, late []*storage.Event
	for i := range 3 {
		ev := newEvent(t, "stripe", "")
		ev.Type = []string{"charge.succeeded", "invoice.paid", "charge.succeeded"}[i]
		deliver(t, s, ev, 1)
		early = append(early, ev)
	}
	time.Sleep(5 * time.Millisecond)
	mid := time.Now()
	time.Sleep(5 * time.Millisecond)
	for i := range 2 {
		ev := newEvent(t, []string{"stripe", "github"}[i], "")
		ev.Type = "charge.succeeded"
		deliver(t, s, ev, 2)
		late = append(late, ev)
	}
	// not delivered: queued, in flight, dead
	queued, leased, dead := newEvent(t, "stripe", ""), newEvent(t, "stripe", ""), newEvent(t, "stripe", "")
	for _, ev := range []*storage.Event{queued, leased, dead} {
		ev.Type = "charge.succeeded"
	}
	mustEnqueue(t, s, dead, time.Now().Add(time.Hour))
	finish(t, s, leaseOneOf(t, s, dead.ID), storage.Outcome{Result: storage.Dead, Attempt: attempt(1, time.Now(), 400, ""), Error: "bad"})
	mustEnqueue(t, s, leased, time.Now().Add(time.Hour))
	leaseOneOf(t, s, leased.ID)
	mustEnqueue(t, s, queued, time.Now().Add(time.Hour))

	ids := func(evs ...*storage.Event) []string {
		out := []string{}
		for _, ev := range evs {
			out = append(out, ev.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		f    storage.ReplayFilter
		want []string
	}{
		{"all", storage.ReplayFilter{}, ids(early[0], early[1], early[2], late[0], late[1])},
		{"source", storage.ReplayFilter{Source: "stripe"}, ids(early[0], early[1], early[2], late[0])},
		{"type", storage.ReplayFilter{Type: "charge.succeeded"}, ids(early[0], early[2], late[0], late[1])},
		{"source and type", storage.ReplayFilter{Source: "stripe", Type: "invoice.paid"}, ids(early[1])},
		{"since", storage.ReplayFilter{Since: mid}, ids(late[0], late[1])},
		{"until", storage.ReplayFilter{Until: mid}, ids(early...)},
		{"since and until", storage.ReplayFilter{Since: mid, Until: time.Now().Add(time.Minute), Source: "github"}, ids(late[1])},
		{"limit", storage.ReplayFilter{Limit: 2}, ids(early[0], early[1])},
		{"nothing", storage.ReplayFilter{Source: "nobody"}, ids()},
		{"one event", storage.ReplayFilter{ID: late[0].ID}, ids(late[0])},
		{"one event, other source", storage.ReplayFilter{ID: late[0].ID, Source: "github"}, ids()},
	} {
		if got := listDelivered(t, s, tc.f); !slices.Equal(got, tc.want) {
			t.Errorf("%s: ListDelivered = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// testReplay: a replay moves exactly one delivered event back to the
// queue, in its source's replay lane, with its attempts and a fresh
// budget; it is delivered again as any job.
func testReplay(t *testing.T, f Factory) {
	s := f.Open(t)
	ev := newEvent(t, "stripe", "evt_replay")
	other := newEvent(t, "stripe", "evt_other")
	deliver(t, s, ev, 2)
	deliver(t, s, other, 1)
	info := infoOf(t, s, ev)
	if info.Status != storage.StatusDelivered {
		t.Fatalf("Lookup before the replay: %s, want delivered", info.Status)
	}
	if err := s.Replay(t.Context(), &storage.EventInfo{ID: newID(t), EventID: "evt_nobody", Source: "stripe"}, time.Now()); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Replay of an unknown event: err = %v, want storage.ErrNotFound", err)
	}

	due := time.Now().Add(time.Minute)
	if err := s.Replay(t.Context(), info, due); err != nil {
		t.Fatalf("Replay: %v", err)
	}
	got := infoOf(t, s, ev)
	if got.Status != storage.StatusQueued || got.NextAttempt.Sub(due).Abs() > tolerance || len(got.Attempts) != 2 {
		t.Errorf("Lookup after Replay: %s next %v, %d attempts; want queued at %v, 2 attempts", got.Status, got.NextAttempt, len(got.Attempts), due)
	}
	if ids := listDelivered(t, s, storage.ReplayFilter{}); !slices.Equal(ids, []string{other.ID}) {
		t.Errorf("ListDelivered after Replay = %v, want only the other event", ids)
	}
	wantCounts(t, s, storage.Counts{Queued: 1})
	if by, err := s.QueueBySource(t.Context()); err != nil || by["stripe"].Queued != 1 || len(by) != 1 {
		t.Errorf("QueueBySource after Replay = %v, %v; want the replay counted under its source", by, err)
	}
	if err := s.Replay(t.Context(), info, time.Now()); !errors.Is(err, storage.ErrConflict) {
		t.Errorf("second Replay of the queued event: err = %v, want storage.ErrConflict", err)
	}
	wantCounts(t, s, storage.Counts{Queued: 1})

	if jobs := lease(t, s, due.Add(-10*time.Millisecond), 10, time.Minute); len(jobs) != 0 {
		t.Fatalf("replayed job leased before its due time: %v", jobIDs(jobs))
	}
	replayLane := storage.LanesOf("stripe")[1]
	if jobs := gateLease(t, s, due, 10, time.Minute, &storage.Gate{Skip: map[string]bool{replayLane: true}}); len(jobs) != 0 {
		t.Fatalf("replayed job leased while its replay lane is skipped: %v", jobIDs(jobs))
	}
	j := leaseOne(t, s, due, time.Minute, ev.ID)
	checkEvent(t, "replayed job", j.Event, *ev)
	if !j.Replay || storage.LaneOf(&j.Event) != replayLane {
		t.Errorf("replayed job: replay %v lane %q, want the replay lane %q", j.Replay, storage.LaneOf(&j.Event), replayLane)
	}
	if j.RoundAttempts() != 0 || len(j.Attempts) != 2 {
		t.Errorf("replayed job: %d attempts, %d in this round; want 2 kept, a fresh budget", len(j.Attempts), j.RoundAttempts())
	}
	if err := s.Replay(t.Context(), info, time.Now()); !errors.Is(err, storage.ErrConflict) {
		t.Errorf("Replay of the in-flight event: err = %v, want storage.ErrConflict", err)
	}

	// a retry stays in the replay lane
	finish(t, s, j, storage.Outcome{Result: storage.Retry, Attempt: attempt(3, time.Now(), 503, ""), Due: time.Now()})
	if jobs := gateLease(t, s, time.Now(), 10, time.Minute, &storage.Gate{Skip: map[string]bool{replayLane: true}}); len(jobs) != 0 {
		t.Fatalf("retried replay left the replay lane: %v", jobIDs(jobs))
	}
	j = leaseOne(t, s, time.Now(), time.Minute, ev.ID)
	if j.RoundAttempts() != 1 {
		t.Errorf("retried replay: %d attempts in this round, want 1", j.RoundAttempts())
	}
	finish(t, s, j, storage.Outcome{Result: storage.Delivered, Attempt: attempt(4, time.Now(), 200, "")})
	got = infoOf(t, s, ev)
	if got.Status != storage.StatusDelivered || len(got.Attempts) != 4 {
		t.Errorf("Lookup after the replay was delivered: %s with %d attempts, want delivered with 4", got.Status, len(got.Attempts))
	}
	// delivered again: it may be replayed again
	if err := s.Replay(t.Context(), got, time.Now()); err != nil {
		t.Fatalf("Replay of the event delivered again: %v", err)
	}
	// a replay that dies is a dead event as any; a DLQ retry of it goes
	// back to its source's own lane
	j = leaseOne(t, s, time.Now(), time.Minute, ev.ID)
	finish(t, s, j, storage.Outcome{Result: storage.Dead, Attempt: attempt(5, time.Now(), 400, ""), Error: "bad"})
	if err := s.DLQRetry(t.Context(), ev.ID, time.Now()); err != nil {
		t.Fatalf("DLQRetry of the dead replay: %v", err)
	}
	j = leaseOne(t, s, time.Now(), time.Minute, ev.ID)
	if j.Replay || storage.LaneOf(&j.Event) != "stripe" {
		t.Errorf("DLQ retry of a dead replay: replay %v lane %q, want the source's lane", j.Replay, storage.LaneOf(&j.Event))
	}
	finish(t, s, j, storage.Outcome{Result: storage.Delivered, Attempt: attempt(6, time.Now(), 200, "")})

	// a dead event is not replayed
	dead := newEvent(t, "stripe", "evt_dead")
	mustEnqueue(t, s, dead, time.Now().Add(time.Hour))
	finish(t, s, leaseOneOf(t, s, dead.ID), storage.Outcome{Result: storage.Dead, Attempt: attempt(1, time.Now(), 400, ""), Error: "bad"})
	if err := s.Replay(t.Context(), infoOf(t, s, dead), time.Now()); !errors.Is(err, storage.ErrConflict) {
		t.Errorf("Replay of a dead event: err = %v, want storage.ErrConflict", err)
	}
}

// testReplayConcurrent: of concurrent replays of one event, one wins.
func testReplayConcurrent(t *testing.T, f Factory) {
	s := f.Open(t)
	ev := newEvent(t, "stripe", "")
	deliver(t, s, ev, 1)
	info := infoOf(t, s, ev)
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = s.Replay(t.Context(), info, time.Now()) })
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, storage.ErrConflict):
			t.Errorf("concurrent Replay: %v, want nil or storage.ErrConflict", err)
		}
	}
	if won != 1 {
		t.Errorf("%d of %d concurrent replays won, want 1", won, n)
	}
	wantCounts(t, s, storage.Counts{Queued: 1})
	leaseOne(t, s, time.Now(), time.Minute, ev.ID)
}

// testReplayLane: replayed jobs and live jobs of one source take turns,
// within the one pace they share.
func testReplayLane(t *testing.T, f Factory) {
	s := f.Open(t)
	var replayed []*storage.Event
	for range 6 {
		ev := newEvent(t, "stripe", "")
		deliver(t, s, ev, 1)
		replayed = append(replayed, ev)
	}
	for _, ev := range replayed {
		if err := s.Replay(t.Context(), infoOf(t, s, ev), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(5 * time.Millisecond) // the live jobs are younger
	for range 3 {
		mustEnqueue(t, s, newEvent(t, "stripe", ""), time.Now().Add(time.Hour))
	}
	jobs := gateLease(t, s, time.Now().Add(10*time.Millisecond), 4, time.Minute, nil)
	var lanes []bool
	for _, j := range jobs {
		lanes = append(lanes, j.Replay)
	}
	if want := []bool{true, false, true, false}; !slices.Equal(lanes, want) {
		t.Errorf("Lease(4) replay flags = %v, want %v (the lanes take turns, the replay backlog's oldest first)", lanes, want)
	}

	// paced, the two lanes share the source's pace: one slot a second for both
	rate := storage.Rate{Events: 1, Per: time.Second}
	gate := &storage.Gate{Pace: map[string]storage.Rate{}}
	for _, lane := range storage.LanesOf("stripe") {
		gate.Pace[lane] = rate
	}
	now := time.Now().Add(20 * time.Millisecond)
	if jobs := gateLease(t, s, now, 10, time.Minute, gate); len(jobs) != 1 {
		t.Errorf("paced Lease = %d jobs of the source's two lanes, want 1 (one pace for both)", len(jobs))
	}
	if jobs := gateLease(t, s, now.Add(100*time.Millisecond), 10, time.Minute, gate); len(jobs) != 0 {
		t.Errorf("paced Lease before the next slot = %d jobs, want 0", len(jobs))
	}
	if due, ok, err := s.NextDue(t.Context(), gate); err != nil || !ok || due.Sub(now.Add(time.Second)).Abs() > 5*time.Millisecond {
		t.Errorf("NextDue = %v %v %v, want the shared pace's next slot %v", due, ok, err, now.Add(time.Second))
	}
}
