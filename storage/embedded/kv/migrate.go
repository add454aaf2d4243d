package kv

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// MigrateStats says what MigrateFromBolt copied.
type MigrateStats struct {
	Buckets int // buckets, nested ones included
	Keys    int // keys, over every bucket
}

// migrateBatch is how many keys one write transaction of a migration
// copies.
const migrateBatch = 10_000

// MigrateFromBolt copies every bucket of the bbolt file at from (nested
// buckets, keys, empty values and sequences) into a new store at dir. It
// is crash-safe and can simply be run again: it builds the store in
// dir+".migrating" (removing one a crash left behind) from a read
// transaction of the file, syncs it, and only then renames it to dir, so
// that dir is either absent or complete. The bbolt file is not changed:
// the caller retires it once it has checked the store at dir. dir must
// not exist.
func MigrateFromBolt(from, dir string, o Options) (MigrateStats, error) {
	var st MigrateStats
	if _, err := os.Stat(dir); err == nil {
		return st, fmt.Errorf("kv: migrating %s: %s exists", from, dir)
	}
	tmp := dir + ".migrating"
	if err := os.RemoveAll(tmp); err != nil {
		return st, err
	}
	// a running store holds the file: waited for up to o.LockTimeout (at
	// least a second), then refused
	src, err := bolt.Open(from, 0o600, &bolt.Options{ReadOnly: true, Timeout: max(o.LockTimeout, time.Second)})
	if err != nil {
		return st, fmt.Errorf("kv: opening %s: %w", from, err)
	}
	defer src.Close()
	dst, err := Open(tmp, o)
	if err != nil {
		return st, err
	}
	err = src.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			return copyBucket(dst, b, [][]byte{bytes.Clone(name)}, &st)
		})
	})
	if err == nil {
		// a synced commit makes every unsynced one before it durable
		err = dst.Update(func(*Tx) error { return nil })
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return st, fmt.Errorf("kv: migrating %s: %w", from, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return st, err
	}
	return st, SyncDir(filepath.Dir(dir))
}

// copyBucket copies bbolt bucket b, at path in dst (created there), with
// its sub-buckets, migrateBatch keys a transaction.
func copyBucket(dst *DB, b *bolt.Bucket, path [][]byte, st *MigrateStats) error {
	st.Buckets++
	if err := dst.UpdateUnsynced(func(tx *Tx) error {
		c, err := createPath(tx, path)
		if err != nil {
			return err
		}
		return c.SetSequence(b.Sequence())
	}); err != nil {
		return err
	}
	var subs [][]byte
	cur := b.Cursor()
	k, v := cur.First()
	for k != nil {
		err := dst.UpdateUnsynced(func(tx *Tx) error {
			c := bucketAt(tx, path)
			for n := 0; k != nil && n < migrateBatch; k, v = cur.Next() {
				if v == nil && b.Bucket(k) != nil {
					subs = append(subs, bytes.Clone(k))
					continue
				}
				if err := c.Put(k, v); err != nil {
					return err
				}
				st.Keys++
				n++
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, name := range subs {
		if err := copyBucket(dst, b.Bucket(name), append(path[:len(path):len(path)], name), st); err != nil {
			return err
		}
	}
	return nil
}

// createPath creates the bucket at path (its parents exist).
func createPath(tx *Tx, path [][]byte) (*Bucket, error) {
	parent := tx.root()
	for _, name := range path[:len(path)-1] {
		if parent = parent.Bucket(name); parent == nil {
			return nil, ErrBucketNotFound
		}
	}
	return parent.CreateBucket(path[len(path)-1])
}

// bucketAt is the bucket at path.
func bucketAt(tx *Tx, path [][]byte) *Bucket {
	b := tx.root()
	for _, name := range path {
		b = b.Bucket(name)
	}
	return b
}

// SyncDir fsyncs directory dir, so that a rename in it is durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}

// ExportToBolt writes every bucket of the store at dir (not open), nested
// ones, keys, empty values and sequences included, into a new bbolt file
// at path: MigrateFromBolt's inverse, the way back to a version that kept
// the store in a bbolt file (and the earlier versions' file, for tests of
// the migration). It builds the file aside (path+".exporting"), in
// transactions of migrateBatch keys, read from one snapshot of the store,
// syncs it and renames it into place: path is complete or absent. path
// must not exist.
func ExportToBolt(dir, path string) error {
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("kv: exporting %s: %s exists", dir, path)
	}
	tmp := path + ".exporting"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	src, err := Open(dir, Options{})
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return err
	}
	err = src.View(func(tx *Tx) error {
		return tx.ForEach(func(name []byte, b *Bucket) error {
			return exportBucket(dst, b, [][]byte{bytes.Clone(name)})
		})
	})
	if cerr := dst.Close(); err == nil { // bbolt syncs every commit
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("kv: exporting %s: %w", dir, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// exportBucket copies bucket b into the bbolt file at path (created there,
// its parents exist), then its sub-buckets, migrateBatch keys a
// transaction.
func exportBucket(dst *bolt.DB, b *Bucket, path [][]byte) error {
	// at is the bbolt bucket at the first n names of path
	at := func(tx *bolt.Tx, n int) *bolt.Bucket {
		bb := tx.Bucket(path[0])
		for _, name := range path[1:n] {
			bb = bb.Bucket(name)
		}
		return bb
	}
	if err := dst.Update(func(tx *bolt.Tx) error {
		var nb *bolt.Bucket
		var err error
		if len(path) == 1 {
			nb, err = tx.CreateBucket(path[0])
		} else {
			nb, err = at(tx, len(path)-1).CreateBucket(path[len(path)-1])
		}
		if err != nil {
			return err
		}
		return nb.SetSequence(b.Sequence())
	}); err != nil {
		return err
	}
	c := b.cursor()
	defer c.close()
	k, v := c.First()
	for k != nil {
		if err := dst.Update(func(tx *bolt.Tx) error {
			bb := at(tx, len(path))
			for n := 0; k != nil && n < migrateBatch; k, v = c.Next() {
				if err := bb.Put(k, v); err != nil {
					return err
				}
				n++
			}
			return nil
		}); err != nil {
			return err
		}
	}
	if b.tx.err != nil {
		return b.tx.err
	}
	return b.ForEachBucket(func(name []byte) error {
		return exportBucket(dst, b.Bucket(name), append(path[:len(path):len(path)], bytes.Clone(name)))
	})
}
