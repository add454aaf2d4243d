package redisstore

import (
	"slices"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/storagetest"
)

// TestEmptyLanesLeaveTheSet: a lane left empty by a finish (its own lane,
// or the share a job was moved apart from) or by an erasure leaves the
// lanes set every lease walks, so that tenants' own lanes, which come and
// go, do not pile up in it; a lane still holding jobs stays.
func TestEmptyLanesLeaveTheSet(t *testing.T) {
	srv := redistest.Start(t)
	s := openTest(t, srv.Addr, Options{Prefix: redistest.Prefix(), Partitions: 1})
	ctx := t.Context()
	p := s.parts[0]
	lanes := func() []string {
		l, err := s.c.SMembers(ctx, p.key("lanes")).Result()
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(l)
		return l
	}
	enqueue := func(id, tenant string, apart bool) *storage.Event {
		ev := storagetest.NewEvent("shop", id)
		ev.Tenant, ev.Apart = tenant, apart
		if _, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	moved := enqueue("e-1", "a.myshopify.com", false) // moved apart below
	kept := enqueue("e-2", "b.myshopify.com", true)   // stays queued
	erased := enqueue("e-3", "c.myshopify.com", true) // erased
	share, apartA, apartB, apartC := storage.LaneOf(moved), storage.TenantLane("shop", "a.myshopify.com"),
		storage.TenantLane("shop", "b.myshopify.com"), storage.LaneOf(erased)
	if got, want := lanes(), sorted(share, apartB, apartC); !slices.Equal(got, want) {
		t.Fatalf("lanes %q, want %q", got, want)
	}
	gate := &storage.Gate{Skip: map[string]bool{apartB: true, apartC: true}}
	jobs, err := s.Lease(ctx, time.Now(), 10, time.Minute, gate)
	if err != nil || len(jobs) != 1 || jobs[0].ID != moved.ID {
		t.Fatalf("Lease = %v, %v", jobIDs(jobs), err)
	}
	if err := s.Finish(ctx, jobs[0], storage.Outcome{Result: storage.Release, Apart: true}); err != nil {
		t.Fatal(err)
	}
	if got, want := lanes(), sorted(apartA, apartB, apartC); !slices.Equal(got, want) {
		t.Errorf("after the move apart: lanes %q, want %q (the share left empty gone)", got, want)
	}
	jobs, err = s.Lease(ctx, time.Now().Add(time.Second), 10, time.Minute, gate)
	if err != nil || len(jobs) != 1 || jobs[0].ID != moved.ID {
		t.Fatalf("Lease = %v, %v", jobIDs(jobs), err)
	}
	if err := s.Finish(ctx, jobs[0], storage.Outcome{Result: storage.Delivered, Attempt: &storage.Attempt{At: time.Now(), Status: 200}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Erase(ctx, "shop", erased.EventID, time.Now()); err != nil {
		t.Fatal(err)
	}
	if got, want := lanes(), sorted(apartB); !slices.Equal(got, want) {
		t.Errorf("after a delivery and an erasure: lanes %q, want %q", got, want)
	}
	if byLane, err := s.QueueByLane(ctx); err != nil || byLane[apartB].Queued != 1 || len(byLane) != 1 {
		t.Errorf("QueueByLane = %v, %v; want %s's job only", byLane, err, kept.Tenant)
	}
}

func sorted(s ...string) []string {
	slices.Sort(s)
	return s
}

func jobIDs(jobs []*storage.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}
