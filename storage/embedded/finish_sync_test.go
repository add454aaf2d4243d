package embedded_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded"
	"github.com/hookline/hookline/storage/storagetest"
)

// stallFS is the operating system's file system whose write-ahead logs'
// syncs wait while the disk is stalled (stall, unstall): a hung fsync.
type stallFS struct {
	vfs.FS
	mu      sync.Mutex
	stalled chan struct{} // closed when the disk is not stalled
	syncs   int           // syncs asked for while stalled
}

func newStallFS() *stallFS {
	f := &stallFS{FS: vfs.Default, stalled: make(chan struct{})}
	close(f.stalled)
	return f
}

func (f *stallFS) stall() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stalled = make(chan struct{})
}

func (f *stallFS) unstall() {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.stalled:
	default:
		close(f.stalled)
	}
}

// wait blocks while the disk is stalled.
func (f *stallFS) wait() {
	f.mu.Lock()
	ch := f.stalled
	select {
	case <-ch:
	default:
		f.syncs++
	}
	f.mu.Unlock()
	<-ch
}

func (f *stallFS) stalledSyncs() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.syncs
}

func (f *stallFS) wrap(file vfs.File, name string, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, ".log") {
		return file, err
	}
	return &stallFile{File: file, fs: f}, nil
}

func (f *stallFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	file, err := f.FS.Create(name, c)
	return f.wrap(file, name, err)
}

func (f *stallFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	file, err := f.FS.ReuseForWrite(oldname, newname, c)
	return f.wrap(file, newname, err)
}

func (f *stallFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	file, err := f.FS.OpenReadWrite(name, c, opts...)
	return f.wrap(file, name, err)
}

type stallFile struct {
	vfs.File
	fs *stallFS
}

func (f *stallFile) Sync() error { f.fs.wait(); return f.File.Sync() }

func (f *stallFile) SyncData() error { f.fs.wait(); return f.File.SyncData() }

func (f *stallFile) SyncTo(n int64) (bool, error) { f.fs.wait(); return f.File.SyncTo(n) }

// TestFinishWaitsForTheDiskOnlyForDeadLetters: with the write-ahead log's
// fsync hung, a delivery's outcome (delivered, retried, handed back) is
// committed without waiting for it (a crash may lose it: the job is then
// delivered again, as at-least-once allows), while a dead letter waits
// for the disk, as does the delivered head of an ordered chain (lost, its
// next job, already delivered, would go before it again), and their
// callers get ErrUnavailable when their deadline comes first. Once the
// disk answers, every outcome is there after a reopen.
func TestFinishWaitsForTheDiskOnlyForDeadLetters(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "hookline.db")
	fs := newStallFS()
	s, err := embedded.Open(path, embedded.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			fs.unstall()
			s.Close()
		}
	})
	// the fourth is the head of an ordered chain, delivered
	results := []storage.Result{storage.Delivered, storage.Retry, storage.Release, storage.Delivered, storage.Dead}
	synced := map[int]bool{3: true, 4: true}
	var jobs []*storage.Job
	for i := range results {
		ev := storagetest.NewEvent("stripe", "evt_"+string(rune('a'+i)))
		if i == 3 {
			ev.OrderKey = "cus_1"
		}
		res, err := s.Enqueue(ctx, ev, time.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		// the jobs before are leased: Lease finds this one alone (an
		// ordered job is not named by its enqueue)
		leased, err := s.Lease(ctx, time.Now(), 5, time.Minute, nil)
		if err != nil || len(leased) != 1 || leased[0].ID != res.ID {
			t.Fatalf("Lease: %d jobs, %v; want %s", len(leased), err, res.ID)
		}
		jobs = append(jobs, leased[0])
	}
	fs.stall()
	defer fs.unstall()
	for i, r := range results {
		out := storage.Outcome{Result: r, Attempt: &storage.Attempt{N: 1, At: time.Now(), Status: 500}, Error: "gone"}
		if r == storage.Retry {
			out.Due = time.Now().Add(time.Hour)
		}
		wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		start := time.Now()
		err := s.Finish(wctx, jobs[i], out)
		cancel()
		took := time.Since(start)
		if synced[i] {
			if !errors.Is(err, storage.ErrUnavailable) {
				t.Fatalf("outcome %d (%v) on a stalled disk: %v after %v, want ErrUnavailable at its deadline", i, r, err, took)
			}
			continue
		}
		if err != nil || took > 250*time.Millisecond {
			t.Fatalf("outcome %v on a stalled disk: %v after %v, want nil at once", r, err, took)
		}
	}
	if fs.stalledSyncs() == 0 {
		t.Fatal("no sync was stalled: the test stalled nothing")
	}
	fs.unstall()
	closed = true
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = embedded.Open(path, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := map[string]storage.Status{"evt_a": storage.StatusDelivered, "evt_b": storage.StatusQueued,
		// the chain's head committed once the disk answered; the dead
		// letter, queued behind that commit when its caller gave up, was
		// dropped, never run (delivered again after the reopen)
		"evt_c": storage.StatusQueued, "evt_d": storage.StatusDelivered, "evt_e": storage.StatusQueued}
	for id, st := range want {
		info, err := s.Lookup(ctx, "stripe", id)
		if err != nil || info.Status != st || (len(info.Attempts) == 0) != (id == "evt_e") {
			t.Errorf("%s after a reopen: %+v, %v; want %v", id, info, err, st)
		}
	}
}
