package embedded_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/storagetest"
)

// TestFinishRereadsChangedRecord: Finish starts from the record Lease read
// only while the stored record is still that one; a record changed under
// the lease (by a rekey, an operator's step) is read again, and the
// outcome is written on top of the change, not over it.
func TestFinishRereadsChangedRecord(t *testing.T) {
	ctx := t.Context()
	s := openStore(t, filepath.Join(t.TempDir(), "hookline.db"))
	for _, tc := range []struct {
		name    string
		eventID string
		change  string // "" leaves the record as leased
		want    string
	}{
		{"unchanged", "evt_same", "", "invoice.paid"},
		{"changed under the lease", "evt_changed", "invoice.changed", "invoice.changed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := storagetest.NewEvent("stripe", tc.eventID)
			ev.Type = "invoice.paid"
			res, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			jobs, err := s.LeaseNamed(ctx, time.Now(), res.Due, time.Minute)
			if err != nil || len(jobs) != 1 {
				t.Fatalf("LeaseNamed: %d jobs, %v", len(jobs), err)
			}
			if tc.change != "" {
				if err := s.SetTypeForTest(ev.ID, tc.change); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Finish(ctx, jobs[0], storage.Outcome{Result: storage.Delivered, Attempt: &storage.Attempt{N: 1, At: time.Now(), Status: 200}}); err != nil {
				t.Fatal(err)
			}
			info, err := s.Lookup(ctx, "stripe", tc.eventID)
			if err != nil || info.Status != storage.StatusDelivered || info.EventType != tc.want || len(info.Attempts) != 1 {
				t.Fatalf("after Finish: %+v, %v; want delivered, type %q, 1 attempt", info, err, tc.want)
			}
		})
	}
}
