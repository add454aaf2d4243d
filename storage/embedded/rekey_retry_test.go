package embedded

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded/kv"
	"github.com/hookline/hookline/storage/storagetest"
)

// TestRekeyRetriedDuring: a DLQ retry after the rekey's walk passed the
// job's record (the events bucket), and before it reached the entry (the
// DLQ, walked last), gives the job the entry's copy sealed under the old
// key; the rekey of the entry re-seals the job too, so that it leases
// under the new key alone.
func TestRekeyRetriedDuring(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "hookline.db"), Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	old, both := storage.NewSealingStore(s, storagetest.TestKeyring(t, 1)), storagetest.TestKeyring(t, 2, 1)
	ev := storagetest.NewEvent("stripe", "evt_rekey_retry")
	storagetest.DeadLettered(t, old, ev)
	var step storage.RekeyStep
	walk := func(b string) {
		t.Helper()
		if err := s.update(ctx, func(tx *kv.Tx) error {
			step = storage.RekeyStep{}
			writes, _, err := rekeyBucket(tx, both, b, nil, 1000, &step)
			if err != nil {
				return err
			}
			return applyRekey(tx, b, writes)
		}); err != nil {
			t.Fatal(err)
		}
	}
	walk("e") // the walk passes the job
	if err := old.DLQRetry(ctx, ev.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	walk("d") // then the entry
	jobs, err := storage.NewSealingStore(s, storagetest.TestKeyring(t, 2)).Lease(ctx, time.Now(), 10, time.Minute, nil)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Lease of the retried job under the new key alone = %d jobs, %v; want it (the DLQ's walk: %+v)", len(jobs), err, step)
	}
	if !bytes.Equal(jobs[0].Body, ev.Body) {
		t.Errorf("retried job's body %q, want %q", jobs[0].Body, ev.Body)
	}
}
