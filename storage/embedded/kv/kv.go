// Package kv gives the embedded store bbolt's model of its data over
// Pebble, the log-structured engine chosen by measurement
// (docs/benchmarks.md): named buckets of sorted keys (nested too), cursors,
// read transactions on a consistent snapshot, and one write transaction at
// a time that commits all of its writes, synced, or none. The store's
// rules are written against this model; what differs under it is the
// engine's: writes go to a log and sorted tables, deleted keys leave
// tombstones until a compaction drops them, and space comes back to the
// file system.
//
// Layout: a bucket has a path (its parent's, then 0x02, its name escaped
// so that it holds no 0 byte, and a 0 byte); its own keys are stored after
// its path and 0x01, so that they sort apart from its sub-buckets' (after
// 0x02); a bucket exists while its marker key does, and its sequence has a
// key of its own.
package kv

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Errors, as bbolt names them.
var (
	ErrBucketNotFound = errors.New("kv: bucket not found")
	ErrBucketExists   = errors.New("kv: bucket already exists")
	ErrBucketName     = errors.New("kv: bucket name required")
	ErrKeyRequired    = errors.New("kv: key required")
	ErrTxNotWritable  = errors.New("kv: tx not writable")
	ErrClosed         = errors.New("kv: database not open")
	// ErrBucketPinned is deleting a bucket DB.Pin named.
	ErrBucketPinned = errors.New("kv: bucket pinned")
)

// Options tune the engine.
type Options struct {
	// BlockCache is the size of the block cache in bytes (default 64
	// MiB: a lease's reads stay in memory).
	BlockCache int64
	// MemTable is the size of a memtable in bytes (default 16 MiB: with
	// 4 MiB, flushes and the compactions behind them took 40% of the CPU
	// of an enqueue from 128 writers, and 128 writers enqueued 16k-20k
	// events/s against 21k-23k; each write-ahead log file is
	// preallocated to about this size).
	MemTable uint64
	// LockTimeout bounds the wait for the directory's lock while another
	// process (or another open DB) holds it; zero tries once.
	LockTimeout time.Duration
	// FS is the file system the store's files are written through (nil:
	// the operating system's); tests give one that stalls its syncs. It
	// must write to the operating system's files at dir: the lock,
	// Erase and the migration also read them directly.
	FS vfs.FS
}

// DB is an open store directory.
type DB struct {
	db   *pebble.DB
	dir  string
	lock *pebble.Lock
	wmu  sync.Mutex // one write transaction at a time
	// readers is held (read) by each View for its whole run, and (write)
	// while a scrubbing transaction commits (Tx.Scrubbing): a snapshot
	// older than that commit would keep the values it deleted or
	// overwrote alive through every compaction, even into the bottom
	// level, which a manual compaction never rewrites into itself
	// (Pebble's own elision compactions do, on no schedule).
	readers sync.RWMutex
	// local is SetLocal's value.
	local any
	// pinned are the paths of the buckets Pin named.
	pinned map[string]bool
	// life is held (read) by every transaction, scrub and compaction for
	// its whole run, and (write) by Close: Pebble panics when used
	// once closed, where bbolt answers an error (ErrClosed here).
	life   sync.RWMutex
	closed bool
}

// enter holds d open until the returned function is called, or answers
// ErrClosed.
func (d *DB) enter() (func(), error) {
	d.life.RLock()
	if d.closed {
		d.life.RUnlock()
		return nil, ErrClosed
	}
	return d.life.RUnlock, nil
}

// SetLocal sets a value every transaction of d carries (Tx.Local): state
// of the caller's that its code, reaching the store through a
// transaction, needs. Set it before the first transaction.
func (d *DB) SetLocal(v any) { d.local = v }

// Pin tells d that the top-level buckets named exist for as long as d is
// open: a transaction finds them without reading the engine (a lease asks
// for the same few buckets in every one), and deleting one fails with
// ErrBucketPinned. It fails with ErrBucketNotFound when one does not
// exist. Call it before the first transaction that may use them.
func (d *DB) Pin(names ...[]byte) error {
	pinned := map[string]bool{}
	err := d.View(func(tx *Tx) error {
		for _, name := range names {
			p, err := tx.root().child(name)
			if err != nil {
				return err
			}
			if !tx.root().exists(p) {
				return fmt.Errorf("%w: %q", ErrBucketNotFound, name)
			}
			pinned[string(p)] = true
		}
		return nil
	})
	if err == nil {
		d.pinned = pinned
	}
	return err
}

