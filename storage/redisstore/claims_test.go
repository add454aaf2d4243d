package redisstore

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/storagetest"
)

// toLayout1 rewrites ev's claim as layout 1 wrote it: the claim holding
// the event's id with a TTL to until, its ids key, its end in the claim
// expiry index.
func toLayout1(t *testing.T, s *Store, ev *storage.Event, until time.Time) {
	t.Helper()
	ck := storage.ClaimKey(ev.Source, ev.EventID)
	p := s.partitionForEvent(ev)
	_, err := s.c.TxPipelined(t.Context(), func(pipe redis.Pipeliner) error {
		pipe.Do(t.Context(), "SET", p.claim(ck), ev.ID, "PXAT", ms(until))
		pipe.Set(t.Context(), p.ids(ck), ev.ID, 0)
		pipe.ZAdd(t.Context(), p.key("claimexp"), redis.Z{Score: float64(ms(until)), Member: ck})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// deliver leases and delivers the job of event id (the only one due).
func deliver(t *testing.T, s *Store, id string) {
	t.Helper()
	jobs := leaseAll(t, s)
	if len(jobs) != 1 || jobs[0].ID != id {
		t.Fatalf("Lease = %d jobs; want %s alone", len(jobs), id)
	}
	out := storage.Outcome{Result: storage.Delivered, Attempt: &storage.Attempt{N: 1, At: time.Now(), Status: 200}}
	if err := s.Finish(t.Context(), jobs[0], out); err != nil {
		t.Fatal(err)
	}
}

// TestClaimsOfLayout1: a store of layout 1 moves to layout 3 at its first
// check, and the claims it holds keep their meaning: a resend within one
// is a duplicate, the event is found by its provider's id through its ids
// key once Cleanup ended the claim, a later event then takes the id (and
// keeps it when the earlier one goes), and the claim expiry index's entry
// of an ended claim of layout 1 does not take the claim a later event
// wrote under the same key.
func TestClaimsOfLayout1(t *testing.T) {
	srv := redistest.Start(t)
	s := openTest(t, srv.Addr, Options{Prefix: redistest.Prefix(), Partitions: 4})
	ctx := t.Context()
	if err := s.CheckLayout(ctx); err != nil {
		t.Fatal(err)
	}
	// the store as layout 1 left it
	if err := s.c.HSet(ctx, s.layoutKey(), "partitions", "4").Err(); err != nil {
		t.Fatal(err)
	}
	s.layout.ok.Store(false)
	if err := s.CheckLayout(ctx); err != nil {
		t.Fatal(err)
	}
	if v := s.c.HGet(ctx, s.layoutKey(), "partitions").Val(); v != "4"+layout3 {
		t.Fatalf("layout field after the check %q, want %q", v, "4"+layout3)
	}

	now := time.Now()
	until := now.Add(time.Hour)
	old := storagetest.NewEvent("stripe", "evt_layout1")
	if _, err := s.Enqueue(ctx, old, until); err != nil {
		t.Fatal(err)
	}
	toLayout1(t, s, old, until)
	ck := storage.ClaimKey(old.Source, old.EventID)
	p := s.partitionForEvent(old)

	res, err := s.Enqueue(ctx, storagetest.NewEvent("stripe", "evt_layout1"), now.Add(2*time.Hour))
	if err != nil || !res.Duplicate || res.ID != old.ID {
		t.Fatalf("resend within a claim of layout 1 = %+v, %v; want a duplicate of %s", res, err, old.ID)
	}
	if left := res.DedupeUntil.Sub(until); left < -time.Second || left > time.Second {
		t.Errorf("duplicate's DedupeUntil %v, want about %v", res.DedupeUntil, until)
	}
	deliver(t, s, old.ID)

	// Cleanup past the window: the claim of layout 1 goes, the ids key
	// still names the kept event
	if _, err := s.Cleanup(ctx, now.Add(90*time.Minute), 7*24*time.Hour, 0); err != nil {
		t.Fatal(err)
	}
	if n := s.c.Exists(ctx, p.claim(ck)).Val(); n != 0 {
		t.Error("the ended claim of layout 1 is left after Cleanup")
	}
	if info, err := s.Lookup(ctx, "stripe", "evt_layout1"); err != nil || info.ID != old.ID {
		t.Fatalf("Lookup through the ids key of layout 1 = %+v, %v; want %s", info, err, old.ID)
	}

	// a later event takes the provider's id, one key a claim
	later := storagetest.NewEvent("stripe", "evt_layout1")
	if res, err := s.Enqueue(ctx, later, now.Add(3*time.Hour)); err != nil || res.Duplicate {
		t.Fatalf("enqueue after the claim of layout 1 ended = %+v, %v; want stored", res, err)
	}
	// written after one Cleanup of its partition
	if v := s.c.Get(ctx, p.claim(ck)).Val(); v != later.ID+claimSep+strconv.FormatInt(ms(now.Add(3*time.Hour)), 10)+claimSep+"1" {
		t.Errorf("claim %q, want the later event's of layout 2", v)
	}
	if info, err := s.Lookup(ctx, "stripe", "evt_layout1"); err != nil || info.ID != later.ID {
		t.Fatalf("Lookup once a later event took the id = %+v, %v; want %s", info, err, later.ID)
	}
	if res, err := s.Enqueue(ctx, storagetest.NewEvent("stripe", "evt_layout1"), now.Add(3*time.Hour)); err != nil || !res.Duplicate || res.ID != later.ID {
		t.Fatalf("resend within the later claim = %+v, %v; want a duplicate of %s", res, err, later.ID)
	}
	// the earlier event past retention: its ids key goes, the later claim stays
	if _, err := s.Cleanup(ctx, now.Add(100*time.Minute), time.Millisecond, 0); err != nil {
		t.Fatal(err)
	}
	if n := s.c.Exists(ctx, p.ids(ck)).Val(); n != 0 {
		t.Error("the ids key of layout 1 is left with its event gone")
	}
	if info, err := s.Lookup(ctx, "stripe", "evt_layout1"); err != nil || info.ID != later.ID {
		t.Fatalf("Lookup once the earlier event went = %+v, %v; want %s", info, err, later.ID)
	}

	// an ended claim of layout 1 still in the expiry index, its key gone
	// by its TTL and written again by a later event: Cleanup leaves that
	t.Run("stale expiry entry", func(t *testing.T) {
		gone := storagetest.NewEvent("stripe", "evt_stale")
		if _, err := s.Enqueue(ctx, gone, now.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		toLayout1(t, s, gone, now.Add(time.Minute))
		ck := storage.ClaimKey(gone.Source, gone.EventID)
		q := s.partitionForEvent(gone)
		if err := s.c.Del(ctx, q.claim(ck)).Err(); err != nil { // its TTL ran out
			t.Fatal(err)
		}
		taker := storagetest.NewEvent("stripe", "evt_stale")
		takerUntil := now.Add(5 * time.Hour)
		if res, err := s.Enqueue(ctx, taker, takerUntil); err != nil || res.Duplicate {
			t.Fatalf("enqueue over an expired claim of layout 1 = %+v, %v; want stored", res, err)
		}
		if _, err := s.Cleanup(ctx, now.Add(2*time.Hour), 7*24*time.Hour, 0); err != nil {
			t.Fatal(err)
		}
		if n := s.c.ZCard(ctx, q.key("claimexp")).Val(); n != 0 {
			t.Errorf("claim expiry index holds %d entries after Cleanup, want none", n)
		}
		if res, err := s.Enqueue(ctx, storagetest.NewEvent("stripe", "evt_stale"), takerUntil); err != nil || !res.Duplicate || res.ID != taker.ID {
			t.Fatalf("resend within the later claim after Cleanup swept the stale entry = %+v, %v; want a duplicate of %s", res, err, taker.ID)
		}
	})
}

// layout1Check is the check of the layout a node of layout 1 made, as
// released: its script, then strconv.Atoi of the field.
func layout1Check(t *testing.T, s *Store) error {
	t.Helper()
	sc := redis.NewScript(`
if redis.call('HSETNX', KEYS[1], 'partitions', ARGV[1]) == 1 then redis.call('SET', KEYS[2], '1') end
return redis.call('HGET', KEYS[1], 'partitions')
`)
	v, err := sc.Run(t.Context(), s.c, []string{s.layoutKey(), s.eventsIndexMarker()}, len(s.parts)).Text()
	if err != nil {
		t.Fatal(err)
	}
	_, err = strconv.Atoi(v)
	return err
}

// layout2Check is the check of the layout a node of layout 2 made, as
// released: its script (recording "N (layout 2)", moving "N" there), then
// its reading of the field (the count, alone or in layout 2).
func layout2Check(t *testing.T, s *Store) error {
	t.Helper()
	sc := redis.NewScript(`
if redis.call('HSETNX', KEYS[1], 'partitions', ARGV[2]) == 1 then redis.call('SET', KEYS[2], '1') end
local v = redis.call('HGET', KEYS[1], 'partitions')
if v == ARGV[1] then
	redis.call('HSET', KEYS[1], 'partitions', ARGV[2])
	v = ARGV[2]
end
return v
`)
	n := strconv.Itoa(len(s.parts))
	v, err := sc.Run(t.Context(), s.c, []string{s.layoutKey(), s.eventsIndexMarker()}, n, n+" (layout 2)").Text()
	if err != nil {
		t.Fatal(err)
	}
	count, rest, _ := strings.Cut(v, " ")
	if _, err := strconv.Atoi(count); err != nil {
		return err
	}
	if rest != "" && rest != "(layout 2)" {
		return fmt.Errorf("layout %q of a later version", v)
	}
	return nil
}

// TestLayoutRefused: this version moves a store of layout 1 or 2 to
// layout 3, which a node of either cannot read and refuses; it refuses a
// layout it does not know as unavailable, and leaves a store of an earlier
// layout with another partition count as it is (a *LayoutError).
func TestLayoutRefused(t *testing.T) {
	srv := redistest.Start(t)
	ctx := t.Context()
	for name, check := range map[string]func(*testing.T, *Store) error{"layout 1": layout1Check, "layout 2": layout2Check} {
		t.Run("from "+name, func(t *testing.T) {
			s := openTest(t, srv.Addr, Options{Prefix: redistest.Prefix(), Partitions: 4})
			if err := check(t, s); err != nil {
				t.Fatalf("%s's check of a new store: %v", name, err)
			}
			if err := s.CheckLayout(ctx); err != nil {
				t.Fatal(err)
			}
			if v := s.c.HGet(ctx, s.layoutKey(), "partitions").Val(); v != "4"+layout3 {
				t.Fatalf("layout field %q after the check, want %q", v, "4"+layout3)
			}
			for _, earlier := range []func(*testing.T, *Store) error{layout1Check, layout2Check} {
				if err := earlier(t, s); err == nil {
					t.Fatal("an earlier layout's check reads a store of layout 3")
				}
			}
		})
	}
	t.Run("later version", func(t *testing.T) {
		s := openTest(t, srv.Addr, Options{Prefix: redistest.Prefix(), Partitions: 4})
		if err := s.c.HSet(ctx, s.layoutKey(), "partitions", "4 (layout 4)").Err(); err != nil {
			t.Fatal(err)
		}
		err := s.CheckLayout(ctx)
		if !errors.Is(err, storage.ErrUnavailable) || !strings.Contains(err.Error(), "later version") {
			t.Fatalf("CheckLayout of layout 4: %v, want unavailable, written by a later version", err)
		}
		if _, err := s.Enqueue(ctx, storagetest.NewEvent("stripe", "evt_refused"), time.Now().Add(time.Hour)); !errors.Is(err, storage.ErrUnavailable) {
			t.Fatalf("Enqueue into a store of layout 4: %v, want unavailable", err)
		}
	})
	for _, stored := range []string{"8", "8" + layout2} {
		t.Run("another count "+stored, func(t *testing.T) {
			s := openTest(t, srv.Addr, Options{Prefix: redistest.Prefix(), Partitions: 4})
			if err := s.c.HSet(ctx, s.layoutKey(), "partitions", stored).Err(); err != nil {
				t.Fatal(err)
			}
			var le *LayoutError
			if err := s.CheckLayout(ctx); !errors.As(err, &le) || le.Stored != 8 {
				t.Fatalf("CheckLayout of a store of 8 partitions: %v, want a *LayoutError (8)", err)
			}
			if v := s.c.HGet(ctx, s.layoutKey(), "partitions").Val(); v != stored {
				t.Errorf("layout field %q after a refused check, want it left %q", v, stored)
			}
		})
	}
}

// TestClaimCut: a Cleanup at a time ahead of the enqueues' clock ends the
// claims that exist when it runs and whose window ended before it, and
// only those: a claim written after it holds to its own end, and one
// written before it but ending after it holds too. An erasure reads a
// claim the cut ended as ended: no tombstone, the claim gone.
func TestClaimCut(t *testing.T) {
	srv := redistest.Start(t)
	s := openTest(t, srv.Addr, Options{Prefix: redistest.Prefix(), Partitions: 4})
	ctx := t.Context()
	now := time.Now()
	enqueue := func(eventID string, until time.Time) storage.EnqueueResult {
		t.Helper()
		res, err := s.Enqueue(ctx, storagetest.NewEvent("stripe", eventID), until)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	enqueue("evt_before_short", now.Add(time.Hour))
	enqueue("evt_before_long", now.Add(3*time.Hour))
	erased := storagetest.NewEvent("stripe", "evt_erased")
	if _, err := s.Enqueue(ctx, erased, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	// a node whose clock runs two hours ahead cleans up
	if _, err := s.Cleanup(ctx, now.Add(2*time.Hour), 24*time.Hour, 0); err != nil {
		t.Fatal(err)
	}
	if res := enqueue("evt_before_short", now.Add(time.Hour)); res.Duplicate {
		t.Errorf("resend of a claim whose window ended before the Cleanup's time = %+v, want stored", res)
	}
	if res := enqueue("evt_before_long", now.Add(3*time.Hour)); !res.Duplicate {
		t.Errorf("resend of a claim whose window ends after the Cleanup's time = %+v, want a duplicate", res)
	}
	first := enqueue("evt_after", now.Add(time.Hour))
	if res := enqueue("evt_after", now.Add(time.Hour)); !res.Duplicate || res.ID != first.ID {
		t.Errorf("resend of a claim written after the Cleanup = %+v, want a duplicate of %s", res, first.ID)
	}
	res, err := s.Erase(ctx, "stripe", "evt_erased", now)
	if err != nil {
		t.Fatal(err)
	}
	if !res.DedupeUntil.IsZero() {
		t.Errorf("erasure of an event whose claim the Cleanup ended: DedupeUntil %v, want none", res.DedupeUntil)
	}
	p := s.partitionForEvent(erased)
	if n := s.c.Exists(ctx, p.claim(storage.ClaimKey("stripe", "evt_erased")), p.erased(erased.ID)).Val(); n != 0 {
		t.Errorf("%d of the claim and tombstone of an erased event whose claim ended are left, want none", n)
	}
}
