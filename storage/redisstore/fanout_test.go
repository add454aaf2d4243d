package redisstore

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/storagetest"
)

// expandEvent expands ev's fan-out record, as every read of an event by
// its id does (destinationsOf), for the tests that read its jobs' keys.
func expandEvent(t *testing.T, s *Store, ev *storage.Event) {
	t.Helper()
	if _, err := s.destinationsOf(t.Context(), s.partitionForEvent(ev), ev.ID); err != nil {
		t.Fatal(err)
	}
}

// hasFanRecord reports whether ev is still stored as a fan-out record.
func hasFanRecord(t *testing.T, s *Store, ev *storage.Event) bool {
	t.Helper()
	p := s.partitionForEvent(ev)
	n, err := s.c.Exists(t.Context(), p.fan(ev.ID)).Result()
	if err != nil {
		t.Fatal(err)
	}
	in, err := s.c.ZScore(t.Context(), p.key("fan"), ev.ID).Result()
	if (n == 1) != (err == nil && in > 0) {
		t.Fatalf("fan-out record %v, index entry %v, %v: not both or neither", n, in, err)
	}
	return n == 1
}

// dumpPrefix reads every key of prefix, each rendered as text with the
// prefix replaced by "P": two stores' contents compare equal when they
// store the same.
func dumpPrefix(t *testing.T, c redis.UniversalClient, prefix string) map[string]string {
	t.Helper()
	ctx := t.Context()
	keys, err := c.Keys(ctx, "{"+prefix+":*").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range keys {
		var v any
		switch c.Type(ctx, k).Val() {
		case "string":
			v = c.Get(ctx, k).Val()
		case "hash":
			v = c.HGetAll(ctx, k).Val()
		case "zset":
			v = c.ZRangeWithScores(ctx, k, 0, -1).Val()
		case "set":
			m := c.SMembers(ctx, k).Val()
			slices.Sort(m)
			v = m
		case "list":
			v = c.LRange(ctx, k, 0, -1).Val()
		}
		out[strings.ReplaceAll(k, prefix, "P")] = strings.ReplaceAll(fmt.Sprint(v), prefix, "P")
	}
	return out
}

