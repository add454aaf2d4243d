package kv_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/hookline/hookline/storage/embedded/kv"
)

func open(t *testing.T) *kv.DB {
	t.Helper()
	db, err := kv.Open(filepath.Join(t.TempDir(), "kv"), kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// walk is every key and value of a bucket, forwards, then backwards from
// the last, as "k=v" strings.
type walker interface {
	First() ([]byte, []byte)
	Last() ([]byte, []byte)
	Next() ([]byte, []byte)
	Prev() ([]byte, []byte)
	Seek([]byte) ([]byte, []byte)
}

// subNames are the sub-bucket names of TestSameAsBbolt: 0 and 1 bytes
// in names (an order chain's name holds a 0 byte), names prefixes of
// others.
var subNames = [][]byte{[]byte("chain0"), []byte("ch\x00in"), []byte("ch\x01\x02"), []byte("ch"), []byte("ch\x00")}

func walk(c walker, bucket func(k []byte) bool) (fwd, back []string, seek string) {
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if !bucket(k) {
			fwd = append(fwd, fmt.Sprintf("%q=%q", k, v))
		}
	}
	for k, v := c.Last(); k != nil; k, v = c.Prev() {
		if !bucket(k) {
			back = append(back, fmt.Sprintf("%q=%q", k, v))
		}
	}
	k, v := c.Seek([]byte("a\x00"))
	for k != nil && bucket(k) {
		k, v = c.Next()
	}
	return fwd, back, fmt.Sprintf("%q=%q", k, v)
}

// TestSameAsBbolt runs the same random operations on bbolt and on kv (keys
// with 0 bytes, empty values, nested buckets, sequences, deletes through
// cursors, a write transaction that fails and one that panics) and
// compares every read: the store's code may rely on bbolt's answers.
func TestSameAsBbolt(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) { sameAsBbolt(t, seed) })
	}
}

