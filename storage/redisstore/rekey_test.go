package redisstore

import (
	"bytes"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/storagetest"
)

// testKeyring is a keyring of storagetest's test keys ns, the first
// sealing.
func testKeyring(t *testing.T, ns ...byte) *storage.Keyring {
	t.Helper()
	keys := make([][]byte, len(ns))
	for i, n := range ns {
		keys[i] = storagetest.TestKey(n)
	}
	k, err := storage.NewKeyring(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestRekeyRetriedDuring: a DLQ retry after the rekey's scan passed the
// job's hash, and before it reached the entry, gives the job the entry's
// copy sealed under the old key; the rekey of the entry re-seals the job
// too, so that it leases under the new key alone.
func TestRekeyRetriedDuring(t *testing.T) {
	srv := redistest.Start(t)
	s := openTest(t, srv.Addr, Options{Prefix: redistest.Prefix(), Partitions: 4})
	ctx := t.Context()
	old, both := storage.NewSealingStore(s, testKeyring(t, 1)), testKeyring(t, 2, 1)
	ev := storagetest.NewEvent("stripe", "evt_rekey_retry")
	if _, err := old.Enqueue(ctx, ev, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	jobs, err := old.Lease(ctx, time.Now(), 10, time.Minute, nil)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Lease = %d jobs, %v", len(jobs), err)
	}
	if err := old.Finish(ctx, jobs[0], storage.Outcome{Result: storage.Dead, Attempt: &storage.Attempt{N: 1, At: time.Now(), Status: 400}, Error: "400"}); err != nil {
		t.Fatal(err)
	}
	p := s.partitionForEvent(ev)
	var step storage.RekeyStep
	if err := s.rekeyKey1(ctx, both, p, p.ev(ev.ID), &step); err != nil { // the scan passes the job
		t.Fatal(err)
	}
	if err := old.DLQRetry(ctx, ev.ID, time.Now()); err != nil { // a retry by a node with the old key first
		t.Fatal(err)
	}
	if err := s.rekeyKey1(ctx, both, p, p.dlqEntry(ev.ID), &step); err != nil { // then the entry
		t.Fatal(err)
	}
	jobs, err = storage.NewSealingStore(s, testKeyring(t, 2)).Lease(ctx, time.Now(), 10, time.Minute, nil)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Lease of the retried job under the new key alone = %d jobs, %v; want it (rekey %+v)", len(jobs), err, step)
	}
	if !bytes.Equal(jobs[0].Body, ev.Body) {
		t.Errorf("retried job's body %q, want %q", jobs[0].Body, ev.Body)
	}
}
