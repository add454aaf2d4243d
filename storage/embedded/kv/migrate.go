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
// that dir is either absent or complete. The bbolt file is not changed: the
// caller retires it once the store at dir is open. dir must not exist.
func MigrateFromBolt(from, dir string, o Options) (MigrateStats, error) {
	var st MigrateStats
	if _, err := os.Stat(dir); err == nil {
		return st, fmt.Errorf("kv: migrating %s: %s exists", from, dir)
	}
	tmp := dir + ".migrating"
	if err := os.RemoveAll(tmp); err != nil {
		return st, err
	}
	src, err := bolt.Open(from, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second}) // held by a running store: refused
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
	return st, syncDir(filepath.Dir(dir))
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

// syncDir fsyncs directory dir, so that a rename in it is durable.
func syncDir(dir string) error {
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
