package embedded_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded"
	"github.com/hookline/hookline/storage/embedded/kv"
	"github.com/hookline/hookline/storage/storagetest"
)

// boltFixture builds a store with n events in every state (queued,
// ordered and waiting, delivered, dead with a DLQ entry), writes it out as
// the bbolt file an earlier version would have kept (kv.ExportToBolt)
// at dir/events.db, and returns the file's path and what the store held
// (Dump).
func boltFixture(t *testing.T, n int) (file string, want [][]byte) {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	s := openStore(t, src)
	ctx := context.Background()
	now := time.Now()
	for i := range n {
		ev := &storage.Event{ID: fmt.Sprintf("ev-%06d", i), EventID: fmt.Sprintf("evt_%d", i), Dedupe: true,
			Source: fmt.Sprintf("src%d", i%3), Upstream: "http://127.0.0.1:1/", Body: []byte(`{"n":` + fmt.Sprint(i) + `}`), ReceivedAt: now}
		if i%7 == 0 {
			ev.OrderKey = fmt.Sprintf("k%d", i%2)
		}
		if _, err := s.Enqueue(ctx, ev, now); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := s.Lease(ctx, now, n/2, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, j := range jobs {
		out := storage.Outcome{Result: storage.Delivered, Attempt: &storage.Attempt{N: 1, At: now, Status: 200}}
		if i%3 == 0 {
			out = storage.Outcome{Result: storage.Dead, Attempt: &storage.Attempt{N: 1, At: now, Status: 400}, Error: "bad"}
		}
		if err := s.Finish(ctx, j, out); err != nil {
			t.Fatal(err)
		}
	}
	if want, err = s.Dump(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	file = filepath.Join(dir, "events.db")
	if err := kv.ExportToBolt(src, file); err != nil {
		t.Fatal(err)
	}
	return file, want
}

// migrated opens the store at path (migrating what is there) and checks
// that it holds want, that it is a directory with nothing left beside it,
// and that its queued jobs lease.
func migrated(t *testing.T, path string, want [][]byte) {
	t.Helper()
	s := openStore(t, path)
	got, err := s.Dump()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after the migration the store holds %d keys and values, want %d (the same)", len(got), len(want))
	}
	if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
		t.Fatalf("the store at %s is not a directory: %v", path, err)
	}
	for _, left := range []string{".new", ".bbolt", ".new.migrating", ".migrate"} {
		if _, err := os.Stat(path + left); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s%s left behind (%v)", filepath.Base(path), left, err)
		}
	}
	jobs, err := s.Lease(context.Background(), time.Now().Add(time.Hour), 1000, time.Minute, nil)
	if err != nil || len(jobs) == 0 {
		t.Fatalf("Lease after the migration = %d jobs, %v", len(jobs), err)
	}
}

