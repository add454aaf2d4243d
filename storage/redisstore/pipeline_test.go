package redisstore

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/storagetest"
	"github.com/redis/go-redis/v9"
)

func TestManyCalls(t *testing.T) {
	for _, tc := range []struct {
		name   string
		calls  []scriptCall
		merged []scriptCall
		groups [][]int
	}{
		{
			name:   "one call",
			calls:  []scriptCall{{keys: []string{"{p:0}:ev:a", "{p:0}:inflight"}, args: []any{"a", 1}}},
			merged: []scriptCall{{keys: []string{"{p:0}:ev:a", "{p:0}:inflight"}, args: []any{2, 2, "a", 1}}},
			groups: [][]int{{0}},
		},
		{
			name: "two partitions, interleaved, each keeping its order",
			calls: []scriptCall{
				{keys: []string{"{p:1}:ev:a"}, args: []any{"a"}},
				{keys: []string{"{p:0}:ev:b"}, args: []any{"b", "x"}},
				{keys: []string{"{p:1}:ev:c"}, args: []any{"c", "y", "z"}},
			},
			merged: []scriptCall{
				{keys: []string{"{p:1}:ev:a", "{p:1}:ev:c"}, args: []any{1, 1, "a", 1, 3, "c", "y", "z"}},
				{keys: []string{"{p:0}:ev:b"}, args: []any{1, 2, "b", "x"}},
			},
			groups: [][]int{{0, 2}, {1}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			merged, groups := manyCalls(tc.calls)
			if !reflect.DeepEqual(merged, tc.merged) || !reflect.DeepEqual(groups, tc.groups) {
				t.Errorf("manyCalls = %v, %v; want %v, %v", merged, groups, tc.merged, tc.groups)
			}
		})
	}
}

// TestFinishManyIsolatesErrors: finishManyScript runs each job's finish on
// its own: a job whose record is broken (a command on it raises an error)
// answers that error, a job whose lease was lost answers 0, and the jobs
// after them are finished.
func TestFinishManyIsolatesErrors(t *testing.T) {
	srv := redistest.Start(t)
	s := openTest(t, srv.Addr, Options{Prefix: redistest.Prefix(), Partitions: 1})
	ctx := t.Context()
	for i := range 4 {
		if _, err := s.Enqueue(ctx, storagetest.NewEvent("stripe", "evt_many_"+string(rune('a'+i))), time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := s.Lease(ctx, time.Now(), 4, time.Minute, nil)
	if err != nil || len(jobs) != 4 {
		t.Fatalf("Lease = %d jobs, %v", len(jobs), err)
	}
	p := s.parts[0]
	// jobs[1]'s record is no longer a hash; jobs[2] lost its lease
	if err := s.c.Set(ctx, p.ev(jobs[1].ID), "broken", 0).Err(); err != nil {
		t.Fatal(err)
	}
	jobs[2].Lease = jobs[2].Lease + "-stale"
	var calls []scriptCall
	for _, j := range jobs {
		lane := storage.LaneOf(&j.Event)
		calls = append(calls, scriptCall{
			keys: p.finishKeys(j.ID, lane),
			args: []any{j.ID, j.Lease, "delivered", ms(time.Now()), ms(time.Now()), "[]", "", "", j.Source, lane, "", "0", "", "", ""},
		})
	}
	merged, _ := manyCalls(calls)
	if len(merged) != 1 {
		t.Fatalf("%d merged calls for one partition", len(merged))
	}
	v, err := s.eval(ctx, finishManyScript, merged[0].keys, merged[0].args...)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := v.([]any)
	if len(got) != 4 || got[0] != int64(1) || got[2] != int64(0) || got[3] != int64(1) {
		t.Fatalf("replies %#v; want 1, an error, 0, 1", got)
	}
	if msg, _ := got[1].(string); !strings.HasPrefix(msg, "ERR ") || !strings.Contains(msg, "WRONGTYPE") {
		t.Errorf("the broken job's reply is %q, want its WRONGTYPE error", got[1])
	}
	for _, k := range []int{0, 3} {
		if st := s.c.HGet(ctx, p.ev(jobs[k].ID), "st").Val(); st != "delivered" {
			t.Errorf("job %d after the batch: %q, want delivered", k, st)
		}
	}
	if st := s.c.HGet(ctx, p.ev(jobs[2].ID), "st").Val(); st != "in_flight" {
		t.Errorf("the job whose lease was lost: %q, want in_flight still", st)
	}
}

// failDests is a go-redis hook failing, as a lost connection would, the
// pipelined GET of one event's deliveries index (the others answer).
type failDests struct{ key string }

func (h failDests) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h failDests) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h failDests) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			if a := c.Args(); len(a) == 2 && a[0] == "get" && a[1] == h.key {
				c.(*redis.StringCmd).SetVal("") // nothing was read
				c.SetErr(errors.New("injected: connection lost"))
			}
		}
		return err
	}
}

