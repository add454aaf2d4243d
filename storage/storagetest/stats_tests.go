package storagetest

import (
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

// counters is a shorthand for the stats maps.
type counters = map[string]map[string]int64

// bucketsByStart maps StatsBuckets' answer by bucket start (Unix), failing
// on unordered or repeated starts and on empty buckets.
func bucketsByStart(t *testing.T, bs []storage.StatsBucket) map[int64]counters {
	t.Helper()
	out := map[int64]counters{}
	var prev time.Time
	for i, b := range bs {
		if i > 0 && !b.Start.After(prev) {
			t.Fatalf("bucket %d starts at %v, not after %v", i, b.Start, prev)
		}
		if len(b.Counters) == 0 {
			t.Fatalf("bucket %v is empty: StatsBuckets lists only buckets holding a counter", b.Start)
		}
		prev = b.Start
		out[b.Start.Unix()] = b.Counters
	}
	return out
}

// testStatsBuckets: AddStats' deltas land in their minute and hour
// buckets, which StatsBuckets reads back by range, exactly.
func testStatsBuckets(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := t.Context()
	now := time.Now().Truncate(time.Minute).Add(30 * time.Second) // mid-minute: the steps cannot straddle one
	steps := []struct {
		at time.Time
		d  counters
	}{
		{now.Add(-3 * time.Hour), counters{"stripe": {"accepted": 5, "dead": 1}}},
		{now.Add(-10 * time.Minute), counters{"stripe": {"accepted": 2}, "github": {"unauthorized": 3}}},
		{now.Add(-10*time.Minute + time.Second), counters{"stripe": {"accepted": 1}}},
		{now, counters{"stripe": {"accepted": 1, "delivered": 3}}},
	}
	for _, step := range steps {
		if err := s.AddStats(ctx, storage.StatsBatch{At: step.at, Counters: step.d}); err != nil {
			t.Fatal(err)
		}
	}
	m := func(at time.Time) int64 { return at.Truncate(time.Minute).Unix() }
	h := func(at time.Time) int64 { return at.Truncate(time.Hour).Unix() }

	// the last hour by minute: two buckets, the first summing two writes
	bs, err := s.StatsBuckets(ctx, storage.StatsByMinute, now.Add(-time.Hour), now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]counters{
		m(now.Add(-10 * time.Minute)): {"stripe": {"accepted": 3}, "github": {"unauthorized": 3}},
		m(now):                        {"stripe": {"accepted": 1, "delivered": 3}},
	}
	if got := bucketsByStart(t, bs); !reflect.DeepEqual(got, want) {
		t.Errorf("minute buckets of the last hour = %v, want %v", got, want)
	}
	// [from, to): the bucket starting at to is left out
	bs, err = s.StatsBuckets(ctx, storage.StatsByMinute, now.Add(-time.Hour), now.Truncate(time.Minute))
	if err != nil || len(bs) != 1 {
		t.Errorf("minute buckets up to the current minute: %v %v, want the one 10 minutes ago", bs, err)
	}

	// the last day by hour: every write, in its hour
	bs, err = s.StatsBuckets(ctx, storage.StatsByHour, now.Add(-24*time.Hour), now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	want = map[int64]counters{h(now.Add(-3 * time.Hour)): {"stripe": {"accepted": 5, "dead": 1}}}
	for _, step := range steps[1:] {
		k := h(step.at)
		if want[k] == nil {
			want[k] = counters{}
		}
		for src, c := range step.d {
			if want[k][src] == nil {
				want[k][src] = map[string]int64{}
			}
			for name, n := range c {
				want[k][src][name] += n
			}
		}
	}
	if got := bucketsByStart(t, bs); !reflect.DeepEqual(got, want) {
		t.Errorf("hour buckets of the last day = %v, want %v", got, want)
	}
	// a week by hour holds the same; a window holding nothing is empty
	if bs, err := s.StatsBuckets(ctx, storage.StatsByHour, now.Add(-7*24*time.Hour), now.Add(time.Hour)); err != nil || len(bs) != len(want) {
		t.Errorf("hour buckets of the last week: %d, %v; want %d", len(bs), err, len(want))
	}
	if bs, err := s.StatsBuckets(ctx, storage.StatsByMinute, now.Add(-2*time.Hour), now.Add(-time.Hour)); err != nil || len(bs) != 0 {
		t.Errorf("minute buckets of an empty window: %v, %v", bs, err)
	}
	if bs, err := s.StatsBuckets(ctx, storage.StatsByMinute, now, now.Add(-time.Hour)); err != nil || len(bs) != 0 {
		t.Errorf("a window ending before it starts: %v, %v", bs, err)
	}
	// a restart loses nothing
	if f.Reopen != nil {
		s = f.Reopen(t, s)
		bs, err := s.StatsBuckets(ctx, storage.StatsByHour, now.Add(-24*time.Hour), now.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if got := bucketsByStart(t, bs); !reflect.DeepEqual(got, want) {
			t.Errorf("hour buckets after reopening = %v, want %v", got, want)
		}
	}
	// the all-time totals and the last hour are what they were
	recent, all, err := s.Stats(ctx, now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if wantRecent := (counters{"stripe": {"accepted": 4, "delivered": 3}, "github": {"unauthorized": 3}}); !reflect.DeepEqual(recent, wantRecent) {
		t.Errorf("Stats last hour = %v, want %v", recent, wantRecent)
	}
	if wantAll := (counters{"stripe": {"accepted": 9, "dead": 1, "delivered": 3}, "github": {"unauthorized": 3}}); !reflect.DeepEqual(all, wantAll) {
		t.Errorf("Stats all time = %v, want %v", all, wantAll)
	}
}

// testStatsGauges: a gauge set twice in a bucket keeps the last value (it
// is not added), in the minute and in the hour bucket, beside counters;
// gauges never reach the all-time totals.
func testStatsGauges(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := t.Context()
	now := time.Now().Truncate(time.Minute).Add(10 * time.Second)
	// an earlier sample first: the hour bucket keeps the last one set
	if err := s.SetStatsGauges(ctx, now.Add(-2*time.Minute), counters{"stripe": {"gauge:dlq": 9}, "github": {"gauge:dlq": 0}}); err != nil {
		t.Fatal(err)
	}
	for _, g := range []int64{7, 4} {
		if err := s.SetStatsGauges(ctx, now, counters{"stripe": {"gauge:dlq": g}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddStats(ctx, storage.StatsBatch{At: now, Counters: counters{"stripe": {"accepted": 2}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetStatsGauges(ctx, now, nil); err != nil {
		t.Errorf("SetStatsGauges of nothing: %v", err)
	}
	bs, err := s.StatsBuckets(ctx, storage.StatsByMinute, now.Add(-5*time.Minute), now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]counters{
		now.Add(-2 * time.Minute).Truncate(time.Minute).Unix(): {"stripe": {"gauge:dlq": 9}, "github": {"gauge:dlq": 0}},
		now.Truncate(time.Minute).Unix():                       {"stripe": {"gauge:dlq": 4, "accepted": 2}},
	}
	if got := bucketsByStart(t, bs); !reflect.DeepEqual(got, want) {
		t.Errorf("minute buckets = %v, want %v", got, want)
	}
	bs, err = s.StatsBuckets(ctx, storage.StatsByHour, now.Add(-time.Hour), now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	last := bs[len(bs)-1].Counters["stripe"]
	if last["gauge:dlq"] != 4 || last["accepted"] != 2 {
		t.Errorf("hour bucket of now = %v, want the last gauge (4) and the counter (2)", last)
	}
	if _, all, err := s.Stats(ctx, now.Add(-time.Hour)); err != nil || !reflect.DeepEqual(all, counters{"stripe": {"accepted": 2}}) {
		t.Errorf("all-time totals = %v, %v; want the counter only", all, err)
	}
}

// testStatsNodes: two clients (nodes) adding to the same counters at once
// lose no increment: the all-time totals, the minute and the hour bucket
// are exact.
func testStatsNodes(t *testing.T, f Factory) {
	a := f.Open(t)
	b := a
	if f.Second != nil {
		b = f.Second(t, a)
	}
	ctx := t.Context()
	at := time.Now().Truncate(time.Minute).Add(20 * time.Second)
	const writers, writes = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, 2*writers*writes)
	for i := range 2 * writers {
		node := a
		if i%2 == 1 {
			node = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range writes {
				errs <- node.AddStats(ctx, storage.StatsBatch{At: at, Counters: counters{"stripe": {"accepted": 1, "attempts": 2}, "github": {"accepted": 1}}})
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	n := int64(2 * writers * writes)
	want := counters{"stripe": {"accepted": n, "attempts": 2 * n}, "github": {"accepted": n}}
	if _, all, err := b.Stats(ctx, at.Add(-time.Hour)); err != nil || !reflect.DeepEqual(all, want) {
		t.Errorf("all time = %v, %v; want %v", all, err, want)
	}
	for _, res := range []storage.StatsResolution{storage.StatsByMinute, storage.StatsByHour} {
		bs, err := a.StatsBuckets(ctx, res, at.Add(-res.Width()), at.Add(res.Width()))
		if err != nil || len(bs) != 1 || !reflect.DeepEqual(bs[0].Counters, want) {
			t.Errorf("%s buckets = %v, %v; want one with %v", res, bs, err, want)
		}
	}
}

// testQueueHeads: the due time of each lane's first job, queued or
// leased; a lane whose jobs are all gone has none.
func testQueueHeads(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := t.Context()
	if heads, err := s.QueueHeads(ctx); err != nil || len(heads) != 0 {
		t.Fatalf("QueueHeads of an empty store = %v, %v", heads, err)
	}
	until := time.Now().Add(time.Hour)
	before := time.Now()
	first := newEvent(t, "stripe", "")
	mustEnqueue(t, s, first, until)
	after := time.Now()
	time.Sleep(5 * time.Millisecond)
	mustEnqueue(t, s, newEvent(t, "stripe", ""), until)
	gh := newEvent(t, "github", "")
	mustEnqueue(t, s, gh, until)
	heads, err := s.QueueHeads(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(heads) != 2 {
		t.Fatalf("QueueHeads = %v, want the lanes stripe and github", heads)
	}
	if h := heads["stripe"]; h.Before(before.Add(-tolerance)) || h.After(after.Add(tolerance)) {
		t.Errorf("stripe's head is due at %v, want the first event's enqueue time (%v to %v)", h, before, after)
	}
	if !heads["github"].After(heads["stripe"]) {
		t.Errorf("github's head %v is not after stripe's %v", heads["github"], heads["stripe"])
	}
	// github's only job leased: its head is its lease's end
	now := time.Now()
	j := leaseOneOf(t, s, gh.ID)
	heads, err = s.QueueHeads(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !closeTo(heads["github"], j.LeaseUntil) {
		t.Errorf("github's head = %v, want its lease's end %v", heads["github"], j.LeaseUntil)
	}
	finish(t, s, j, storage.Outcome{Result: storage.Delivered, Attempt: attempt(1, now, 200, "")})
	heads, err = s.QueueHeads(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := heads["github"]; ok || len(heads) != 1 {
		t.Errorf("QueueHeads after github's delivery = %v, want stripe's only", heads)
	}
}

// testStatsBatch: a batch sent again under its ID (its writer got no
// answer) counts once, a batch without an ID counts each time, and a
// batch's Window counters go to the minute and hour buckets only, never
// to the all-time totals; its Latest values go to the all-time totals
// only, the largest kept.
func testStatsBatch(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := t.Context()
	now := time.Now().Truncate(time.Minute).Add(10 * time.Second)
	batch := storage.StatsBatch{ID: "batch-1", At: now, Counters: counters{"stripe": {"accepted": 2}}, Window: counters{"stripe": {"lat:3": 5}}}
	for range 3 {
		if err := s.AddStats(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddStats(ctx, storage.StatsBatch{ID: "batch-2", At: now, Counters: counters{"stripe": {"accepted": 1}}}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.AddStats(ctx, storage.StatsBatch{At: now, Counters: counters{"github": {"accepted": 1}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddStats(ctx, storage.StatsBatch{ID: "empty", At: now}); err != nil {
		t.Errorf("an empty batch: %v", err)
	}
	// latest values: the largest wins, whichever batch (and node) gave it
	for i, v := range []int64{1700000100, 1700000300, 1700000200} {
		b := storage.StatsBatch{ID: "latest-" + strconv.Itoa(i), At: now, Latest: counters{"stripe": {"secret_last:2": v}}}
		if i == 0 {
			b.Latest["github"] = map[string]int64{"secret_last:1": 1700000000}
		}
		if err := s.AddStats(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	_, all, err := s.Stats(ctx, now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if want := (counters{"stripe": {"accepted": 3, "secret_last:2": 1700000300}, "github": {"accepted": 2, "secret_last:1": 1700000000}}); !reflect.DeepEqual(all, want) {
		t.Errorf("all-time totals = %v, want %v (batch-1 once, the window's counter left out, the largest latest value)", all, want)
	}
	for _, res := range []storage.StatsResolution{storage.StatsByMinute, storage.StatsByHour} {
		bs, err := s.StatsBuckets(ctx, res, now.Add(-time.Hour), now.Add(time.Hour))
		if err != nil || len(bs) == 0 {
			t.Fatalf("%s buckets: %v %v", res, bs, err)
		}
		last := bs[len(bs)-1].Counters
		if last["stripe"]["accepted"] != 3 || last["stripe"]["lat:3"] != 5 || last["github"]["accepted"] != 2 {
			t.Errorf("%s bucket of now = %v, want accepted 3 and lat:3 5 for stripe, 2 for github", res, last)
		}
		if _, ok := last["stripe"]["secret_last:2"]; ok {
			t.Errorf("%s bucket of now = %v: a latest value went to a bucket", res, last)
		}
	}
}
