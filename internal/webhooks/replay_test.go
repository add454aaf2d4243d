package webhooks

import (
	"errors"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/storage"
)

// TestReplayDelivered: a dry run names the delivered events and changes
// nothing; the real run queues exactly those, due one after the other at
// the source's rate (a bulk retry's pace), with one "replayed" audit line
// each; a second run finds nothing left to replay.
func TestReplayDelivered(t *testing.T) {
	app, err := provisionApp(t, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Cleanup()
	rate := storage.Rate{Events: 4, Per: time.Second} // one every 250ms
	if err := app.RegisterSource(&Source{Name: "s", Destinations: map[string]delivery.Options{"default": {URL: "http://127.0.0.1:1/", Rate: rate}}}); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.InfoLevel)
	app.auditLog = zap.New(core)
	st, err := app.Store()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i, typ := range []string{"a", "b", "a", "a"} {
		ev := storagetestEvent("s", "e"+string(rune('1'+i)), typ)
		if _, err := st.Enqueue(t.Context(), ev, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		jobs, err := st.Lease(t.Context(), time.Now(), 10, time.Minute, nil)
		if err != nil || len(jobs) != 1 {
			t.Fatalf("lease: %v %v", jobs, err)
		}
		if err := st.Finish(t.Context(), jobs[0], storage.Outcome{Result: storage.Delivered, Attempt: &storage.Attempt{N: 1, At: time.Now(), Status: 200}}); err != nil {
			t.Fatal(err)
		}
		if typ == "a" {
			want = append(want, ev.ID)
		}
	}
	dry, err := app.ReplayDelivered(t.Context(), storage.ReplayFilter{Source: "s", Type: "a"}, true)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range dry.Replayed {
		got = append(got, ev.ID)
	}
	if dry.Matched != 3 || len(got) != 3 || got[0] != want[0] || got[2] != want[2] || dry.Spread != 0 || logs.Len() != 0 {
		t.Fatalf("dry run: %+v, %d audit lines; want %v", dry, logs.Len(), want)
	}
	if c, _ := st.Counts(t.Context()); c.Queued != 0 {
		t.Fatalf("the dry run queued %d events", c.Queued)
	}

	start := time.Now()
	res, err := app.ReplayDelivered(t.Context(), storage.ReplayFilter{Source: "s", Type: "a"}, false)
	if err != nil || res.Matched != 3 || len(res.Replayed) != 3 || len(res.Failed) != 0 {
		t.Fatalf("replay: %+v %v", res, err)
	}
	// paced at the source's rate: 3 events spread over 3 intervals
	if iv := rate.Interval(); res.Spread < 3*iv-50*time.Millisecond || res.Spread > 3*iv {
		t.Errorf("spread %v, want about %v", res.Spread, 3*iv)
	}
	for i, id := range want {
		info, err := st.Lookup(t.Context(), "s", "e"+string(rune('1'+[]int{0, 2, 3}[i])))
		if err != nil || info.ID != id || info.Status != storage.StatusQueued {
			t.Fatalf("event %d after the replay: %+v %v", i, info, err)
		}
		wantDue := start.Add(time.Duration(i) * rate.Interval())
		if d := info.NextAttempt.Sub(wantDue); d < -5*time.Millisecond || d > 50*time.Millisecond {
			t.Errorf("event %d due %v after the first, want %v", i, info.NextAttempt.Sub(start), wantDue.Sub(start))
		}
	}
	lines := logs.FilterMessage(stepReplayed).All()
	if len(lines) != 3 {
		t.Fatalf("%d replayed audit lines, want 3", len(lines))
	}
	if f := lines[0].ContextMap(); f["id"] != want[0] || f["source"] != "s" || f["type"] != "a" || f["step"] != stepReplayed || f["request_id"] != "req-"+want[0] {
		t.Errorf("audit line %v", f)
	}

	// nothing delivered is left to replay: a second run matches nothing
	again, err := app.ReplayDelivered(t.Context(), storage.ReplayFilter{Source: "s", Type: "a"}, false)
	if err != nil || again.Matched != 0 || len(again.Replayed) != 0 {
		t.Errorf("second replay: %+v %v", again, err)
	}
}

// TestReplayDeliveredFailures: an event another caller replayed meanwhile
// is no longer matched; a store that cannot list answers the error.
func TestReplayDeliveredFailures(t *testing.T) {
	app, err := provisionApp(t, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Cleanup()
	st, _ := app.Store()
	ev := storagetestEvent("s", "e1", "")
	if _, err := st.Enqueue(t.Context(), ev, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	jobs, _ := st.Lease(t.Context(), time.Now(), 1, time.Minute, nil)
	if err := st.Finish(t.Context(), jobs[0], storage.Outcome{Result: storage.Delivered}); err != nil {
		t.Fatal(err)
	}
	page, _ := st.ListDelivered(t.Context(), storage.ReplayFilter{})
	infos := page.Events
	if len(infos) != 1 {
		t.Fatalf("listed %v", infos)
	}
	// replayed by someone else between the listing and the replay
	if err := st.Replay(t.Context(), &infos[0], time.Now()); err != nil {
		t.Fatal(err)
	}
	res, err := app.ReplayDelivered(t.Context(), storage.ReplayFilter{}, false)
	if err != nil || res.Matched != 0 {
		t.Fatalf("after the other replay: %+v %v", res, err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := app.ReplayDelivered(t.Context(), storage.ReplayFilter{}, true); !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("closed store: err = %v, want storage.ErrUnavailable", err)
	}
}

// storagetestEvent is a small deduplicated event of source with a type.
func storagetestEvent(source, eventID, typ string) *storage.Event {
	id := source + "-" + eventID + "-" + time.Now().Format("150405.000000000")
	return &storage.Event{ID: id, EventID: eventID, Dedupe: true, Source: source, Type: typ, RequestID: "req-" + id,
		Upstream: "http://127.0.0.1:1/", Body: []byte(`{}`), ReceivedAt: time.Now()}
}

// TestReplayPagesReplayEachOnce: a replay that goes on page after page
// (next_cursor) re-enqueues each delivered event once, even when the
// events of its earlier pages are delivered again meanwhile (they come
// back at the newest end of the listing, past the end its first page
// fixed); a cursor not made by a replay is refused.
func TestReplayPagesReplayEachOnce(t *testing.T) {
	app, err := provisionApp(t, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Cleanup()
	if err := app.RegisterSource(&Source{Name: "s", Destinations: defaultTo("http://127.0.0.1:1/")}); err != nil {
		t.Fatal(err)
	}
	st, err := app.Store()
	if err != nil {
		t.Fatal(err)
	}
	deliverDue := func() int {
		jobs, err := st.Lease(t.Context(), time.Now().Add(time.Hour), 100, time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			if err := st.Finish(t.Context(), j, storage.Outcome{Result: storage.Delivered, Attempt: &storage.Attempt{N: 1, At: time.Now(), Status: 200}}); err != nil {
				t.Fatal(err)
			}
		}
		return len(jobs)
	}
	const n = 12
	for i := range n {
		if _, err := st.Enqueue(t.Context(), storagetestEvent("s", "e"+string(rune('a'+i)), "t"), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if got := deliverDue(); got != n {
		t.Fatalf("delivered %d of %d", got, n)
	}
	time.Sleep(2 * time.Millisecond) // the first page's end is after every first delivery
	seen := map[string]int{}
	f := storage.ReplayFilter{Source: "s", Limit: 5}
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("no end")
		}
		res, err := app.ReplayDelivered(t.Context(), f, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range res.Replayed {
			seen[ev.ID]++
		}
		deliverDue() // the replayed events are delivered again before the next page
		if res.NextCursor == "" {
			break
		}
		f.Cursor = res.NextCursor
	}
	if len(seen) != n {
		t.Errorf("replayed %d distinct events, want %d", len(seen), n)
	}
	for id, k := range seen {
		if k != 1 {
			t.Errorf("event %s replayed %d times", id, k)
		}
	}
	if _, err := app.ReplayDelivered(t.Context(), storage.ReplayFilter{Cursor: "not-a-replay-cursor"}, true); !errors.Is(err, storage.ErrInvalidCursor) {
		t.Errorf("a cursor not made by a replay: %v, want ErrInvalidCursor", err)
	}
}