func sameAsBbolt(t *testing.T, seed uint64) {
	bdb, err := bolt.Open(filepath.Join(t.TempDir(), "bolt.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	kdb := open(t)
	rng := rand.New(rand.NewPCG(seed, 2))
	keys := [][]byte{[]byte("a"), []byte("a\x00"), []byte("a\x00b"), []byte("a\x01"), []byte("b"), {0}, {0xff, 0xff}, []byte("zz"), []byte("m\x02n")}
	names := [][]byte{[]byte("events"), []byte("queue"), []byte("q")}
	if err := bdb.Update(func(tx *bolt.Tx) error {
		for _, n := range names[:2] {
			if _, err := tx.CreateBucket(n); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := kdb.Update(func(tx *kv.Tx) error {
		for _, n := range names[:2] {
			if _, err := tx.CreateBucket(n); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	fail := errors.New("rolled back")
	for round := range 600 {
		op := rng.IntN(10)
		name := names[rng.IntN(len(names))]
		key := keys[rng.IntN(len(keys))]
		val := []byte(fmt.Sprintf("v%d", round))
		if rng.IntN(5) == 0 {
			val = nil
		}
		sub := subNames[rng.IntN(len(subNames))]
		failing := rng.IntN(8) == 0
		var bres, kres string
		berr := bdb.Update(func(tx *bolt.Tx) error {
			bres = boltOp(tx, op, name, sub, key, val)
			if failing {
				return fail
			}
			return nil
		})
		kerr := kdb.Update(func(tx *kv.Tx) error {
			kres = kvOp(tx, op, name, sub, key, val)
			if failing {
				return fail
			}
			return nil
		})
		if bres != kres || (berr == nil) != (kerr == nil) {
			t.Fatalf("round %d, op %d on %s/%s %q=%q (failing %v): bbolt %q %v, kv %q %v", round, op, name, sub, key, val, failing, bres, berr, kres, kerr)
		}
		// everything reads the same in a read transaction
		var bview, kview string
		_ = bdb.View(func(tx *bolt.Tx) error { bview = boltDump(tx, names); return nil })
		_ = kdb.View(func(tx *kv.Tx) error { kview = kvDump(tx, names); return nil })
		if bview != kview {
			t.Fatalf("round %d, op %d: the stores differ\nbbolt %s\nkv    %s", round, op, bview, kview)
		}
	}
}

func boltOp(tx *bolt.Tx, op int, name, sub, key, val []byte) string {
	b := tx.Bucket(name)
	switch op {
	case 0, 1, 2:
		if b == nil {
			return "no bucket"
		}
		return fmt.Sprint(b.Put(key, val))
	case 3:
		if b == nil {
			return "no bucket"
		}
		return fmt.Sprint(b.Delete(key))
	case 4:
		_, err := tx.CreateBucketIfNotExists(name)
		return fmt.Sprint(err == nil)
	case 5:
		return fmt.Sprint(tx.DeleteBucket(name) == nil)
	case 6:
		if b == nil {
			return "no bucket"
		}
		c, err := b.CreateBucketIfNotExists(sub)
		if err != nil {
			return err.Error()
		}
		n, err := c.NextSequence()
		return fmt.Sprint(n, err, c.Put(key, val))
	case 7:
		if b == nil {
			return "no bucket"
		}
		return fmt.Sprint(b.DeleteBucket(sub) == nil)
	case 8: // delete through a cursor every other key from a seek
		if b == nil {
			return "no bucket"
		}
		c := b.Cursor()
		var out []string
		i := 0
		for k, _ := c.Seek(key); k != nil; k, _ = c.Next() {
			if b.Bucket(k) != nil {
				continue // kv's cursors walk keys alone
			}
			if i%2 == 0 {
				out = append(out, string(k))
				if err := c.Delete(); err != nil {
					return err.Error()
				}
			}
			i++
		}
		return fmt.Sprint(out)
	default: // reads of the write transaction: its own writes
		if b == nil {
			return "no bucket"
		}
		v := b.Get(key)
		return fmt.Sprintf("%q %v", v, v != nil)
	}
}

func kvOp(tx *kv.Tx, op int, name, sub, key, val []byte) string {
	b := tx.Bucket(name)
	switch op {
	case 0, 1, 2:
		if b == nil {
			return "no bucket"
		}
		return fmt.Sprint(b.Put(key, val))
	case 3:
		if b == nil {
			return "no bucket"
		}
		return fmt.Sprint(b.Delete(key))
	case 4:
		_, err := tx.CreateBucketIfNotExists(name)
		return fmt.Sprint(err == nil)
	case 5:
		return fmt.Sprint(tx.DeleteBucket(name) == nil)
	case 6:
		if b == nil {
			return "no bucket"
		}
		c, err := b.CreateBucketIfNotExists(sub)
		if err != nil {
			return err.Error()
		}
		n, err := c.NextSequence()
		return fmt.Sprint(n, err, c.Put(key, val))
	case 7:
		if b == nil {
			return "no bucket"
		}
		return fmt.Sprint(b.DeleteBucket(sub) == nil)
	case 8:
		if b == nil {
			return "no bucket"
		}
		c := b.Cursor()
		var out []string
		i := 0
		for k, _ := c.Seek(key); k != nil; k, _ = c.Next() {
			if i%2 == 0 {
				out = append(out, string(k))
				if err := c.Delete(); err != nil {
					return err.Error()
				}
			}
			i++
		}
		return fmt.Sprint(out)
	default:
		if b == nil {
			return "no bucket"
		}
		v := b.Get(key)
		return fmt.Sprintf("%q %v", v, v != nil)
	}
}

// boltDump is every bucket's keys (both ways), sub-buckets' keys and
// sequences, and a seek from each key.
func boltDump(tx *bolt.Tx, names [][]byte) string {
	var out bytes.Buffer
	for _, n := range names {
		b := tx.Bucket(n)
		if b == nil {
			fmt.Fprintf(&out, "%s: none; ", n)
			continue
		}
		// bbolt's cursors list sub-buckets among the keys (nil value):
		// kv lists them apart (ForEachBucket)
		var keys, buckets []string
		_ = b.ForEach(func(k, v []byte) error {
			if b.Bucket(k) != nil {
				buckets = append(buckets, string(k))
			} else {
				keys = append(keys, fmt.Sprintf("%q=%q", k, v))
			}
			return nil
		})
		fwd, back, seek := walk(b.Cursor(), func(k []byte) bool { return b.Bucket(k) != nil })
		fmt.Fprintf(&out, "%s: %v buckets %v; %v %v %s; ", n, keys, buckets, fwd, back, seek)
		for _, sub := range subNames {
			if c := b.Bucket(sub); c != nil {
				f, back, _ := walk(c.Cursor(), func([]byte) bool { return false })
				fmt.Fprintf(&out, "%s/%q: %v %v seq %d keys %d; ", n, sub, f, back, c.Sequence(), c.Stats().KeyN)
			}
		}
	}
	return out.String()
}

func kvDump(tx *kv.Tx, names [][]byte) string {
	var out bytes.Buffer
	for _, n := range names {
		b := tx.Bucket(n)
		if b == nil {
			fmt.Fprintf(&out, "%s: none; ", n)
			continue
		}
		var keys, buckets []string
		_ = b.ForEach(func(k, v []byte) error {
			keys = append(keys, fmt.Sprintf("%q=%q", k, v))
			return nil
		})
		_ = b.ForEachBucket(func(name []byte) error {
			buckets = append(buckets, string(name))
			return nil
		})
		fwd, back, seek := walk(b.Cursor(), func([]byte) bool { return false })
		fmt.Fprintf(&out, "%s: %v buckets %v; %v %v %s; ", n, keys, buckets, fwd, back, seek)
		for _, sub := range subNames {
			if c := b.Bucket(sub); c != nil {
				f, back, _ := walk(c.Cursor(), func([]byte) bool { return false })
				fmt.Fprintf(&out, "%s/%q: %v %v seq %d keys %d; ", n, sub, f, back, c.Sequence(), c.KeyN())
			}
		}
	}
	return out.String()
}

// TestPanicDiscards: a write transaction that panics commits nothing, and
// the next one runs.
func TestPanicDiscards(t *testing.T) {
	db := open(t)
	func() {
		defer func() { _ = recover() }()
		_ = db.Update(func(tx *kv.Tx) error {
			b, _ := tx.CreateBucket([]byte("b"))
			_ = b.Put([]byte("k"), []byte("v"))
			panic("boom")
		})
	}()
	if err := db.View(func(tx *kv.Tx) error {
		if tx.Bucket([]byte("b")) != nil {
			return errors.New("the panicking transaction's bucket is there")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *kv.Tx) error { _, err := tx.CreateBucket([]byte("b")); return err }); err != nil {
		t.Fatal(err)
	}
}

// TestReadOnly: a read transaction refuses writes, and sees a snapshot.
func TestReadOnly(t *testing.T) {
	db := open(t)
	if err := db.Update(func(tx *kv.Tx) error {
		b, err := tx.CreateBucket([]byte("b"))
		if err != nil {
			return err
		}
		return b.Put([]byte("k"), []byte("1"))
	}); err != nil {
		t.Fatal(err)
	}
	err := db.View(func(tx *kv.Tx) error {
		b := tx.Bucket([]byte("b"))
		if err := b.Put([]byte("k"), nil); !errors.Is(err, kv.ErrTxNotWritable) {
			t.Errorf("Put in a read transaction: %v", err)
		}
		// a write committed meanwhile is not seen
		if err := db.Update(func(tx *kv.Tx) error { return tx.Bucket([]byte("b")).Put([]byte("k"), []byte("2")) }); err != nil {
			return err
		}
		if v := b.Get([]byte("k")); !slices.Equal(v, []byte("1")) {
			t.Errorf("the snapshot reads %q, want 1", v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestUnsynced: an unsynced write is visible at once and kept by a clean
// close.
func TestUnsynced(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kv")
	db, err := kv.Open(dir, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *kv.Tx) error { _, err := tx.CreateBucket([]byte("b")); return err }); err != nil {
		t.Fatal(err)
	}
	if err := db.UpdateUnsynced(func(tx *kv.Tx) error { return tx.Bucket([]byte("b")).Put([]byte("k"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	read := func(db *kv.DB) (v []byte) {
		_ = db.View(func(tx *kv.Tx) error { v = tx.Bucket([]byte("b")).Get([]byte("k")); return nil })
		return v
	}
	if v := read(db); string(v) != "v" {
		t.Fatalf("an unsynced write reads %q", v)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db, err = kv.Open(dir, kv.Options{}); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v := read(db); string(v) != "v" {
		t.Fatalf("after a clean close, an unsynced write reads %q", v)
	}
}

// filesHolding names the files under dir that contain b.
func filesHolding(t *testing.T, dir string, b []byte) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil // removed meanwhile
		}
		if err != nil {
			return err
		}
		if bytes.Contains(data, b) {
			out = append(out, filepath.Base(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEraseLeavesNoBytes: after Erase, the deleted value's bytes are in
// no file of the store (write-ahead logs, flushed and compacted tables),
// wherever they were: in the memtable and its log, in a table of the
// last level under newer tables; no old log waits on disk to be recycled. A plain Update
// deleting the same key leaves them on disk: the control that shows the
// test can see them.
func TestEraseLeavesNoBytes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		where func(t *testing.T, db *kv.DB) // moves the secret after it is written (nil: erased at once)
		erase bool
	}{
		{"in the memtable and its log", func(*testing.T, *kv.DB) {}, true},
		{"in the log, erased at once", nil, true},
		{"in a compacted table", func(t *testing.T, db *kv.DB) {
			if err := db.Engine().Compact(t.Context(), []byte{0}, []byte{0xff}, false); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"control: deleted, not erased", func(t *testing.T, db *kv.DB) {
			if err := db.Engine().Flush(); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "kv")
			db, err := kv.Open(dir, kv.Options{MemTable: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			secret := []byte(fmt.Sprintf("SECRET-%016x", rand.Uint64()))
			filler := bytes.Repeat([]byte("f"), 1024)
			put := func(from, to int) {
				if err := db.Update(func(tx *kv.Tx) error {
					b, err := tx.CreateBucketIfNotExists([]byte("events"))
					if err != nil {
						return err
					}
					for i := from; i < to; i++ {
						if err := b.Put([]byte(fmt.Sprintf("k%06d", i)), filler); err != nil {
							return err
						}
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			put(0, 3000) // several memtables: logs flushed and (without noReuse) recycled
			if err := db.Update(func(tx *kv.Tx) error {
				return tx.Bucket([]byte("events")).Put([]byte("victim"), append(bytes.Clone(secret), filler...))
			}); err != nil {
				t.Fatal(err)
			}
			if tc.where != nil {
				tc.where(t, db)
				put(3000, 3500)
			}
			// a flush running meanwhile could delete the log holding the
			// secret after the walk listed it and before it read it, and
			// write the table holding it after the walk listed the files
			if err := kv.Settled(t.Context(), db.Engine()); err != nil {
				t.Fatal(err)
			}
			if got := filesHolding(t, dir, secret); len(got) == 0 {
				t.Fatal("the secret is in no file before it is deleted: the test cannot see it")
			}
			del := func(tx *kv.Tx) error { return tx.Bucket([]byte("events")).Delete([]byte("victim")) }
			if tc.erase {
				err = db.Erase(t.Context(), del)
			} else {
				err = db.Update(del)
			}
			if err != nil {
				t.Fatal(err)
			}
			got := filesHolding(t, dir, secret)
			if tc.erase && len(got) > 0 {
				t.Errorf("after Erase the secret is still in %v", got)
			}
			if !tc.erase && len(got) == 0 {
				t.Error("after a plain delete the secret is in no file: the control sees nothing")
			}
		})
	}
}

// TestPin: a pinned bucket is found by every transaction and cannot be
// deleted; pinning one that does not exist fails; other buckets keep
// bbolt's behaviour.
func TestPin(t *testing.T) {
	db := open(t)
	if err := db.Pin([]byte("missing")); !errors.Is(err, kv.ErrBucketNotFound) {
		t.Fatalf("pinning a missing bucket: %v", err)
	}
	if err := db.Update(func(tx *kv.Tx) error {
		for _, name := range []string{"pinned", "free"} {
			if _, err := tx.CreateBucket([]byte(name)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Pin([]byte("pinned")); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *kv.Tx) error {
		b := tx.Bucket([]byte("pinned"))
		if b == nil {
			return errors.New("the pinned bucket not found")
		}
		if err := b.Put([]byte("k"), []byte("v")); err != nil {
			return err
		}
		if _, err := tx.CreateBucket([]byte("pinned")); !errors.Is(err, kv.ErrBucketExists) {
			t.Errorf("creating the pinned bucket again: %v", err)
		}
		if err := tx.DeleteBucket([]byte("pinned")); !errors.Is(err, kv.ErrBucketPinned) {
			t.Errorf("deleting the pinned bucket: %v", err)
		}
		return tx.DeleteBucket([]byte("free"))
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.View(func(tx *kv.Tx) error {
		if v := tx.Bucket([]byte("pinned")).Get([]byte("k")); string(v) != "v" {
			t.Errorf("the pinned bucket's key: %q", v)
		}
		if tx.Bucket([]byte("free")) != nil {
			t.Error("a deleted bucket is still found")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestMissingTableFailsTheRead: a table deleted under the running store
// (its directory removed, say) fails the reads that need it, and their
// transactions, instead of Pebble's default for a corruption, which exits
// the process (and would take the whole Caddy with it).
func TestMissingTableFailsTheRead(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kv")
	db, err := kv.Open(dir, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *kv.Tx) error {
		b, err := tx.CreateBucket([]byte("b"))
		if err != nil {
			return err
		}
		return b.Put([]byte("k"), []byte("v"))
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil { // the memtable is flushed to a table
		t.Fatal(err)
	}
	if db, err = kv.Open(dir, kv.Options{}); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	if len(tables) == 0 {
		t.Fatal("no table: the test deletes nothing")
	}
	for _, f := range tables {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	err = db.View(func(tx *kv.Tx) error {
		if b := tx.Bucket([]byte("b")); b != nil {
			b.Get([]byte("k"))
		}
		return nil
	})
	if err == nil {
		t.Fatal("reading a deleted table: no error")
	}
	t.Logf("the read failed: %.120s", err)
}
