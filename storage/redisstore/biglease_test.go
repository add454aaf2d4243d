package redisstore

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/storagetest"
)

// TestLeaseBeyondUnpack leases, in one partition and one lane, more jobs
// than Lua's unpack takes at once (a lease script that passes a lane's
// jobs to one command must do it in chunks), with one job named twice:
// each is leased once, due again at the lease's end and in flight, and
// not leased again while its lease holds.
func TestLeaseBeyondUnpack(t *testing.T) {
	const n = 9000
	srv := redistest.Start(t)
	s := openTest(t, srv.Addr, Options{Prefix: redistest.Prefix(), Partitions: 1})
	ctx := t.Context()
	cands := make([]storage.Candidate, n)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				res, err := s.Enqueue(ctx, storagetest.NewEvent("big", fmt.Sprintf("e-%d", i)), time.Now().Add(time.Hour))
				if err != nil || len(res.Due) != 1 {
					t.Errorf("enqueue %d: %+v, %v", i, res, err)
					return
				}
				cands[i] = res.Due[0]
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	now := time.Now().Add(time.Second)
	jobs, err := s.LeaseNamed(ctx, now, append(cands, cands[0]), time.Minute)
	if err != nil || len(jobs) != n {
		t.Fatalf("LeaseNamed of %d jobs (one named twice) = %d jobs, %v", n, len(jobs), err)
	}
	seen := map[string]bool{}
	for _, j := range jobs {
		if seen[j.ID] {
			t.Fatalf("job %s leased twice", j.ID)
		}
		seen[j.ID] = true
	}
	p := s.parts[0]
	lane := storage.LaneOf(&jobs[0].Event)
	if got, err := s.c.ZCount(ctx, p.lane(lane), fmt.Sprint(ms(now.Add(time.Minute))), fmt.Sprint(ms(now.Add(time.Minute)))).Result(); err != nil || got != n {
		t.Errorf("jobs due at the lease's end: %d, %v; want %d", got, err, n)
	}
	if got, err := s.c.SCard(ctx, p.key("inflight")).Result(); err != nil || got != n {
		t.Errorf("jobs in flight: %d, %v; want %d", got, err, n)
	}
	if again, err := s.LeaseNamed(ctx, now, cands[:10], time.Minute); err != nil || len(again) != 0 {
		t.Errorf("leased again while leased: %d jobs, %v", len(again), err)
	}
	for _, j := range jobs[:3] {
		if err := s.Finish(ctx, j, storage.Outcome{Result: storage.Delivered}); err != nil {
			t.Fatal(err)
		}
	}
}
