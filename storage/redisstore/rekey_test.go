package redisstore

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/testing/redistest"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/storagetest"
)

// TestRekeyRetriedDuring: a DLQ retry after the rekey's scan passed the
// job's hash, and before it reached the entry, gives the job the entry's
// copy sealed under the old key; the rekey of the entry re-seals the job
// too, so that it leases under the new key alone.
func TestRekeyRetriedDuring(t *testing.T) {
	srv := redistest.Start(t)
	s := openTest(t, srv.Addr, Options{Prefix: redistest.Prefix(), Partitions: 4})
	ctx := t.Context()
	old, both := storage.NewSealingStore(s, storagetest.TestKeyring(t, 1)), storagetest.TestKeyring(t, 2, 1)
	ev := storagetest.NewEvent("stripe", "evt_rekey_retry")
	storagetest.DeadLettered(t, old, ev)
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
	jobs, err := storage.NewSealingStore(s, storagetest.TestKeyring(t, 2)).Lease(ctx, time.Now(), 10, time.Minute, nil)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Lease of the retried job under the new key alone = %d jobs, %v; want it (rekey %+v)", len(jobs), err, step)
	}
	if !bytes.Equal(jobs[0].Body, ev.Body) {
		t.Errorf("retried job's body %q, want %q", jobs[0].Body, ev.Body)
	}
}

// beforeScript is a go-redis hook that calls run once, before the first
// EVALSHA of script is sent (alone or in a pipeline).
type beforeScript struct {
	sha  string
	once sync.Once
	run  func()
}

func (h *beforeScript) check(cmd redis.Cmder) {
	if args := cmd.Args(); len(args) > 1 && fmt.Sprint(args[0]) == "evalsha" && fmt.Sprint(args[1]) == h.sha {
		h.once.Do(h.run)
	}
}

func (h *beforeScript) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *beforeScript) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.check(cmd)
		return next(ctx, cmd)
	}
}

func (h *beforeScript) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.check(cmd)
		}
		return next(ctx, cmds)
	}
}

// TestEntryChangedMeanwhile: an operator's change to a DLQ entry (a retry,
// a status) that read the entry before a rekey re-sealed it, and writes it
// back after, reads it again instead of writing back the old seal: the
// entry, and a retried job with its copy, open under the new key alone.
func TestEntryChangedMeanwhile(t *testing.T) {
	srv := redistest.Start(t)
	for _, op := range []string{"retry", "status"} {
		t.Run(op, func(t *testing.T) {
			prefix := redistest.Prefix()
			s := openTest(t, srv.Addr, Options{Prefix: prefix, Partitions: 4})
			rekeyer := openTest(t, srv.Addr, Options{Prefix: prefix, Partitions: 4})
			ctx := t.Context()
			old, both, only := storage.NewSealingStore(s, storagetest.TestKeyring(t, 1)), storagetest.TestKeyring(t, 2, 1), storage.NewSealingStore(s, storagetest.TestKeyring(t, 2))
			ev := storagetest.NewEvent("stripe", "evt_changed_"+op)
			storagetest.DeadLettered(t, old, ev)
			p := s.partitionForEvent(ev)
			sc := dlqRetryScript
			if op == "status" {
				sc = dlqStatusScript
			}
			// the rekey re-seals the entry after the change read it
			hook := &beforeScript{sha: sc.Hash(), run: func() {
				var step storage.RekeyStep
				if err := rekeyer.rekeyKey1(ctx, both, p, p.dlqEntry(ev.ID), &step); err != nil || step.Resealed == 0 {
					t.Errorf("rekey of the entry = %+v, %v", step, err)
				}
			}}
			s.c.AddHook(hook)
			if op == "retry" {
				if err := old.DLQRetry(ctx, ev.ID, time.Now()); err != nil {
					t.Fatal(err)
				}
				jobs, err := only.Lease(ctx, time.Now(), 10, time.Minute, nil)
				if err != nil || len(jobs) != 1 || !bytes.Equal(jobs[0].Body, ev.Body) {
					t.Fatalf("Lease of the retried job under the new key alone = %d jobs, %v; want it with its body", len(jobs), err)
				}
			} else if err := old.DLQSetStatus(ctx, ev.ID, storage.DLQResolved, "done", time.Now()); err != nil {
				t.Fatal(err)
			}
			e, err := only.DLQGet(ctx, ev.ID)
			if err != nil || !bytes.Equal(e.Payload, ev.Body) {
				t.Fatalf("DLQGet under the new key alone = %v; want the entry with its payload", err)
			}
			if want := map[string]storage.DLQStatus{"retry": storage.DLQRetried, "status": storage.DLQResolved}[op]; e.Status != want {
				t.Errorf("entry status %s, want %s", e.Status, want)
			}
		})
	}
}
