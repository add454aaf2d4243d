package embedded

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded/kv"
)

// TestFloorsInterleavings: a floor is never left above a live key, in
// every order a walk (registered, its snapshot, its end) and a write (its
// key put while its transaction runs, its end) can take. Each case starts
// with lane "a" at floor k5; the write puts k2, and the walk's snapshot
// found first (nil: the lane empty, as the walk saw it). A walk that took
// its snapshot before the commit sees k5 (or nothing); one after, k2.
func TestFloorsInterleavings(t *testing.T) {
	k := func(n int) []byte { return dueKey("a", time.Unix(0, int64(n)), []byte("id")) }
	tests := []struct {
		name  string
		steps string // p: the write puts k2; c: its transaction ends; w: the walk registers; e: it ends
		first []byte
		want  []byte
	}{
		{"write all before the walk", "pcwe", k(2), k(2)},
		{"committed after the snapshot, ended after the walk", "pwec", k(5), k(2)},
		{"committed after the snapshot, ended during the walk", "pwce", k(5), k(2)},
		{"the walk all inside the write", "wpce", k(5), k(2)},
		{"the walk saw the lane empty, ended during it", "wpce", nil, k(2)},
		{"the walk saw the lane empty, ended after it", "pwec", nil, k(2)},
		{"a walk ends while the write's commit is under way", "pwe", k(7), k(2)},
		{"a walk that saw the lane empty ends while the commit is under way", "pwe", nil, k(2)},
		{"no write: the walk raises", "we", k(7), k(7)},
		{"no write, empty lane: forgotten", "we", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFloors()
			f.lanes["a"] = k(5)
			var w *floorWalk
			for _, step := range tt.steps {
				switch step {
				case 'w':
					w = f.begin()
				case 'p':
					f.put(k(2))
				case 'c':
					f.settle(k(2))
				case 'e':
					f.end(w, map[string][]byte{"a": tt.first})
				}
			}
			if got := f.lanes["a"]; !bytes.Equal(got, tt.want) {
				t.Errorf("floor = %x, want %x", got, tt.want)
			}
			if len(f.walks) != 0 {
				t.Errorf("%d walks still registered", len(f.walks))
			}
		})
	}
}

// TestFloorsUnderTraffic: writers enqueue jobs while workers lease them
// and finish them, delivered or retried due at a random time, most often
// before jobs already queued (a retry due now behind jobs due later), and
// walks run; after each round the test checks, writes stopped, that
// each lane's floor is at or before its first key. Then a job retried due
// before every other is leased at once, however many finished jobs lie
// between it and the lane's floor.
func TestFloorsUnderTraffic(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "store"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	base := time.Now()
	far := base.Add(24 * time.Hour) // every job is due by then
	lanes := []string{"s1", "s2", "s3"}
	for round := range 5 {
		var wg sync.WaitGroup
		for w := range 2 {
			wg.Go(func() {
				for i := range 100 {
					ev := &storage.Event{ID: fmt.Sprintf("r%d-w%d-%03d", round, w, i), Source: lanes[(i+w)%len(lanes)],
						Upstream: "http://127.0.0.1:1/", Body: []byte("{}"), ReceivedAt: base}
					if _, err := s.Enqueue(ctx, ev, base); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		for w := range 2 {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(round), uint64(w)))
				for range 15 {
					jobs, err := s.Lease(ctx, far, 10, time.Minute, nil)
					if err != nil {
						t.Error(err)
						return
					}
					for _, j := range jobs {
						out := storage.Outcome{Result: storage.Delivered, Attempt: &storage.Attempt{N: 1, At: base, Status: 200}}
						if r.IntN(2) == 0 {
							out = storage.Outcome{Result: storage.Retry, Attempt: &storage.Attempt{N: 1, At: base, Status: 503},
								Due: base.Add(time.Duration(r.IntN(7200)-3600) * time.Second)}
						}
						if err := s.Finish(ctx, j, out); err != nil {
							t.Error(err)
							return
						}
					}
					if _, _, err := s.NextDue(ctx, nil); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		checkFloors(t, s)
	}
	// a job retried due before all the others: leased at once
	jobs, err := s.Lease(ctx, far, 1, time.Minute, nil)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Lease = %d jobs, %v", len(jobs), err)
	}
	early := base.Add(-2 * time.Hour)
	if err := s.Finish(ctx, jobs[0], storage.Outcome{Result: storage.Release, Due: early}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Lease(ctx, early, 10, time.Minute, nil)
	if err != nil || len(got) != 1 || got[0].ID != jobs[0].ID {
		t.Fatalf("Lease of the job due first = %d jobs, %v; want %s", len(got), err, jobs[0].ID)
	}
	checkFloors(t, s)
}

// checkFloors fails t when a lane of the due index has no floor, or one
// above its first key.
func checkFloors(t *testing.T, s *Store) {
	t.Helper()
	fl := s.FloorsForTest()
	err := s.db.View(func(tx *kv.Tx) error {
		return tx.Bucket(bQueue).ForEach(func(k, _ []byte) error {
			lane, _, _, _ := splitDueKey(k)
			floor, ok := fl[string(lane)]
			if !ok || bytes.Compare(floor, k) > 0 {
				t.Errorf("lane %s: floor %x (known %v) above its key %x", lane, floor, ok, k)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}