// TestCleanupReadFails: a read of the cleanup's round that fails is not
// taken for a key that is not there, even behind a redis.Nil (go-redis
// reports a pipeline's first error only): the round fails, and the event
// whose deliveries index it could not read keeps its payload and index
// for the delivery still queued.
func TestCleanupReadFails(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	s := New(c, Options{Prefix: redistest.Prefix(), Partitions: 1})
	defer s.Close()
	ctx := t.Context()
	plain := storagetest.NewEvent("stripe", "evt_plain")
	fan := storagetest.NewEvent("stripe", "evt_fan")
	fan.Deliveries = []storage.Delivery{{Destination: "default", Upstream: "http://127.0.0.1:1/"}, {Destination: "billing", Upstream: "http://127.0.0.1:1/b"}}
	for _, ev := range []*storage.Event{plain, fan} {
		if _, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		for _, j := range leaseAll(t, s) {
			out := storage.Outcome{Result: storage.Delivered, Attempt: &storage.Attempt{N: 1, At: time.Now(), Status: 200}}
			if storage.DestinationOf(&j.Event) == "billing" {
				out = storage.Outcome{Result: storage.Release}
			}
			if err := s.Finish(ctx, j, out); err != nil {
				t.Fatal(err)
			}
		}
	}
	p := s.partitionForEvent(fan)
	c.AddHook(failDests{key: p.deliveries(fan.ID)})
	if _, err := s.Cleanup(ctx, time.Now().Add(2*time.Hour), time.Hour, 0); !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("Cleanup with a read lost: %v, want ErrUnavailable", err)
	}
	for _, k := range []string{p.deliveries(fan.ID), p.payload(fan.ID)} {
		if n, err := s.c.Exists(ctx, k).Result(); err != nil || n != 1 {
			t.Errorf("%s: exists %d, %v; want kept for billing's delivery", k, n, err)
		}
	}
}

// leaseAll leases every job due now.
func leaseAll(t *testing.T, s *Store) []*storage.Job {
	t.Helper()
	jobs, err := s.Lease(t.Context(), time.Now().Add(time.Second), 10, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

// TestCleanupRounds: a cleanup of more than a round (cleanupBatch) of
// delivered jobs, and then of DLQ entries, takes them all, round after
// round, with their claims, which ended.
func TestCleanupRounds(t *testing.T) {
	srv := redistest.Start(t)
	s := openTest(t, srv.Addr, Options{Prefix: redistest.Prefix(), Partitions: 1})
	ctx := t.Context()
	n := 2*cleanupBatch + 7
	for _, result := range []storage.Result{storage.Delivered, storage.Dead} {
		storagetest.LoadFinished(t, s, n, 16, result)
		removed, err := s.Cleanup(ctx, time.Now().Add(2*time.Hour), time.Minute, time.Minute)
		if err != nil || removed < n {
			t.Fatalf("Cleanup of %d events (result %d): removed %d, %v", n, result, removed, err)
		}
		p := s.parts[0]
		for _, k := range []string{p.key("done"), p.key("dlqidx"), p.events(), p.key("claimexp")} {
			if c, err := s.c.ZCard(ctx, k).Result(); err != nil || c != 0 {
				t.Errorf("result %d: %s holds %d, %v; want nothing", result, k, c, err)
			}
		}
		for _, kind := range []string{"claim", "ids"} {
			if keys, err := s.c.Keys(ctx, p.tag+":"+kind+":*").Result(); err != nil || len(keys) != 0 {
				t.Errorf("result %d: %d %s keys left, %v", result, len(keys), kind, err)
			}
		}
	}
}
