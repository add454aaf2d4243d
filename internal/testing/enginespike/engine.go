// Package enginespike is a measuring instrument, not a store: it runs the
// queue's storage pattern on candidate engines for the embedded backend,
// apart from hookline, so that the engine is chosen by measurement. Each
// Engine stores an event record and its due-index entry per job, synced
// before Enqueue returns (concurrent writers share a sync), leases due jobs
// from a remembered position in the due index (never scanning what was
// finished before it), and records a delivery's outcome without waiting
// for its own sync (at-least-once allows it: a lost outcome is a
// redelivery) and a dead letter synced. Expire removes finished jobs'
// records as retention does, Reclaim gives space back where the engine
// can, and Size is what the engine's files take on disk.
//
// The engines: bbolt as the embedded store uses it today (one write
// transaction per group of concurrent writers, fsynced), a journal (an
// append-only file fdatasync'd per group, the queue in memory: the
// ceiling of any synced store), Pebble (v2: synced batches, whose commit
// pipeline groups concurrent syncs), and Pebble through storage/embedded/kv
// (the bucket layer the store's code would keep), leasing from a
// remembered position or, as the store does today, from the index's start. Its benchmarks are in
// enginespike_test.go; docs/benchmarks.md has the numbers that chose the
// engine.
package enginespike

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Job is one queued delivery: its id, due time (Unix ns) and body.
type Job struct {
	ID   string
	Due  int64
	Body []byte
}

// Engine is the queue's storage pattern on one engine.
type Engine interface {
	// Enqueue stores j's event record and due entry, synced.
	Enqueue(ctx context.Context, j Job) error
	// Lease takes up to n jobs due at now (Unix ns) that no earlier
	// Lease took, with their bodies.
	Lease(n int, now int64) ([]Job, error)
	// Finish records j delivered: its due entry removed, its outcome
	// written, not waiting for a sync of its own.
	Finish(j Job) error
	// Dead records j dead: its due entry removed, a dead letter with its
	// body written, synced.
	Dead(j Job) error
	// Expire removes the records of every finished job (retention).
	Expire() error
	// Reclaim gives disk space back where the engine can (a no-op where
	// it cannot).
	Reclaim() error
	// Close closes the engine.
	Close() error
}

// Settler is an engine with background work after writes (a
// log-structured engine's flushes and compactions): Settle waits for it.
type Settler interface {
	Settle() error
}

// Opener opens an engine in an empty directory.
type Opener struct {
	Name string
	Open func(dir string) (Engine, error)
}

// Openers are the engines measured, in the order reported.
var Openers = []Opener{
	{"bbolt", func(dir string) (Engine, error) { return OpenBolt(filepath.Join(dir, "events.db")) }},
	{"journal", func(dir string) (Engine, error) { return OpenJournal(filepath.Join(dir, "journal")) }},
	{"pebble", func(dir string) (Engine, error) { return OpenPebble(filepath.Join(dir, "pebble"), 0) }},
	{"pebble-64m", func(dir string) (Engine, error) { return OpenPebble(filepath.Join(dir, "pebble"), 64<<20) }},
	{"kv", func(dir string) (Engine, error) { return OpenKV(filepath.Join(dir, "kv"), false) }},
	{"kv-scan", func(dir string) (Engine, error) { return OpenKV(filepath.Join(dir, "kv"), true) }},
}

// Size is what the files under dir take on disk (allocated blocks, so a
// sparse or preallocated file counts as what it holds).
func Size(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed meanwhile (an engine deletes obsolete files in the background)
		}
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		total += allocated(info)
		return nil
	})
	return total, err
}

// Key layout shared by the ordered engines: the event record, the due
// index (due time in fixed width, so keys sort by it) and the outcome.
func eventKey(id string) []byte   { return []byte("e/" + id) }
func outcomeKey(id string) []byte { return []byte("f/" + id) }
func deadKey(id string) []byte    { return []byte("x/" + id) }
func dueKey(due int64, id string) []byte {
	return fmt.Appendf(nil, "q/%020d/%s", due, id)
}

// dueOf reads a due key back: its due time and id.
func dueOf(k []byte) (int64, string, bool) {
	var due int64
	if len(k) < 23 || string(k[:2]) != "q/" || k[22] != '/' {
		return 0, "", false
	}
	if _, err := fmt.Sscanf(string(k[2:22]), "%d", &due); err != nil {
		return 0, "", false
	}
	return due, string(k[23:]), true
}
