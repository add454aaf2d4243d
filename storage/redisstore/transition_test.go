package redisstore

import (
	"errors"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/storagetest"
)

// deadJob enqueues, leases and kills one job in a new store on srv: it
// has a pending DLQ entry, and the store nothing else.
func deadJob(t *testing.T, srv *redistest.Server) (*Store, *storage.Job) {
	t.Helper()
	s := openTest(t, srv.Addr, Options{Prefix: redistest.Prefix(), Partitions: 4})
	ctx := t.Context()
	ev := storagetest.NewEvent("stripe", "evt_"+t.Name())
	if _, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	jobs, err := s.Lease(ctx, time.Now().Add(time.Second), 1, time.Minute, nil)
	if err != nil || len(jobs) != 1 || jobs[0].ID != ev.ID {
		t.Fatalf("lease: %d jobs, %v", len(jobs), err)
	}
	if err := s.Finish(ctx, jobs[0], storage.Outcome{Result: storage.Dead, Error: "gone"}); err != nil {
		t.Fatal(err)
	}
	return s, jobs[0]
}

// TestDLQTransitionsLuaAgreesWithGo: for every (from, to) pair of DLQ
// statuses, the scripts of DLQSetStatus and DLQRetry refuse exactly what
// storage.CheckDLQTransition refuses, and an allowed move leaves the entry in the
// open index iff storage.DLQStatus.Open says so. The status the script reads
// (the entry hash's st) is set to from while the entry's JSON, which the
// Go side reads first, stays pending: the script decides, as when the
// entry changed between the read and the script.
func TestDLQTransitionsLuaAgreesWithGo(t *testing.T) {
	srv := redistest.Start(t)
	ctx := t.Context()
	froms := []storage.DLQStatus{storage.DLQPending, storage.DLQInvestigating, storage.DLQResolved,
		storage.DLQDiscarded, storage.DLQRetried, "future"}
	tos := []storage.DLQStatus{storage.DLQPending, storage.DLQInvestigating, storage.DLQResolved,
		storage.DLQDiscarded, storage.DLQRetried, "bogus"}
	for _, from := range froms {
		for _, to := range tos {
			t.Run(string(from)+"->"+string(to), func(t *testing.T) {
				s, job := deadJob(t, srv)
				p, _ := s.leasePartition(job.Lease)
				key := p.dlqEntry(job.ID)
				if err := s.c.HSet(ctx, key, "st", string(from)).Err(); err != nil {
					t.Fatal(err)
				}
				want := storage.CheckDLQTransition(from, to)
				var err error
				if to == storage.DLQRetried {
					err = s.DLQRetry(ctx, job.ID, time.Now())
				} else {
					err = s.DLQSetStatus(ctx, job.ID, to, "text", time.Now())
				}
				if (err == nil) != (want == nil) || (err != nil && !errors.Is(err, storage.ErrConflict)) {
					t.Fatalf("Redis: %v; storage.CheckDLQTransition: %v", err, want)
				}
				st, err := s.c.HGet(ctx, key, "st").Result()
				if err != nil {
					t.Fatal(err)
				}
				if want != nil {
					if st != string(from) {
						t.Errorf("a refused move changed the status to %q", st)
					}
					return
				}
				if st != string(to) {
					t.Errorf("status after the move: %q, want %q", st, to)
				}
				open, err := s.c.SIsMember(ctx, p.key("dlqopen"), job.ID).Result()
				if err != nil || open != to.Open() {
					t.Errorf("in the open index: %v (%v), want %v", open, err, to.Open())
				}
			})
		}
	}
}

// TestDLQRetryEventLuaAgreesWithGo: the retry script re-enqueues an entry's
// event in exactly the event states storage.CheckRetryEvent allows (the
// Go side does not look at the event's status: the script decides).
func TestDLQRetryEventLuaAgreesWithGo(t *testing.T) {
	srv := redistest.Start(t)
	ctx := t.Context()
	for _, st := range []storage.Status{storage.StatusQueued, storage.StatusInFlight,
		storage.StatusDelivered, storage.StatusDead, "" /* record gone */} {
		t.Run("event "+string(st), func(t *testing.T) {
			s, job := deadJob(t, srv)
			p, _ := s.leasePartition(job.Lease)
			var err error
			if st == "" {
				err = s.c.Del(ctx, p.ev(job.ID)).Err()
			} else {
				err = s.c.HSet(ctx, p.ev(job.ID), "st", string(st)).Err()
			}
			if err != nil {
				t.Fatal(err)
			}
			want := storage.CheckRetryEvent(st)
			err = s.DLQRetry(ctx, job.ID, time.Now())
			if (err == nil) != (want == nil) || (err != nil && !errors.Is(err, storage.ErrConflict)) {
				t.Fatalf("Redis: %v; storage.CheckRetryEvent: %v", err, want)
			}
			e, err := s.DLQGet(ctx, job.ID)
			if err != nil {
				t.Fatal(err)
			}
			if wantSt := map[bool]storage.DLQStatus{true: storage.DLQRetried, false: storage.DLQPending}[want == nil]; e.Status != wantSt {
				t.Errorf("entry status %q, want %q", e.Status, wantSt)
			}
		})
	}
}