// TestFanOutRecordExpands: an event with several deliveries is stored as
// one fan-out record beside its claim (no job hash, lane entry, payload
// or deliveries index yet); expanded, it is exactly what the usual form
// stores for the same event at the same time, key for key.
func TestFanOutRecordExpands(t *testing.T) {
	srv := redistest.Start(t)
	at := time.UnixMilli(1_800_000_000_123)
	clock := func() time.Time { return at }
	fanPrefix, directPrefix := redistest.Prefix(), redistest.Prefix()
	fan := openTest(t, srv.Addr, Options{Prefix: fanPrefix, Partitions: 4, Now: clock})
	direct := openTest(t, srv.Addr, Options{Prefix: directPrefix, Partitions: 4, Now: clock})
	direct.direct = true
	ctx := t.Context()
	ev := payloadEvent("evt_form\nwith a newline") // a provider's id may hold one: fanRecord's lengths
	ev.ReceivedAt = at
	for _, s := range []*Store{fan, direct} {
		copy := *ev
		if _, err := s.Enqueue(ctx, &copy, at.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if !hasFanRecord(t, fan, ev) || hasFanRecord(t, direct, ev) {
		t.Fatal("want a fan-out record in the fan-out store alone")
	}
	p := fan.partitionForEvent(ev)
	ck := storage.ClaimKey(ev.Source, ev.EventID)
	var eventKeys []string
	for k := range dumpPrefix(t, fan.c, fanPrefix) {
		if !strings.HasPrefix(k, "{P:meta}") && !strings.HasSuffix(k, ":lanes:v1") && !strings.HasSuffix(k, ":counted:v1") { // the store's own markers
			eventKeys = append(eventKeys, k)
		}
	}
	slices.Sort(eventKeys)
	want := []string{p.claim(ck), p.key("fan"), p.fan(ev.ID), p.key("fanlanes"), p.events()}
	for i := range want {
		want[i] = strings.ReplaceAll(want[i], fanPrefix, "P")
	}
	slices.Sort(want)
	if !slices.Equal(eventKeys, want) {
		t.Errorf("keys of a fan-out event before expansion %q, want %q", eventKeys, want)
	}

	expandEvent(t, fan, ev)
	if hasFanRecord(t, fan, ev) {
		t.Fatal("the record is left after expansion")
	}
	got, usual := dumpPrefix(t, fan.c, fanPrefix), dumpPrefix(t, direct.c, directPrefix)
	for _, k := range slices.Sorted(maps.Keys(usual)) {
		if got[k] != usual[k] {
			t.Errorf("expanded %s = %s\nusual form: %s", k, got[k], usual[k])
		}
	}
	for k := range got {
		if _, ok := usual[k]; !ok {
			t.Errorf("expanded: key %s the usual form does not have", k)
		}
	}
	// expanding again changes nothing
	expandEvent(t, fan, ev)
	if again := dumpPrefix(t, fan.c, fanPrefix); !maps.Equal(again, got) {
		t.Error("a second expansion changed the store")
	}
}

// TestFanOutReaders: every reader meets an event still stored as its
// fan-out record (nothing has leased since it was enqueued) and answers
// as for the usual form.
func TestFanOutReaders(t *testing.T) {
	srv := redistest.Start(t)
	lanes := []string{"stripe", "stripe/billing", "stripe/crm"}
	for _, tc := range []struct {
		name string
		// expands is whether the reader leaves the event expanded
		expands bool
		check   func(t *testing.T, s *Store, ev *storage.Event, at time.Time)
	}{
		{"Lookup", true, func(t *testing.T, s *Store, ev *storage.Event, at time.Time) {
			info, err := s.Lookup(t.Context(), ev.Source, ev.EventID)
			if err != nil || info.ID != ev.ID || info.Status != storage.StatusQueued || len(info.Deliveries) != 3 {
				t.Fatalf("Lookup = %+v, %v", info, err)
			}
			for _, d := range info.Deliveries {
				if d.Status != storage.StatusQueued {
					t.Errorf("delivery %s: %s, want queued", d.Destination, d.Status)
				}
			}
		}},
		{"LookupByInternalID", true, func(t *testing.T, s *Store, ev *storage.Event, at time.Time) {
			info, err := s.Lookup(t.Context(), ev.Source, ev.ID)
			if err != nil || info.ID != ev.ID || info.Status != storage.StatusQueued || len(info.Deliveries) != 3 {
				t.Fatalf("Lookup = %+v, %v", info, err)
			}
		}},
		{"Duplicate", true, func(t *testing.T, s *Store, ev *storage.Event, at time.Time) {
			res, err := s.Enqueue(t.Context(), payloadEvent(ev.EventID), time.Now().Add(time.Hour))
			if err != nil || !res.Duplicate || res.ID != ev.ID || res.Status != storage.StatusQueued {
				t.Fatalf("duplicate = %+v, %v; want a duplicate of %s, queued", res, err, ev.ID)
			}
		}},
		{"Counts", false, func(t *testing.T, s *Store, ev *storage.Event, at time.Time) {
			if c, err := s.Counts(t.Context()); err != nil || c != (storage.Counts{Queued: 3}) {
				t.Fatalf("Counts = %+v, %v; want 3 queued", c, err)
			}
		}},
		{"QueueByLane", false, func(t *testing.T, s *Store, ev *storage.Event, at time.Time) {
			byLane, err := s.QueueByLane(t.Context())
			if err != nil || len(byLane) != 3 {
				t.Fatalf("QueueByLane = %v, %v", byLane, err)
			}
			for _, lane := range lanes {
				if byLane[lane] != (storage.Counts{Queued: 1}) {
					t.Errorf("lane %s: %+v, want 1 queued", lane, byLane[lane])
				}
			}
			if by, err := s.QueueBySource(t.Context()); err != nil || by["stripe"] != (storage.Counts{Queued: 3}) {
				t.Errorf("QueueBySource = %v, %v", by, err)
			}
		}},
		{"NextDue", false, func(t *testing.T, s *Store, ev *storage.Event, at time.Time) {
			// one destination held: Lease expands the record for the others
			gate := &storage.Gate{Skip: map[string]bool{"stripe/billing": true}}
			due, ok, err := s.NextDue(t.Context(), gate)
			if err != nil || !ok || due.UnixMilli() != at.UnixMilli() {
				t.Fatalf("NextDue = %v, %v, %v; want %v", due, ok, err, at)
			}
			// every lane held: nothing is due (TestFanOutHeld)
			gate = &storage.Gate{Skip: map[string]bool{"stripe": true, "stripe~replay": true}}
			if due, ok, err := s.NextDue(t.Context(), gate); err != nil || ok {
				t.Fatalf("NextDue with every lane held = %v, %v, %v; want nothing", due, ok, err)
			}
		}},
		{"Erase", true, func(t *testing.T, s *Store, ev *storage.Event, at time.Time) {
			res, err := s.Erase(t.Context(), ev.Source, ev.EventID, time.Now())
			if err != nil || res.ID != ev.ID || res.Deliveries != 3 {
				t.Fatalf("Erase = %+v, %v", res, err)
			}
			p := s.partitionForEvent(ev)
			for _, k := range []string{p.fan(ev.ID), p.payload(ev.ID), p.deliveries(ev.ID), p.ev(ev.ID)} {
				if n := s.c.Exists(t.Context(), k).Val(); n != 0 {
					t.Errorf("%s left after Erase", k)
				}
			}
			if n := s.c.ZCard(t.Context(), p.key("fan")).Val(); n != 0 {
				t.Errorf("fan-out index: %d entries left", n)
			}
			if jobs, err := s.Lease(t.Context(), time.Now(), 10, time.Minute, nil); err != nil || len(jobs) != 0 {
				t.Errorf("Lease after Erase = %d jobs, %v", len(jobs), err)
			}
		}},
		{"Cleanup", true, func(t *testing.T, s *Store, ev *storage.Event, at time.Time) {
			if _, err := s.Cleanup(t.Context(), time.Now().Add(48*time.Hour), time.Hour, time.Hour); err != nil {
				t.Fatal(err)
			}
			if !hasFanRecord(t, s, ev) {
				t.Fatal("Cleanup removed a queued event's record")
			}
			if jobs, err := s.Lease(t.Context(), time.Now(), 10, time.Minute, nil); err != nil || len(jobs) != 3 {
				t.Errorf("Lease after Cleanup = %d jobs, %v; want 3", len(jobs), err)
			}
		}},
		{"LeaseGated", true, func(t *testing.T, s *Store, ev *storage.Event, at time.Time) {
			// one destination held back: the others are leased, it waits
			gate := &storage.Gate{Skip: map[string]bool{"stripe/billing": true}}
			jobs, err := s.Lease(t.Context(), time.Now(), 10, time.Minute, gate)
			if err != nil || len(jobs) != 2 {
				t.Fatalf("Lease = %d jobs, %v; want 2", len(jobs), err)
			}
			for _, j := range jobs {
				if j.Destination == "billing" || string(j.Body) != string(ev.Body) {
					t.Errorf("leased %s (%s), body %q", j.ID, j.Destination, j.Body)
				}
			}
			if c, err := s.Counts(t.Context()); err != nil || c != (storage.Counts{Queued: 1, InFlight: 2}) {
				t.Errorf("Counts = %+v, %v; want 1 queued, 2 in flight", c, err)
			}
			info, err := s.Lookup(t.Context(), ev.Source, ev.EventID)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range info.Deliveries {
				want := storage.StatusInFlight
				if d.Destination == "billing" {
					want = storage.StatusQueued
				}
				if d.Status != want {
					t.Errorf("delivery %s: %s, want %s", d.Destination, d.Status, want)
				}
			}
			// the held destination's delivery dies on its own, with its payload
			rest, err := s.Lease(t.Context(), time.Now(), 10, time.Minute, nil)
			if err != nil || len(rest) != 1 || rest[0].Destination != "billing" {
				t.Fatalf("Lease ungated = %v, %v; want billing's", rest, err)
			}
			if err := s.Finish(t.Context(), rest[0], storage.Outcome{Result: storage.Dead, Error: "gone"}); err != nil {
				t.Fatal(err)
			}
			if e, err := s.DLQGet(t.Context(), rest[0].ID); err != nil || string(e.Payload) != string(ev.Body) {
				t.Errorf("DLQ entry %+v, %v", e, err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at := time.Now()
			s := openTest(t, srv.Addr, Options{Prefix: redistest.Prefix(), Partitions: 4, Now: func() time.Time { return at }})
			ev := payloadEvent("evt_" + strings.ToLower(tc.name))
			if _, err := s.Enqueue(t.Context(), ev, time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			if !hasFanRecord(t, s, ev) {
				t.Fatal("enqueued without a fan-out record")
			}
			tc.check(t, s, ev, at)
			if left := hasFanRecord(t, s, ev); left == tc.expands {
				t.Errorf("record left %v after %s, want %v", left, tc.name, !tc.expands)
			}
		})
	}
}

// TestFanOutNotForOrdered: an event with an ordered delivery, and one
// with a single delivery, are stored in the usual form at once.
func TestFanOutNotForOrdered(t *testing.T) {
	srv := redistest.Start(t)
	s := openTest(t, srv.Addr, Options{Prefix: redistest.Prefix(), Partitions: 4})
	ordered := payloadEvent("evt_ordered")
	ordered.Deliveries[1].OrderKey = "customer-1"
	one := storagetest.NewEvent("stripe", "evt_one")
	for _, ev := range []*storage.Event{ordered, one} {
		if _, err := s.Enqueue(t.Context(), ev, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if hasFanRecord(t, s, ev) {
			t.Errorf("%s stored as a fan-out record", ev.EventID)
		}
	}
}

var commandStat = regexp.MustCompile(`cmdstat_([a-z|]+):calls=(\d+)`)

// commandCalls reads the server's count of each command since its last
// CONFIG RESETSTAT (the commands scripts run included).
func commandCalls(t *testing.T, c redis.UniversalClient) map[string]int {
	t.Helper()
	info, err := c.Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, m := range commandStat.FindAllStringSubmatch(info, -1) {
		out[m[1]], _ = strconv.Atoi(m[2])
	}
	return out
}

// TestFanOutEnqueueCommands guards the cost of a fan-out enqueue, which is
// counted, not timed: the Redis commands the enqueue of an event with
// three deliveries runs (its script's included) are the claim's and three
// more (one record, one index entry, one counter), no more than an event
// with one delivery costs, and it adds two keys (claim, record) to a
// partition's.
func TestFanOutEnqueueCommands(t *testing.T) {
	srv := redistest.Start(t)
	prefix := redistest.Prefix()
	s := openTest(t, srv.Addr, Options{Prefix: prefix, Partitions: 1})
	ctx := t.Context()
	if err := s.CheckLayout(ctx); err != nil {
		t.Fatal(err)
	}
	// scripts loaded, connections open: what is counted is the enqueue alone
	for _, ev := range []*storage.Event{payloadEvent("evt_warm_fan"), storagetest.NewEvent("stripe", "evt_warm_one")} {
		if _, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	keysBefore := s.c.DBSize(ctx).Val()
	run := func(ev *storage.Event) map[string]int {
		t.Helper()
		if err := s.c.ConfigResetStat(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		calls := commandCalls(t, s.c)
		delete(calls, "config|resetstat")
		delete(calls, "hello") // a connection of the pool opened
		return calls
	}
	fan := run(payloadEvent("evt_count_fan"))
	// get, hmget: the claim, the claim cut; set: the claim, the record;
	// zadd: the fan-out index, the events index
	want := map[string]int{"evalsha": 1, "exists": 1, "get": 1, "hmget": 1, "set": 2, "zadd": 2, "hincrby": 1}
	if !maps.Equal(fan, want) {
		t.Errorf("commands of a fan-out enqueue %v, want %v", fan, want)
	}
	if n := s.c.DBSize(ctx).Val() - keysBefore; n != 2 {
		t.Errorf("a fan-out enqueue added %d keys, want 2 (claim, record)", n)
	}
	one := run(storagetest.NewEvent("stripe", "evt_count_one"))
	total := func(m map[string]int) (n int) {
		for cmd, k := range m {
			if cmd != "evalsha" {
				n += k
			}
		}
		return n
	}
	if total(fan) > total(one) {
		t.Errorf("a fan-out enqueue runs %d commands, one delivery %d (%v)", total(fan), total(one), one)
	}
}

// TestFanOutEnqueueRetried: the enqueue of a fan-out record run twice (a
// reply lost, go-redis sending it again) stores the event once, before
// and after its expansion.
func TestFanOutEnqueueRetried(t *testing.T) {
	srv := redistest.Start(t)
	s := openTest(t, srv.Addr, Options{Prefix: redistest.Prefix(), Partitions: 4})
	ctx := t.Context()
	ev := payloadEvent("evt_retried")
	jobs, destinations, err := storage.DeliveriesOf(ev)
	if err != nil {
		t.Fatal(err)
	}
	payload := storage.SharePayload(jobs, false)
	p := s.partitionForEvent(ev)
	ck := storage.ClaimKey(ev.Source, ev.EventID)
	now := time.Now()
	call, err := fanCall(p, ck, ev.ID, ms(now), []any{ev.ID, "1", ms(now.Add(time.Hour)), ms(now), ck, "0", ev.Source}, jobs, destinations, payload)
	if err != nil {
		t.Fatal(err)
	}
	for round, expand := range []bool{false, true} {
		for range 2 {
			v, err := s.eval(ctx, fanEnqueueScript, call.keys, call.args...)
			if res, _ := v.([]any); err != nil || len(res) != 2 || res[0] != int64(0) || res[1] != ev.ID {
				t.Fatalf("round %d: reply %v, %v; want stored", round, v, err)
			}
		}
		if expand {
			expandEvent(t, s, ev)
		}
		if c, err := s.Counts(ctx); err != nil || c != (storage.Counts{Queued: 3}) {
			t.Errorf("round %d: Counts = %+v, %v; want 3 queued", round, c, err)
		}
	}
	if _, err := s.Lookup(ctx, ev.Source, ev.EventID); err != nil && !errors.Is(err, storage.ErrNotFound) {
		t.Fatal(err)
	}
}

// TestFanOutMalformedRecord: a record that does not parse (never written
// so) is taken out of the index and kept, not expanded in part, and the
// partition's other events are leased as before.
func TestFanOutMalformedRecord(t *testing.T) {
	srv := redistest.Start(t)
	s := openTest(t, srv.Addr, Options{Prefix: redistest.Prefix(), Partitions: 1})
	ctx := t.Context()
	ev := payloadEvent("evt_fine")
	if _, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	p := s.parts[0]
	for i, rec := range []string{
		"1\nstripe\n0\n0\n", // lines missing
		"1\nstripe\n0\n0\n99\nbad~billing\nstripe/billing", // shorter than it says
		"1\nstripe\n0\n0\n26\nbad~billing\nstripe/billing", // a delivery without its JSON
	} {
		id := fmt.Sprintf("bad%d", i)
		if err := s.c.Set(ctx, p.fan(id), rec, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := s.c.ZAdd(ctx, p.key("fan"), redis.Z{Score: 1, Member: id}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := s.Lease(ctx, time.Now(), 10, time.Minute, nil)
	if err != nil || len(jobs) != 3 {
		t.Fatalf("Lease = %d jobs, %v; want the 3 of the well-formed event", len(jobs), err)
	}
	if s.c.Exists(ctx, p.fan("bad0"), p.fan("bad1"), p.fan("bad2")).Val() != 3 || s.c.ZCard(ctx, p.key("fan")).Val() != 0 || s.c.Exists(ctx, p.ev("bad~billing")).Val() != 0 {
		t.Error("want the malformed record kept, out of the index, and nothing of it expanded")
	}
}

// TestFanOutExpandedAsLeased: Lease expands records only when it finds
// fewer due jobs than it wants, the oldest first, as many as are missing
// (a delivery's keys are written as the workers need jobs, not as events
// arrive); the others stay records, counted in their lanes.
func TestFanOutExpandedAsLeased(t *testing.T) {
	srv := redistest.Start(t)
	s := openTest(t, srv.Addr, Options{Prefix: redistest.Prefix(), Partitions: 1})
	ctx := t.Context()
	var evs []*storage.Event
	for i := range 3 {
		ev := payloadEvent(fmt.Sprintf("evt_lazy_%d", i))
		ev.ReceivedAt = time.Now()
		if _, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
		time.Sleep(2 * time.Millisecond) // distinct due times
	}
	jobs, err := s.Lease(ctx, time.Now(), 1, time.Minute, nil)
	if err != nil || len(jobs) != 1 || storage.EventIDOfDelivery(jobs[0].ID) != evs[0].ID {
		t.Fatalf("Lease(1) = %v, %v; want a delivery of the oldest event", jobs, err)
	}
	for i, ev := range evs {
		if got := hasFanRecord(t, s, ev); got != (i > 0) {
			t.Errorf("event %d: record left %v", i, got)
		}
	}
	if c, err := s.Counts(ctx); err != nil || c != (storage.Counts{Queued: 8, InFlight: 1}) {
		t.Errorf("Counts = %+v, %v; want 8 queued, 1 in flight", c, err)
	}
	byLane, err := s.QueueByLane(ctx)
	if err != nil || byLane["stripe/crm"] != (storage.Counts{Queued: 3}) && byLane["stripe/crm"] != (storage.Counts{Queued: 2, InFlight: 1}) {
		t.Errorf("QueueByLane = %v, %v", byLane, err)
	}
	// the first event's other deliveries are due: nothing more is expanded
	if jobs, err := s.Lease(ctx, time.Now(), 1, time.Minute, nil); err != nil || len(jobs) != 1 || storage.EventIDOfDelivery(jobs[0].ID) != evs[0].ID {
		t.Fatalf("Lease(1) again = %v, %v; want another delivery of the oldest event", jobs, err)
	}
	if !hasFanRecord(t, s, evs[1]) {
		t.Error("a record was expanded while due jobs were waiting")
	}
	if rest, err := s.Lease(ctx, time.Now(), 10, time.Minute, nil); err != nil || len(rest) != 7 {
		t.Errorf("Lease(10) = %d jobs, %v; want the 7 others", len(rest), err)
	}
	if n := s.c.Exists(ctx, s.parts[0].key("fanlanes")).Val(); n != 0 {
		t.Error("fanlanes counters left once every record is expanded")
	}
}

// TestFanOutTakesTurns: a fanned-out event is not starved by a busy lane
// of its partition: its record takes turns with the lanes (lane "") and is
// expanded when picked, and its deliveries then take theirs.
func TestFanOutTakesTurns(t *testing.T) {
	srv := redistest.Start(t)
	s := openTest(t, srv.Addr, Options{Prefix: redistest.Prefix(), Partitions: 1})
	ctx := t.Context()
	for i := range 20 {
		if _, err := s.Enqueue(ctx, storagetest.NewEvent("github", fmt.Sprintf("evt_busy_%d", i)), time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	ev := payloadEvent("evt_turns")
	if _, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	var fanned []string
	for round := range 2 {
		jobs, err := s.Lease(ctx, time.Now(), 4, time.Minute, nil)
		if err != nil || len(jobs) == 0 {
			t.Fatalf("round %d: Lease = %d jobs, %v", round, len(jobs), err)
		}
		for _, j := range jobs {
			if j.Source == "stripe" {
				fanned = append(fanned, j.ID)
			}
		}
	}
	if len(fanned) != 3 {
		t.Errorf("leased %v of the fanned-out event in two rounds beside a busy lane, want its 3 deliveries", fanned)
	}
}

// TestFanOutHeld: while the gate holds every lane of every fan-out record
// (its source paused with accept), Lease expands none and NextDue reports
// none: the records wait as stored, and ingest is not slowed by their
// expansion. Held in part (one destination, or another source's records
// flowing), they are expanded as before; released, they are leased.
func TestFanOutHeld(t *testing.T) {
	srv := redistest.Start(t)
	s := openTest(t, srv.Addr, Options{Prefix: redistest.Prefix(), Partitions: 1})
	ctx := t.Context()
	ev := payloadEvent("evt_held")
	if _, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	held := &storage.Gate{Skip: map[string]bool{"stripe": true}}
	for range 3 {
		if jobs, err := s.Lease(ctx, time.Now(), 8, time.Minute, held); err != nil || len(jobs) != 0 {
			t.Fatalf("Lease held = %v, %v; want nothing", jobs, err)
		}
	}
	if !hasFanRecord(t, s, ev) {
		t.Fatal("a held record was expanded")
	}
	if _, ok, err := s.NextDue(ctx, held); err != nil || ok {
		t.Errorf("NextDue held = %v, %v; want nothing due", ok, err)
	}
	if c, err := s.Counts(ctx); err != nil || c != (storage.Counts{Queued: 3}) {
		t.Errorf("Counts held = %+v, %v; want its 3 deliveries queued", c, err)
	}
	// one destination held: the others must go, so the record is expanded
	// and the held delivery waits in its own lane
	part := &storage.Gate{Skip: map[string]bool{"stripe/crm": true}}
	if due, ok, err := s.NextDue(ctx, part); err != nil || !ok || due.After(time.Now()) {
		t.Errorf("NextDue with one destination held = %v, %v, %v; want due", due, ok, err)
	}
	jobs, err := s.Lease(ctx, time.Now(), 8, time.Minute, part)
	if err != nil || len(jobs) != 2 {
		t.Fatalf("Lease with one destination held = %d jobs, %v; want 2", len(jobs), err)
	}
	for _, j := range jobs {
		if j.Destination == "crm" {
			t.Errorf("leased the held destination's delivery %s", j.ID)
		}
	}
	if hasFanRecord(t, s, ev) {
		t.Error("record not expanded with one destination held")
	}
	// another source's record flowing beside a held one: expanded, and
	// the held one waits (expanded with it or not, never leased)
	other := payloadEvent("evt_other")
	other.Source = "shopify"
	ev2 := payloadEvent("evt_held_2")
	for _, e := range []*storage.Event{ev2, other} {
		if _, err := s.Enqueue(ctx, e, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]int{}
	for range 3 {
		jobs, err := s.Lease(ctx, time.Now(), 8, time.Minute, held)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			got[j.Source]++
		}
	}
	if got["stripe"] != 0 || got["shopify"] != 3 {
		t.Errorf("leased by source %v beside a held source; want shopify's 3 deliveries only", got)
	}
	// released: the held deliveries go
	rest, err := s.Lease(ctx, time.Now(), 8, time.Minute, nil)
	if err != nil || len(rest) != 4 {
		t.Errorf("Lease released = %d jobs, %v; want the crm delivery and evt_held_2's 3", len(rest), err)
	}
}

// TestFanPayloadAt: the rekey finds a fan-out record's payload where
// expandFan does, whatever its claim key holds, and leaves a record that
// does not parse alone.
func TestFanPayloadAt(t *testing.T) {
	payload := []byte("\x01payload\nwith a newline")
	ds := []fanDelivery{{id: "e1", lane: "stripe", doc: []byte(`{"id":"e1"}`)}, {id: "e1~crm", lane: "stripe/crm", doc: []byte(`{"id":"e1~crm"}`)}}
	for _, tc := range []struct {
		name, ck, dests string
		payload         []byte
	}{
		{"plain", "stripe\x00evt_1", "billing,crm", payload},
		{"claim key with newlines", "stripe\x00evt\n\n\n1", "crm", payload},
		{"no claim", "", "", payload},
		{"empty payload", "stripe\x00evt_1", "crm", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := string(fanRecord(123, "stripe", tc.ck, tc.dests, ds, tc.payload))
			at, ok := fanPayloadAt(rec)
			if !ok || rec[at:] != string(tc.payload) {
				t.Fatalf("fanPayloadAt = %d, %v: tail %q, want %q", at, ok, rec[min(at, len(rec)):], tc.payload)
			}
		})
	}
	for _, bad := range []string{"", "123\nstripe\n", "1\ns\nx\n0\n0\n", "1\ns\n5\n0\n0\nab", "1\ns\n-1\n0\n0\n", "1\ns\n9223372036854775807\n9223372036854775807\n2\nab"} {
		if at, ok := fanPayloadAt(bad); ok {
			t.Errorf("fanPayloadAt(%q) = %d, true; want false", bad, at)
		}
	}
}

// TestRekeyFanExpanded: a fan-out record that a lease expands after the
// rekey's scan named it, and before the rekey reads it, leaves a payload
// record the scan may never meet: the rekey of the record's key re-seals
// that payload record.
func TestRekeyFanExpanded(t *testing.T) {
	srv := redistest.Start(t)
	s := openTest(t, srv.Addr, Options{Prefix: redistest.Prefix(), Partitions: 4})
	ctx := t.Context()
	ev := payloadEvent("evt_rekey_fan")
	if _, err := storage.NewSealingStore(s, storagetest.TestKeyring(t, 1)).Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	p := s.partitionForEvent(ev)
	if !hasFanRecord(t, s, ev) {
		t.Fatal("not stored as a fan-out record")
	}
	expandEvent(t, s, ev) // after the scan named p.fan(ev.ID)
	var step storage.RekeyStep
	if err := s.rekeyKey1(ctx, storagetest.TestKeyring(t, 2, 1), p, p.fan(ev.ID), &step); err != nil {
		t.Fatal(err)
	}
	if step.Resealed != 1 || step.Failed != 0 {
		t.Errorf("rekey of the expanded record's key = %+v, want its payload record resealed", step)
	}
	jobs, err := storage.NewSealingStore(s, storagetest.TestKeyring(t, 2)).Lease(ctx, time.Now(), 10, time.Minute, nil)
	if err != nil || len(jobs) != 3 {
		t.Fatalf("Lease under the new key alone = %d jobs, %v; want 3", len(jobs), err)
	}
	for _, j := range jobs {
		if !bytes.Equal(j.Body, ev.Body) {
			t.Errorf("job %s: body %q", j.ID, j.Body)
		}
	}
}
