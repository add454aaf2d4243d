package storagetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

// ClaimCost measures the storage a dedupe claim costs a backend, for the
// dedupe windows of the providers that resend for days: n events of one
// source, with a provider-style id, are enqueued, delivered and removed at
// retention, once with their claims (held for 4 days, so they outlive
// their events, as a dedupe_window longer than the retention keeps them)
// and once without, each run in a fresh store (open). size is the
// backend's storage after a run, in bytes, settled (written out,
// compacted). It returns the bytes one claim adds.
func ClaimCost(t *testing.T, open func(t *testing.T) storage.Store, size func(t *testing.T, s storage.Store) int64, n int) float64 {
	t.Helper()
	run := func(dedupe bool) int64 {
		s := open(t)
		before := size(t, s)
		now := time.Now()
		enqueueMany(t, s, n, 4*24*time.Hour, func(i int64) *storage.Event {
			id := newID(t)
			return &storage.Event{ID: id, EventID: fmt.Sprintf("evt_1Q%024d", i), Dedupe: dedupe, Source: "stripe",
				Upstream: "http://127.0.0.1:8080/hooks/stripe", Body: []byte(`{"id":"x"}`), ReceivedAt: now}
		})
		for left := n; left > 0; {
			jobs, err := s.Lease(t.Context(), time.Now(), 256, time.Minute, nil)
			if err != nil || len(jobs) == 0 {
				t.Fatalf("Lease with %d left: %d jobs, %v", left, len(jobs), err)
			}
			FinishAtOnce(t, s, jobs)
			left -= len(jobs)
		}
		removed, err := s.Cleanup(t.Context(), time.Now().Add(time.Minute), time.Nanosecond, 0)
		if err != nil || removed < n {
			t.Fatalf("Cleanup removed %d records, %v; want the %d events at least", removed, err, n)
		}
		if dedupe {
			for i := int64(1); i <= int64(n); i += int64(n / 10) {
				res, err := s.Enqueue(t.Context(), &storage.Event{ID: newID(t), EventID: fmt.Sprintf("evt_1Q%024d", i), Dedupe: true,
					Source: "stripe", Upstream: "http://127.0.0.1:8080/hooks/stripe", Body: []byte(`{}`), ReceivedAt: time.Now()}, time.Now().Add(time.Hour))
				if err != nil || !res.Duplicate {
					t.Fatalf("a resend after the event was removed: %+v, %v; want a duplicate (the claim holds)", res, err)
				}
			}
		}
		return size(t, s) - before
	}
	with, without := run(true), run(false)
	per := float64(with-without) / float64(n)
	t.Logf("%d events: %d bytes with their claims, %d without: %.0f bytes a claim, %.1f million claims per GiB",
		n, with, without, per, float64(1<<30)/per/1e6)
	return per
}
