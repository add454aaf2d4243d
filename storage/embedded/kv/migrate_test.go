package kv_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/hookline/hookline/storage/embedded/kv"
)

// boltTree is every bucket of a bbolt file, nested ones included, with its
// keys, values and sequence, one line per bucket.
func boltTree(t *testing.T, path string) string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out bytes.Buffer
	var walk func(prefix string, b *bolt.Bucket)
	walk = func(prefix string, b *bolt.Bucket) {
		fmt.Fprintf(&out, "%s seq %d:", prefix, b.Sequence())
		var subs [][]byte
		_ = b.ForEach(func(k, v []byte) error {
			if v == nil && b.Bucket(k) != nil {
				subs = append(subs, k)
				return nil
			}
			fmt.Fprintf(&out, " %q=%q", k, v)
			return nil
		})
		out.WriteString("\n")
		for _, s := range subs {
			walk(prefix+"/"+string(s), b.Bucket(s))
		}
	}
	_ = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error { walk(string(name), b); return nil })
	})
	return out.String()
}

// kvTree is boltTree of a kv store.
func kvTree(t *testing.T, dir string) string {
	t.Helper()
	db, err := kv.Open(dir, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out bytes.Buffer
	var walk func(prefix string, b *kv.Bucket)
	walk = func(prefix string, b *kv.Bucket) {
		fmt.Fprintf(&out, "%s seq %d:", prefix, b.Sequence())
		_ = b.ForEach(func(k, v []byte) error { fmt.Fprintf(&out, " %q=%q", k, v); return nil })
		out.WriteString("\n")
		_ = b.ForEachBucket(func(name []byte) error { walk(prefix+"/"+string(name), b.Bucket(name)); return nil })
	}
	_ = db.View(func(tx *kv.Tx) error {
		return tx.ForEach(func(name []byte, b *kv.Bucket) error { walk(string(name), b); return nil })
	})
	return out.String()
}

// boltFile writes a bbolt file holding what the embedded store's does:
// buckets with many keys (more than a migration batch), keys holding 0
// bytes, empty values, sequences, nested buckets (order chains).
func boltFile(t *testing.T, path string, keys int) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for start := 0; start < keys; start += 20_000 {
		if err := db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("events"))
			if err != nil {
				return err
			}
			for i := start; i < min(start+20_000, keys); i++ {
				if err := b.Put(fmt.Appendf(nil, "%08d", i), bytes.Repeat([]byte{byte(i)}, 100)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		open, err := tx.CreateBucket([]byte("dlqopen"))
		if err != nil {
			return err
		}
		for _, k := range []string{"a", "a\x00b", "\x00", "zz\xff"} {
			if err := open.Put([]byte(k), nil); err != nil {
				return err
			}
		}
		if err := open.SetSequence(41); err != nil {
			return err
		}
		chains, err := tx.CreateBucket([]byte("chains"))
		if err != nil {
			return err
		}
		for _, name := range []string{"shop\x00key1", "shop\x00key2"} {
			c, err := chains.CreateBucket([]byte(name))
			if err != nil {
				return err
			}
			for range 3 {
				n, _ := c.NextSequence()
				if err := c.Put(fmt.Appendf(nil, "%08d", n), []byte("job-"+name)); err != nil {
					return err
				}
			}
		}
		_, err = tx.CreateBucket([]byte("empty"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// TestMigrateFromBolt: every bucket, nested bucket, key, empty value and
// sequence of a bbolt file is in the store it migrates to, and a second
// migration to the same place is refused; ExportToBolt writes that store
// back into the same buckets.
func TestMigrateFromBolt(t *testing.T) {
	dir := t.TempDir()
	from, to := filepath.Join(dir, "events.db"), filepath.Join(dir, "events")
	boltFile(t, from, 25_000)
	st, err := kv.MigrateFromBolt(from, to, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Keys != 25_000+4+6 || st.Buckets != 6 {
		t.Errorf("migrated %+v, want 25010 keys in 6 buckets", st)
	}
	want, got := boltTree(t, from), kvTree(t, to)
	if got != want || len(want) < 25_000*100 {
		t.Errorf("the migrated store differs (%d bytes of dump, want %d)", len(got), len(want))
	}
	if _, err := kv.MigrateFromBolt(from, to, kv.Options{}); err == nil {
		t.Error("a second migration to the same place was not refused")
	}
	// and back: the export of the store is the file it came from
	back := filepath.Join(dir, "back.db")
	if err := kv.ExportToBolt(to, back); err != nil {
		t.Fatal(err)
	}
	if got := boltTree(t, back); got != want {
		t.Errorf("the exported file differs from the one migrated (%d bytes of dump, want %d)", len(got), len(want))
	}
	if err := kv.ExportToBolt(to, back); err == nil {
		t.Error("an export over an existing file was not refused")
	}
}

// TestMigrateKilled: a migration killed (SIGKILL) half way leaves no store
// at its destination, and run again it copies everything.
func TestMigrateKilled(t *testing.T) {
	if args := os.Getenv("HOOKLINE_KV_MIGRATE"); args != "" { // the child
		from, to, _ := bytes.Cut([]byte(args), []byte{'|'})
		if _, err := kv.MigrateFromBolt(string(from), string(to), kv.Options{}); err != nil {
			t.Fatal(err)
		}
		return
	}
	dir := t.TempDir()
	from, to := filepath.Join(dir, "events.db"), filepath.Join(dir, "events")
	boltFile(t, from, 300_000)
	cmd := exec.Command(os.Args[0], "-test.run=^TestMigrateKilled$")
	cmd.Env = append(os.Environ(), "HOOKLINE_KV_MIGRATE="+from+"|"+to)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// kill it once it has written part of the new store
	deadline := time.Now().Add(20 * time.Second)
	for {
		if n, _ := dirSize(to + ".migrating"); n > 1<<20 {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("the migration never wrote 1 MiB")
		}
		time.Sleep(time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if _, err := os.Stat(to); err == nil {
		t.Fatal("a killed migration left a store at its destination")
	}
	if _, err := kv.MigrateFromBolt(from, to, kv.Options{}); err != nil {
		t.Fatal(err)
	}
	if want, got := boltTree(t, from), kvTree(t, to); got != want {
		t.Errorf("the store migrated after a kill differs (%d bytes of dump, want %d)", len(got), len(want))
	}
}

// dirSize is the size of the files under dir.
func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if info, err := d.Info(); err == nil {
			n += info.Size()
		}
		return nil
	})
	return n, err
}
