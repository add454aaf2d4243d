package embedded_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

// TestRekeyLeavesNoOldBytes: a rekey that seals what was stored in clear
// (encryption turned on) leaves none of it in the store's files: the
// clear bodies and headers, in the live records and in every earlier
// version (each lease and finish left a copy in a log or a table), are
// gone once the rekey is done, as they are after an erasure (scrub.go).
// The store is consistent, and every record opens under the new key.
func TestRekeyLeavesNoOldBytes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hookline.db")
	s := openStore(t, path)
	ctx := context.Background()
	until := time.Now().Add(time.Hour)
	queued := markerEvent("stripe", "evt_queued", "MARK-rk-queued-3c1d", 2_000)
	dead := markerEvent("stripe", "evt_dead", "MARK-rk-dead-80fe", 300)
	for _, ev := range []*storage.Event{queued, dead} {
		if _, err := s.Enqueue(ctx, ev, until); err != nil {
			t.Fatal(err)
		}
	}
	churn(t, s.Store, 50)
	jobs, err := s.Lease(ctx, time.Now(), 1000, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		out := storage.Outcome{Result: storage.Release}
		if j.EventID == "evt_dead" {
			out = storage.Outcome{Result: storage.Dead, Attempt: &storage.Attempt{N: 1, At: time.Now(), Status: 400}, Error: "bad"}
		}
		if err := s.Finish(ctx, j, out); err != nil {
			t.Fatal(err)
		}
	}
	churn(t, s.Store, 50)
	for _, m := range []string{"MARK-rk-queued-3c1d", "MARK-rk-dead-80fe"} {
		if b, h := fileHas(t, path, m); !b || !h {
			t.Fatalf("before the rekey the file holds %s in the body %v, in the header %v: the test proves nothing", m, b, h)
		}
	}

	k, err := storage.NewKeyring(bytes.Repeat([]byte{0x5e}, storage.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	p, err := storage.Rekey(ctx, s.Store, k, storage.RekeyOptions{Batch: 7}, nil)
	if err != nil || p.State != storage.RekeyDone || p.Resealed == 0 || p.Failed != 0 {
		t.Fatalf("Rekey = %+v, %v", p, err)
	}
	for _, m := range []string{"MARK-rk-queued-3c1d", "MARK-rk-dead-80fe"} {
		if b, h := fileHas(t, path, m); b || h {
			t.Errorf("after the rekey the file still holds %s in clear: in the body %v, in the header %v", m, b, h)
		}
	}
	if err := s.CheckForTest(); err != nil {
		t.Fatalf("the file is not consistent after the rekey: %v", err)
	}
	sealed := storage.NewSealingStore(s.Store, k)
	e, err := sealed.DLQList(ctx, storage.DLQFilter{Source: "stripe"})
	if err != nil || len(e.Entries) != 1 {
		t.Fatalf("DLQList = %+v, %v", e, err)
	}
	entry, err := sealed.DLQGet(ctx, e.Entries[0].ID)
	if err != nil || !bytes.Equal(entry.Payload, dead.Body) {
		t.Fatalf("the dead letter under the new key: %v (payload %q)", err, entry.Payload)
	}
	leased, err := sealed.Lease(ctx, time.Now().Add(2*time.Minute), 1000, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, j := range leased {
		if j.EventID == "evt_queued" {
			found = bytes.Equal(j.Body, queued.Body) && j.Headers.Get("X-Marker") == "MARK-rk-queued-3c1d-header"
		}
	}
	if !found {
		t.Fatalf("the queued event under the new key: not leased intact among %d jobs", len(leased))
	}
}