// TestOpenMigratesBoltFile: a bbolt file an earlier version kept at the
// store's path is moved into a store directory there by Open, whatever
// state an earlier, interrupted Open left (each state a crash between
// two steps leaves), with every bucket, key and value kept.
func TestOpenMigratesBoltFile(t *testing.T) {
	file, want := boltFixture(t, 300)
	copyFile := func(t *testing.T, to string) {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, raw, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// a complete migration of the file, for the states past step 1
	done := filepath.Join(t.TempDir(), "done")
	copyFile(t, done)
	if s, err := embedded.Open(done, embedded.Options{}); err != nil {
		t.Fatal(err)
	} else {
		s.Close()
	}
	copyDir := func(t *testing.T, to string) {
		err := filepath.WalkDir(done, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			target := filepath.Join(to, strings.TrimPrefix(p, done))
			if d.IsDir() {
				return os.MkdirAll(target, 0o700)
			}
			if d.Name() == "LOCK" {
				return nil
			}
			raw, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, raw, 0o600)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, path string)
	}{
		{"the file alone", func(t *testing.T, path string) { copyFile(t, path) }},
		{"the file and a copy begun (killed in step 1)", func(t *testing.T, path string) {
			copyFile(t, path)
			if err := os.MkdirAll(path+".new.migrating", 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(path+".new.migrating", "000001.log"), []byte("half"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"the file and a complete copy (killed before step 2)", func(t *testing.T, path string) {
			copyFile(t, path)
			copyDir(t, path+".new")
		}},
		{"the file moved aside, the copy not yet in place (killed in step 2)", func(t *testing.T, path string) {
			copyFile(t, path+".bbolt")
			copyDir(t, path+".new")
		}},
		{"the copy in place, the file not yet removed (killed before step 3)", func(t *testing.T, path string) {
			copyFile(t, path+".bbolt")
			copyDir(t, path)
		}},
		{"the file moved aside alone (by hand)", func(t *testing.T, path string) { copyFile(t, path+".bbolt") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.db")
			tt.setup(t, path)
			migrated(t, path, want)
		})
	}
	// a file at the path and a moved one beside it: an earlier version
	// started on a half-moved store; which holds the events is not for
	// Open to guess, and neither is touched
	t.Run("a file and a moved file beside it", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "events.db")
		copyFile(t, path)
		copyFile(t, path+".bbolt")
		if s, err := embedded.Open(path, embedded.Options{}); err == nil {
			s.Close()
			t.Fatal("Open moved one of two bbolt files")
		} else if !strings.Contains(err.Error(), "both") {
			t.Errorf("Open: %v, want the two files named", err)
		}
		for _, p := range []string{path, path + ".bbolt"} {
			if fi, err := os.Stat(p); err != nil || fi.IsDir() {
				t.Errorf("%s was changed: %v", p, err)
			}
		}
	})
}

// migrateChildEnv names the store path of TestMigrateKilled's child.
const migrateChildEnv = "HOOKLINE_MIGRATE_CHILD_DB"

// TestMigrateKilledChild is the child of TestMigrateKilled: it opens the
// store at the path its environment names (migrating the file there).
func TestMigrateKilledChild(t *testing.T) {
	path := os.Getenv(migrateChildEnv)
	if path == "" {
		t.Skip("the child of TestMigrateKilled")
	}
	fmt.Println("OPENING")
	s, err := embedded.Open(path, embedded.Options{})
	if err != nil {
		fmt.Println("ERROR", err)
		return
	}
	s.Close()
	fmt.Println("OPENED")
}

// TestMigrateKilled: a process killed (SIGKILL) at any moment of the
// migration of a bbolt file loses nothing: the next Open finishes it, and
// the store holds every bucket, key and value the file held.
func TestMigrateKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	file, want := boltFixture(t, 3000)
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	killed := 0
	for _, after := range []time.Duration{0, 20 * time.Millisecond, 60 * time.Millisecond, 150 * time.Millisecond, 400 * time.Millisecond} {
		t.Run(after.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.db")
			if err := os.WriteFile(path, raw, 0o600); err != nil {
				t.Fatal(err)
			}
			cmd, lines := startChild(t, "TestMigrateKilledChild", migrateChildEnv+"="+path)
			if !lines.Scan() || lines.Text() != "OPENING" {
				t.Fatalf("child: %q", lines.Text())
			}
			time.Sleep(after)
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			opened := false
			for lines.Scan() {
				opened = opened || lines.Text() == "OPENED"
			}
			_ = cmd.Wait()
			if !opened {
				killed++
			}
			t.Logf("killed after %v, migration finished first: %v", after, opened)
			migrated(t, path, want)
		})
	}
	if killed == 0 {
		t.Error("no child was killed before its migration ended: the test proves nothing")
	}
}

// BenchmarkOpenMigrates measures the move of an earlier version's bbolt
// file at Open: HOOKLINE_MIGRATE_EVENTS (default 20,000) delivered events
// of 1 KiB, kept for replay, written out as the file (kv.ExportToBolt);
// reported in MiB of file per second.
//
//	go test -run '^$' -bench OpenMigrates -benchtime 1x ./storage/embedded/
func BenchmarkOpenMigrates(b *testing.B) {
	n := 20_000
	if v, err := strconv.Atoi(os.Getenv("HOOKLINE_MIGRATE_EVENTS")); err == nil && v > 0 {
		n = v
	}
	dir := b.TempDir()
	src := filepath.Join(dir, "src")
	s, err := embedded.Open(src, embedded.Options{})
	if err != nil {
		b.Fatal(err)
	}
	storagetest.LoadFinished(b, s, n, 1024, storage.Delivered)
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	file := filepath.Join(dir, "file.db")
	if err := kv.ExportToBolt(src, file); err != nil {
		b.Fatal(err)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		path := filepath.Join(dir, fmt.Sprintf("events%d.db", i))
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		s, err := embedded.Open(path, embedded.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		s.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(len(raw))/(1<<20), "MiB-file")
	b.ReportMetric(float64(len(raw))/(1<<20)*float64(b.N)/b.Elapsed().Seconds(), "MiB/s")
}