// Open opens (creating it if needed) the store in directory dir.
func Open(dir string, o Options) (*DB, error) {
	if o.BlockCache <= 0 {
		o.BlockCache = 64 << 20
	}
	if o.MemTable == 0 {
		o.MemTable = 16 << 20
	}
	fs := o.FS
	if fs == nil {
		fs = vfs.Default
	}
	lock, err := lockDir(dir, fs, o.LockTimeout) // makes dir if needed
	if err != nil {
		return nil, err
	}
	cache := pebble.NewCache(o.BlockCache)
	defer cache.Unref() // the DB holds its own reference
	po := &pebble.Options{Cache: cache, MemTableSize: o.MemTable, Logger: Quiet{},
		Cleaner: deleter{}, Lock: lock, FS: o.FS, // nil: Pebble's default, with its disk-health checks
		EventListener: &pebble.EventListener{DataCorruption: reportCorruption}}
	// tables are written uncompressed: what the store promises about the
	// bytes it keeps (an erased event's are in no file) is then checked
	// on the files as they are; a sealed payload does not compress, and
	// compressing costs CPU the two cores' ingest needs
	po.ApplyCompressionSettings(func() pebble.DBCompressionSettings { return pebble.DBCompressionNone })
	// a Bloom filter in every table: most of the store's reads look for
	// a key that is not there (a new event's claim), which without one
	// seeks into every level's table that might hold it
	for i := range po.Levels {
		po.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	db, err := pebble.Open(dir, po)
	if err != nil {
		lock.Close()
		return nil, err
	}
	return &DB{db: db, dir: dir, lock: lock}, nil
}

// LockDir takes the lock of directory dir (a store's, or one made to
// hold a lock: its LOCK file), trying again every 20 ms while another
// process or DB holds it, for up to timeout. Close releases it.
// The directory is made again before each try: the process holding the
// lock may remove it once done.
func LockDir(dir string, timeout time.Duration) (io.Closer, error) {
	lock, err := lockDir(dir, vfs.Default, timeout)
	if err != nil {
		return nil, err // not a nil *pebble.Lock in a non-nil io.Closer
	}
	return lock, nil
}

// lockDir is LockDir, for Open (which holds the lock as Pebble takes it).
func lockDir(dir string, fs vfs.FS, timeout time.Duration) (*pebble.Lock, error) {
	deadline := time.Now().Add(timeout)
	for {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		lock, err := pebble.LockDirectory(dir, fs)
		if err == nil {
			return lock, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("kv: locking %s (held by another process?): %w", dir, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Close closes the store and releases its directory, once the
// transactions under way are over; it answers ErrClosed when called again.
func (d *DB) Close() error {
	d.life.Lock()
	defer d.life.Unlock()
	if d.closed {
		return ErrClosed
	}
	d.closed = true
	err := d.db.Close()
	if lerr := d.lock.Close(); err == nil {
		err = lerr
	}
	return err
}

// deleter is Pebble's default cleaner (an obsolete file is removed) that
// also keeps Pebble from recycling write-ahead logs: a recycled log keeps
// an old log's bytes (an erased event's, say) until they are written over,
// and obsolete logs wait on disk to be recycled. Pebble recycles no log
// when its cleaner needs the files' contents, which ArchiveCleaner says
// (an unexported marker, promoted from the nested field); Clean is
// DeleteCleaner's, one level up.
type deleter struct {
	pebble.DeleteCleaner
	archiving
}

type archiving struct{ pebble.ArchiveCleaner }

func (deleter) String() string { return "delete, no log recycling" }

// Engine is the Pebble database under the store (flushes, compactions,
// metrics).
func (d *DB) Engine() *pebble.DB { return d.db }

// reader is what a transaction reads through: a snapshot, or the write
// transaction's indexed batch (its own writes over the database).
type reader interface {
	Get(key []byte) ([]byte, io.Closer, error)
	NewIter(o *pebble.IterOptions) (*pebble.Iterator, error)
}

// View runs fn in a read transaction on a snapshot. A read error (the
// engine's, never "not found") is its error when fn returns nil.
func (d *DB) View(fn func(*Tx) error) error {
	leave, err := d.enter()
	if err != nil {
		return err
	}
	defer leave()
	d.readers.RLock()
	defer d.readers.RUnlock()
	snap := d.db.NewSnapshot()
	tx := &Tx{r: snap, local: d.local, pinned: d.pinned}
	defer func() {
		tx.close()
		snap.Close()
	}()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.err
}

// Update runs fn in the write transaction and commits its writes synced
// if it returns nil; an error (or a panic, which goes on) discards them.
func (d *DB) Update(fn func(*Tx) error) error { return d.update(fn, pebble.Sync) }

// UpdateUnsynced is Update without waiting for the sync: the writes are
// visible at once and durable with the next synced commit (or a switch
// to a new log, or Close); a crash before then, kill -9 included (the
// engine buffers its log in the process), loses them, all together.
// For writes at-least-once allows to lose (a delivery's outcome: lost, it
// is delivered again).
func (d *DB) UpdateUnsynced(fn func(*Tx) error) error { return d.update(fn, pebble.NoSync) }

func (d *DB) update(fn func(*Tx) error, sync *pebble.WriteOptions) error {
	_, err := d.updateTx(fn, sync)
	return err
}

// updateTx is update, answering the transaction (what it deleted).
func (d *DB) updateTx(fn func(*Tx) error, sync *pebble.WriteOptions) (*Tx, error) {
	leave, err := d.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	d.wmu.Lock()
	defer d.wmu.Unlock()
	b := d.db.NewIndexedBatch()
	tx := &Tx{r: b, w: b, local: d.local, pinned: d.pinned}
	committed := false
	defer func() {
		tx.close()
		if !committed {
			b.Close()
		}
		for _, f := range tx.onEnd {
			f()
		}
	}()
	if err := fn(tx); err != nil {
		return nil, err
	}
	if tx.err != nil {
		return nil, tx.err // a read failed: what fn decided on it is not committed
	}
	tx.close() // iterators must be closed before the batch commits
	committed = true
	defer b.Close()
	if tx.scrubbing {
		d.readers.Lock()
	}
	err = b.Commit(sync)
	if tx.scrubbing {
		d.readers.Unlock()
	}
	if err != nil {
		return nil, err
	}
	return tx, nil
}

// Erase is Update for a transaction that erases data for good: once it
// returns, the values of every key it deleted are in no file of the
// store. It commits with no read transaction open (Tx.Scrubbing), flushes
// the memtable, so that the write-ahead log holding the values is obsolete
// (logs are never recycled: deleter), compacts the key ranges deleted
// through every level, so that no table holds an older value, and waits
// for Pebble to delete the obsolete files (FilesDeleted). Its cost is that
// of the flush and of rewriting the tables those ranges touch, not of the
// whole store. A deleted key itself may stay named in the manifest, as a
// table's first or last key, until the manifest is rewritten.
func (d *DB) Erase(ctx context.Context, fn func(*Tx) error) error {
	tx, err := d.updateTx(func(tx *Tx) error {
		tx.Scrubbing()
		return fn(tx)
	}, pebble.Sync)
	if err != nil {
		return err
	}
	return d.compact(ctx, tx.erased)
}

// Span is the keys of top-level bucket Bucket that start with Prefix
// (every key of the bucket and of its sub-buckets when Prefix is empty).
type Span struct {
	Bucket []byte
	Prefix []byte
}

// Scrub makes sure that no file of the store holds a value the keys of
// spans had before the scrubbing transactions (Tx.Scrubbing) that deleted
// or rewrote them: what Erase does for the ranges its transaction
// deleted, for writes made elsewhere (a transaction shared with others,
// whose deletes are not all meant to be erased; a rewrite, which leaves
// the old values in older tables until compacted). A value deleted or
// overwritten by a transaction that was not scrubbing may survive it (a
// snapshot open at that commit may have kept it through a compaction into
// the bottom level). It costs a flush and the rewrite of the tables the
// spans touch; reads and writes go on meanwhile.
func (d *DB) Scrub(ctx context.Context, spans []Span) error {
	ranges := make([][2][]byte, 0, len(spans))
	for _, sp := range spans {
		p, err := (&Bucket{}).child(sp.Bucket)
		if err != nil {
			return err
		}
		if len(sp.Prefix) > 0 {
			p = append(append(p, 1), sp.Prefix...)
		}
		ranges = append(ranges, [2][]byte{p, end(p)})
	}
	return d.compact(ctx, ranges)
}

// compact flushes the memtable, so that the write-ahead logs holding the
// ranges' old values are obsolete (logs are never recycled: deleter),
// compacts the ranges through every level, so that no table holds a value
// a newer one shadows (no snapshot needs it: the transactions that
// shadowed them committed with none open), and waits for Pebble to delete
// the obsolete files (FilesDeleted: tables an iterator still reads are
// deleted once it closes).
func (d *DB) compact(ctx context.Context, ranges [][2][]byte) error {
	leave, err := d.enter()
	if err != nil {
		return err
	}
	defer leave()
	before, err := d.engineFiles()
	if err != nil {
		return err
	}
	if err := d.db.Flush(); err != nil {
		return err
	}
	for _, r := range ranges {
		if err := d.db.Compact(ctx, r[0], r[1], false); err != nil {
			return err
		}
	}
	// and the tables the engine wrote meanwhile (a flush, a compaction of
	// its own whose inputs held old values) that the compactions made
	// obsolete; not its logs: every log holding an old value was there
	// before (the values were written before the scrubbing commit, which
	// came before this), and the one it writes to now is live
	after, err := d.engineFiles()
	if err != nil {
		return err
	}
	for _, name := range after {
		if strings.HasSuffix(name, ".sst") {
			before = append(before, name)
		}
	}
	return d.gone(ctx, before)
}

// engineFiles lists the write-ahead logs and tables in the directory.
func (d *DB) engineFiles() ([]string, error) {
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".log") || strings.HasSuffix(n, ".sst") {
			out = append(out, n)
		}
	}
	return out, nil
}

// gone waits until no file of before is on disk but the tables still
// live (Pebble deletes obsolete files in the background, and a table an
// iterator still reads once that iterator is closed), or ctx ends. Every
// log of before is obsolete once the memtable has been flushed, and every
// table that held a compacted range was rewritten: what stays live of
// before holds none of the ranges' old values.
func (d *DB) gone(ctx context.Context, before []string) error {
	for {
		tables, err := d.db.SSTables()
		if err != nil {
			return err
		}
		live := map[string]bool{}
		for _, level := range tables {
			for _, t := range level {
				live[fmt.Sprintf("%06d.sst", uint64(t.BackingSSTNum))] = true
			}
		}
		left := ""
		for _, name := range before {
			if live[name] {
				continue
			}
			if _, err := os.Stat(filepath.Join(d.dir, name)); err == nil {
				left = name
				break
			}
		}
		if left == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kv: waiting for %s to be deleted: %w", left, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Compact compacts the own keys of top-level bucket name in [from, to]
// (nil: from its first, to its last) through every level: the tables
// holding them are rewritten without what was deleted or overwritten, and
// the space comes back to the file system once Pebble has deleted the old
// ones. For ranges a cleanup emptied, which the engine's own compactions
// may take long to reach when writes stop.
func (d *DB) Compact(ctx context.Context, name, from, to []byte) error {
	leave, err := d.enter()
	if err != nil {
		return err
	}
	defer leave()
	p, err := (&Bucket{}).child(name)
	if err != nil {
		return err
	}
	own := append(p, 1)
	start, stop := append(bytes.Clone(own), from...), end(own)
	if to != nil {
		stop = append(append(bytes.Clone(own), to...), 0) // just after to
	}
	return d.db.Compact(ctx, start, stop, false)
}

// Settled waits until Pebble has run no flush or compaction for 100 ms
// (the background work a burst of writes leaves), or ctx ends: for
// measurements that must not share the machine with it.
func Settled(ctx context.Context, db *pebble.DB) error {
	quiet := 0
	for {
		if m := db.Metrics(); m.Compact.NumInProgress == 0 && m.Flush.NumInProgress == 0 {
			if quiet++; quiet == 10 {
				return nil
			}
		} else {
			quiet = 0
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kv: waiting for compactions: %w", ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// FilesDeleted waits until Pebble has deleted every table it no longer
// needs (obsolete and zombie tables: deleted in the background once a
// compaction is over), and with logs every obsolete write-ahead log too
// (only for a DB that does not recycle them, as a store Open made: a
// recycling one keeps some), or ctx ends.
func FilesDeleted(ctx context.Context, db *pebble.DB, logs bool) error {
	for {
		m := db.Metrics()
		if m.Table.ObsoleteCount == 0 && m.Table.ZombieCount == 0 && (!logs || m.WAL.ObsoleteFiles == 0) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kv: waiting for obsolete files to be deleted: %w", ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
}

// Tx is a transaction: read-only (View) or the write transaction
// (Update). Values and keys it returns are copies, valid after it ends.
type Tx struct {
	r     reader
	w     *pebble.Batch // nil: read-only
	iters []*pebble.Iterator
	// err is the first read error: a Get or a cursor then answers as if
	// nothing were there, and the transaction fails with it (bbolt's reads
	// cannot fail; Pebble's can).
	err error
	// erased are the key ranges [start, end) the transaction deleted, for
	// Erase.
	erased [][2][]byte
	// onEnd are OnEnd's functions.
	onEnd []func()
	// local is the DB's SetLocal value.
	local any
	// pinned is the DB's (Pin).
	pinned map[string]bool
	// scrubbing is set by Scrubbing.
	scrubbing bool
	// buckets caches whether the bucket at a path exists, as this
	// transaction sees it: a transaction asks for the same few buckets
	// over and over (each write of a shared commit), and each answer
	// would otherwise be a read of the engine.
	buckets map[string]bool
}

// OnEnd registers fn to run once the write transaction has ended,
// committed or not, before Update returns (in the order registered). A
// commit that fails may still have been applied (Pebble publishes a batch
// before its sync returns): fn cannot tell.
func (tx *Tx) OnEnd(fn func()) { tx.onEnd = append(tx.onEnd, fn) }

// Scrubbing makes the write transaction commit with no read transaction
// open: it waits for those open, and holds new ones off until it has
// committed. No snapshot then keeps a value it deletes or overwrites, so
// the compactions drop those values, and Scrub can make sure no file
// holds them. For the transactions of an erasure or a rekey.
func (tx *Tx) Scrubbing() { tx.scrubbing = true }

// Local is the value the DB's SetLocal set (nil: none).
func (tx *Tx) Local() any { return tx.local }

// deleted records the key range [start, end) as deleted by tx.
func (tx *Tx) deleted(start, end []byte) {
	tx.erased = append(tx.erased, [2][]byte{bytes.Clone(start), bytes.Clone(end)})
}

// deleteKey deletes one engine key.
func (tx *Tx) deleteKey(k []byte) error {
	tx.deleted(k, append(bytes.Clone(k), 0))
	return tx.w.Delete(k, nil)
}

// close closes the iterators the transaction's cursors opened.
func (tx *Tx) close() {
	for _, it := range tx.iters {
		_ = it.Close()
	}
	tx.iters = nil
}

// Writable reports whether tx may write.
func (tx *Tx) Writable() bool { return tx.w != nil }

// root is the bucket of the top-level buckets (it holds no keys of its
// own).
func (tx *Tx) root() *Bucket { return &Bucket{tx: tx} }

// Bucket is the top-level bucket name, nil when it does not exist.
func (tx *Tx) Bucket(name []byte) *Bucket { return tx.root().Bucket(name) }

// CreateBucket creates the top-level bucket name (ErrBucketExists when
// it exists).
func (tx *Tx) CreateBucket(name []byte) (*Bucket, error) { return tx.root().CreateBucket(name) }

// CreateBucketIfNotExists is the top-level bucket name, created if needed.
func (tx *Tx) CreateBucketIfNotExists(name []byte) (*Bucket, error) {
	return tx.root().CreateBucketIfNotExists(name)
}

// DeleteBucket deletes the top-level bucket name and all it holds.
func (tx *Tx) DeleteBucket(name []byte) error { return tx.root().DeleteBucket(name) }

// ForEach calls fn with each top-level bucket in order of name.
func (tx *Tx) ForEach(fn func(name []byte, b *Bucket) error) error {
	return tx.root().ForEachBucket(func(name []byte) error { return fn(name, tx.Bucket(name)) })
}

// failed records a read error (the first one counts).
func (tx *Tx) failed(err error) {
	if err != nil && tx.err == nil {
		tx.err = fmt.Errorf("kv: reading: %w", err)
	}
}

// get reads key (nil when absent; a present empty value is non-nil).
func (tx *Tx) get(key []byte) ([]byte, error) {
	v, closer, err := tx.r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		tx.failed(err)
		return nil, err
	}
	out := make([]byte, len(v))
	copy(out, v)
	return out, closer.Close()
}

// newIter opens an iterator over [lo, hi) that the caller closes.
func (tx *Tx) newIter(lo, hi []byte) *pebble.Iterator {
	it, err := tx.r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		panic(fmt.Sprintf("kv: opening an iterator: %v", err)) // only on a closed DB
	}
	return it
}

// Marker and sequence keys of the bucket at path p (the path of its
// parent, then its name and a 0 byte): they sort before every bucket's
// data, as names never start with a 0 byte.
func markerKey(p []byte) []byte { return append([]byte("\x00b\x00"), p...) }
func seqKey(p []byte) []byte    { return append([]byte("\x00s\x00"), p...) }

// end is the first key after every key starting with prefix.
func end(prefix []byte) []byte {
	e := bytes.Clone(prefix)
	for i := len(e) - 1; i >= 0; i-- {
		if e[i] < 0xff {
			e[i]++
			return e[:i+1]
		}
	}
	return nil // every key
}

// Bucket is a bucket of a transaction.
type Bucket struct {
	tx   *Tx
	path []byte // the prefix of its keys ("" for the root)
	// FillPercent is bbolt's page split fill; kept so that the store's
	// code reads the same, and ignored (sorted tables have no pages to
	// split).
	FillPercent float64
}

// child is the path of sub-bucket name: the name escaped (escapeName),
// so that the 0 byte ending it ends it alone.
func (b *Bucket) child(name []byte) ([]byte, error) {
	if len(name) == 0 {
		return nil, ErrBucketName
	}
	p := append(bytes.Clone(b.path), 2)
	return append(escapeName(p, name), 0), nil
}

// escapeName appends name to p with its 0 and 1 bytes escaped (0 as 1 1,
// 1 as 1 2): an escaped name holds no 0 byte, and escaped names sort as
// the names do.
func escapeName(p, name []byte) []byte {
	for _, c := range name {
		switch c {
		case 0, 1:
			p = append(p, 1, c+1)
		default:
			p = append(p, c)
		}
	}
	return p
}

// unescapeName is escapeName's inverse.
func unescapeName(e []byte) []byte {
	out := make([]byte, 0, len(e))
	for i := 0; i < len(e); i++ {
		if e[i] == 1 && i+1 < len(e) {
			i++
			out = append(out, e[i]-1)
			continue
		}
		out = append(out, e[i])
	}
	return out
}

// key is the engine's key of the bucket's own key k.
func (b *Bucket) key(k []byte) []byte {
	return append(append(append(make([]byte, 0, len(b.path)+1+len(k)), b.path...), 1), k...)
}

func (b *Bucket) exists(p []byte) bool {
	if b.tx.pinned[string(p)] {
		return true
	}
	if ok, known := b.tx.buckets[string(p)]; known {
		return ok
	}
	v, err := b.tx.get(markerKey(p))
	if err != nil {
		return false // not remembered: the read failed (and so does the transaction)
	}
	if b.tx.buckets == nil {
		b.tx.buckets = map[string]bool{}
	}
	b.tx.buckets[string(p)] = v != nil
	return v != nil
}

// Bucket is the sub-bucket name, nil when it does not exist.
func (b *Bucket) Bucket(name []byte) *Bucket {
	p, err := b.child(name)
	if err != nil || !b.exists(p) {
		return nil
	}
	return &Bucket{tx: b.tx, path: p}
}

// CreateBucket creates the sub-bucket name (ErrBucketExists when it
// exists).
func (b *Bucket) CreateBucket(name []byte) (*Bucket, error) {
	if !b.tx.Writable() {
		return nil, ErrTxNotWritable
	}
	p, err := b.child(name)
	if err != nil {
		return nil, err
	}
	if b.exists(p) {
		return nil, ErrBucketExists
	}
	if err := b.tx.w.Set(markerKey(p), nil, nil); err != nil {
		return nil, err
	}
	if b.tx.buckets == nil {
		b.tx.buckets = map[string]bool{}
	}
	b.tx.buckets[string(p)] = true
	return &Bucket{tx: b.tx, path: p}, nil
}

// CreateBucketIfNotExists is the sub-bucket name, created if needed.
func (b *Bucket) CreateBucketIfNotExists(name []byte) (*Bucket, error) {
	if c := b.Bucket(name); c != nil {
		return c, nil
	}
	return b.CreateBucket(name)
}

// DeleteBucket deletes the sub-bucket name, its keys, its sub-buckets
// and their sequences.
func (b *Bucket) DeleteBucket(name []byte) error {
	if !b.tx.Writable() {
		return ErrTxNotWritable
	}
	p, err := b.child(name)
	if err != nil {
		return err
	}
	if b.tx.pinned[string(p)] {
		return fmt.Errorf("%w: %q", ErrBucketPinned, name)
	}
	if !b.exists(p) {
		return ErrBucketNotFound
	}
	clear(b.tx.buckets) // p and its sub-buckets
	for _, prefix := range [][]byte{p, markerKey(p), seqKey(p)} {
		b.tx.deleted(prefix, end(prefix))
		if err := b.tx.w.DeleteRange(prefix, end(prefix), nil); err != nil {
			return err
		}
	}
	return nil
}

// Get is the value of key (nil when absent).
func (b *Bucket) Get(key []byte) []byte {
	v, err := b.tx.get(b.key(key))
	if err != nil {
		return nil
	}
	return v
}

// Put sets key to value.
func (b *Bucket) Put(key, value []byte) error {
	if !b.tx.Writable() {
		return ErrTxNotWritable
	}
	if len(key) == 0 {
		return ErrKeyRequired
	}
	return b.tx.w.Set(b.key(key), value, nil)
}

// Delete deletes key (nothing when absent).
func (b *Bucket) Delete(key []byte) error {
	if !b.tx.Writable() {
		return ErrTxNotWritable
	}
	return b.tx.deleteKey(b.key(key))
}

// NextSequence increments and returns the bucket's sequence.
func (b *Bucket) NextSequence() (uint64, error) {
	if !b.tx.Writable() {
		return 0, ErrTxNotWritable
	}
	var n uint64
	v, err := b.tx.get(seqKey(b.path))
	if err != nil {
		return 0, err
	}
	if len(v) == 8 {
		n = binary.BigEndian.Uint64(v)
	}
	n++
	return n, b.tx.w.Set(seqKey(b.path), binary.BigEndian.AppendUint64(nil, n), nil)
}

// Sequence is the bucket's sequence (0 before any NextSequence).
func (b *Bucket) Sequence() uint64 {
	v, err := b.tx.get(seqKey(b.path))
	if err != nil || len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

// ForEach calls fn with each key and value of the bucket in order (its
// sub-buckets' keys are not its own), stopping at fn's first error.
func (b *Bucket) ForEach(fn func(k, v []byte) error) error {
	c := b.cursor()
	defer c.close()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return b.tx.err
}

// SetSequence sets the bucket's sequence.
func (b *Bucket) SetSequence(n uint64) error {
	if !b.tx.Writable() {
		return ErrTxNotWritable
	}
	return b.tx.w.Set(seqKey(b.path), binary.BigEndian.AppendUint64(nil, n), nil)
}

// ForEachBucket calls fn with the name of each sub-bucket in order,
// stopping at fn's first error. (A bbolt cursor lists sub-buckets among
// the keys, with a nil value; here a cursor walks the keys alone.)
func (b *Bucket) ForEachBucket(fn func(name []byte) error) error {
	prefix := markerKey(append(bytes.Clone(b.path), 2))
	it := b.tx.newIter(prefix, end(prefix))
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		rest := it.Key()[len(prefix):]
		i := bytes.IndexByte(rest, 0)
		if i < 0 || i != len(rest)-1 {
			continue // a deeper bucket's marker
		}
		if err := fn(unescapeName(rest[:i])); err != nil {
			return err
		}
	}
	b.tx.failed(it.Error())
	return b.tx.err
}

// KeyN counts the bucket's own keys (bbolt's Stats().KeyN).
func (b *Bucket) KeyN() int {
	n := 0
	c := b.cursor()
	defer c.close()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		n++
	}
	return n
}

// Cursor walks the bucket's own keys in order; its iterator is closed
// with the transaction.
func (b *Bucket) Cursor() *Cursor {
	c := b.cursor()
	b.tx.iters = append(b.tx.iters, c.it)
	return c
}

// cursor is a Cursor whose iterator the caller closes (close).
func (b *Bucket) cursor() *Cursor {
	lo := b.key(nil)
	hi := append(bytes.Clone(b.path), 2)
	return &Cursor{b: b, it: b.tx.newIter(lo, hi), skip: len(lo)}
}

// close closes a cursor made by cursor.
func (c *Cursor) close() { _ = c.it.Close() }

// Cursor is a position among a bucket's own keys (not its sub-buckets':
// ForEachBucket lists those). Keys and values it returns are copies. It sees the writes its transaction made before it was
// opened (not those after: a cursor walking while its bucket changes
// walks what was there when it began, except through Delete).
type Cursor struct {
	b    *Bucket
	it   *pebble.Iterator
	skip int // the length of the prefix of the bucket's keys
}

// at is the current key and value (nil, nil past either end, or on a
// read error, which fails the transaction).
func (c *Cursor) at(valid bool) ([]byte, []byte) {
	if !valid {
		c.b.tx.failed(c.it.Error())
		return nil, nil
	}
	v, err := c.it.ValueAndErr()
	if err != nil {
		c.b.tx.failed(err)
		return nil, nil
	}
	return bytes.Clone(c.it.Key()[c.skip:]), append(make([]byte, 0, len(v)), v...)
}

// First moves to the first key.
func (c *Cursor) First() ([]byte, []byte) { return c.at(c.it.First()) }

// Last moves to the last key.
func (c *Cursor) Last() ([]byte, []byte) { return c.at(c.it.Last()) }

// Next moves to the next key.
func (c *Cursor) Next() ([]byte, []byte) { return c.at(c.it.Next()) }

// Prev moves to the previous key.
func (c *Cursor) Prev() ([]byte, []byte) { return c.at(c.it.Prev()) }

// Seek moves to the first key at or after seek.
func (c *Cursor) Seek(seek []byte) ([]byte, []byte) { return c.at(c.it.SeekGE(c.b.key(seek))) }

// Delete deletes the key the cursor is on (the cursor stays there: Next
// and Prev move on from it).
func (c *Cursor) Delete() error {
	if !c.b.tx.Writable() {
		return ErrTxNotWritable
	}
	if !c.it.Valid() {
		return nil
	}
	return c.b.tx.deleteKey(slices.Clone(c.it.Key()))
}

// reportCorruption logs a table found corrupt or missing (deleted under
// the running store, say). Pebble's default exits the process, which
// would take the whole Caddy down with it; here the read that met it
// fails, and so does its transaction: the store answers unavailable.
func reportCorruption(info pebble.DataCorruptionInfo) {
	Quiet{}.Errorf("kv: on-disk corruption: %s", info)
}

// Quiet is a pebble.Logger without Pebble's informational lines (errors
// and fatal ones still go to Pebble's default logger).
type Quiet struct{}

// Infof implements pebble.Logger: dropped.
func (Quiet) Infof(string, ...any) {}

// Errorf implements pebble.Logger.
func (Quiet) Errorf(format string, args ...any) {
	pebble.DefaultLogger.Errorf(format, args...)
}

// Fatalf implements pebble.Logger.
func (Quiet) Fatalf(format string, args ...any) {
	pebble.DefaultLogger.Fatalf(format, args...)
}
