package storage

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"
)

// stepRekeyer is a Rekeyer over `total` records that only counts: each
// batch scans up to n of them.
type stepRekeyer struct {
	total   int
	batches []int // the n of each RekeyBatch
	at      []time.Time
	saved   RekeyProgress
}

func (s *stepRekeyer) RekeyBatch(_ context.Context, _ *Keyring, cursor string, n int) (RekeyStep, error) {
	from, _ := strconv.Atoi(cursor)
	s.batches = append(s.batches, n)
	s.at = append(s.at, time.Now())
	to := min(from+n, s.total)
	return RekeyStep{Next: strconv.Itoa(to), Done: to == s.total, Scanned: to - from}, nil
}

func (s *stepRekeyer) RekeyState(context.Context) (RekeyProgress, error) { return s.saved, nil }

func (s *stepRekeyer) SaveRekeyState(_ context.Context, p RekeyProgress) error {
	s.saved = p
	return nil
}

func TestRekeyOptions(t *testing.T) {
	k, err := NewKeyring(testKey(1))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		o       RekeyOptions
		batches []int
		err     string
	}{
		{name: "default batch", o: RekeyOptions{}, batches: []int{DefaultRekeyBatch, DefaultRekeyBatch}},
		{name: "small batch", o: RekeyOptions{Batch: 150}, batches: []int{150, 150, 150}},
		{name: "largest batch", o: RekeyOptions{Batch: MaxRekeyBatch}, batches: []int{MaxRekeyBatch}},
		{name: "batch too large", o: RekeyOptions{Batch: MaxRekeyBatch + 1}, err: "batch must be between 1 and 5000"},
		{name: "negative batch", o: RekeyOptions{Batch: -1}, err: "batch must be between 1 and 5000"},
		{name: "pause too long", o: RekeyOptions{Pause: MaxRekeyPause + time.Millisecond}, err: "pause must be between 0 and 10s"},
		{name: "negative pause", o: RekeyOptions{Pause: -time.Second}, err: "pause must be between 0 and 10s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &stepRekeyer{total: 400}
			p, err := Rekey(t.Context(), r, k, tc.o, nil)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err || len(r.batches) != 0 || r.saved.State != "" {
					t.Fatalf("Rekey = %v after %d batches (saved %q), want %q and nothing done", err, len(r.batches), r.saved.State, tc.err)
				}
				return
			}
			if err != nil || p.State != RekeyDone || p.Scanned != 400 || len(r.batches) != len(tc.batches) {
				t.Fatalf("Rekey = %+v, %v after batches %v, want done, 400 scanned, batches %v", p, err, r.batches, tc.batches)
			}
			for i, n := range tc.batches {
				if r.batches[i] != n {
					t.Fatalf("batches %v, want %v", r.batches, tc.batches)
				}
			}
		})
	}
}

// TestRekeyPause: Pause spaces the batches, and a rekey cancelled while it
// waits stops at once with its progress saved, to be resumed.
func TestRekeyPause(t *testing.T) {
	k, err := NewKeyring(testKey(1))
	if err != nil {
		t.Fatal(err)
	}
	const pause = 40 * time.Millisecond
	r := &stepRekeyer{total: 30}
	if _, err := Rekey(t.Context(), r, k, RekeyOptions{Batch: 10, Pause: pause}, nil); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(r.at); i++ {
		if gap := r.at[i].Sub(r.at[i-1]); gap < pause {
			t.Errorf("batch %d came %v after the one before, want at least %v", i, gap, pause)
		}
	}

	ctx, cancel := context.WithCancel(t.Context())
	r = &stepRekeyer{total: 30}
	start := time.Now()
	p, err := Rekey(ctx, r, k, RekeyOptions{Batch: 10, Pause: MaxRekeyPause}, func(RekeyProgress) { cancel() })
	if !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
		t.Fatalf("cancelled during a pause: %v after %v", err, time.Since(start))
	}
	if p.Scanned != 10 || r.saved.State != RekeyRunning || r.saved.Cursor != "10" {
		t.Fatalf("progress %+v, saved %+v: want 10 scanned, saved running at cursor 10", p, r.saved)
	}
	p, err = Rekey(t.Context(), r, k, RekeyOptions{Batch: 10}, nil)
	if err != nil || p.State != RekeyDone || p.Scanned != 30 || len(r.batches) != 3 {
		t.Fatalf("resumed: %+v, %v after %d batches", p, err, len(r.batches))
	}
}
