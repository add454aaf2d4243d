// Package embedded is hookline's default store: one directory of Pebble's
// log-structured files (through kv, which gives it bbolt's model of
// buckets and transactions), every accepted event committed and fsynced
// before the ingress answers, with concurrent writers sharing commits. It
// needs no external service and survives kill -9: a job leased when the
// process died is due again as soon as the store is opened again (leases
// live in the process: leases.go). A bbolt file an earlier version kept
// at the store's path is moved into it at Open (migrate.go).
package embedded

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded/kv"
)

var errClosed = fmt.Errorf("%w: store closed", storage.ErrUnavailable)

// Bucket names. Index keys start with an 8-byte big-endian Unix-nano time so
// that cursors walk them in time order.
var (
	bEvents       = []byte("events")        // delivery id (storage.DeliveryID) -> record; event id \x00 -> payload record (deliveries.go)
	bInFlight     = []byte("inflight")      // id -> lease end|lane: jobs leased by earlier versions (requeueLeased)
	bClaims       = []byte("claims")        // source\x00event_id -> expires|id, while the claim holds or a record of the event exists (claims.go)
	bClaimExp     = []byte("claimexp")      // expires|claim key -> nil
	bDone         = []byte("done")          // finished|id -> storage.IndexEntry (empty before index values): delivered and dead events
	bDLQ          = []byte("dlq")           // id -> storage.DLQEntry
	bDLQIdx       = []byte("dlqidx")        // created|id -> storage.IndexEntry (empty before index values)
	bDLQOpen      = []byte("dlqopen")       // id -> nil: pending and investigating entries
	bIDs          = []byte("ids")           // earlier versions' (source, event id) index, folded into bClaims at Open (claims.go)
	bPaused       = []byte("paused")        // source (or source/destination) -> pause (storage.EncodePause; nil: an earlier version's refusing pause)
	bTenantPaused = []byte("tenant-paused") // source#tenant -> pause: apart, unseen by builds before tenants' pauses
	bStats        = []byte("stats")         // minute|source\x00name -> count; all-time under minute 0
	bStatsH       = []byte("statsh")        // hour|source\x00name -> count
	bStatsID      = []byte("statsids")      // applied storage.StatsBatch ID -> applied at (Unix ns), for StatsBatchMemory
)

var allBuckets = [][]byte{bEvents, bQueue, bInFlight, bClaims, bClaimExp, bDone, bDLQ, bDLQIdx, bDLQOpen, bIDs, bPaused, bTenantPaused, bStats, bStatsH, bStatsID, bDeliveries, bChains, bWaiting, bErased, bScrub}

// record is an event as stored in bEvents.
type record struct {
	storage.Job
	Status     storage.Status `json:"status"`
	Due        time.Time      `json:"due,omitzero"`         // key in bQueue, if queued or leased
	FinishedAt time.Time      `json:"finished_at,omitzero"` // key in bDone, if finished
}

// Store is the embedded storage.Store.
type Store struct {
	db        *kv.DB
	path      string
	pace      storage.Pacer
	turns     storage.Turns // the lanes' shares' turns across leases
	leases    *leases       // the jobs under lease (leases.go)
	c         *committer
	now       func() time.Time
	closeOnce sync.Once
	// scrubMu lets one scrub run at a time.
	scrubMu sync.Mutex
	// onScrub is Options.OnScrub (nil in production).
	onScrub func(stage string)
	// floors are the lanes' remembered lease positions (floors.go).
	floors *floors
	// pending and deleted are the ranges the cleanups swept, and how many
	// keys, since the last compaction (reclaim.go); compactions counts
	// those compactions.
	pending     pendingRanges
	deleted     atomic.Int64
	compactions atomic.Int64
}

// Interface guard
var _ storage.Store = (*Store)(nil)

// Options tune Open.
type Options struct {
	// Timeout bounds the wait for the store's lock (another process
	// holding it). Zero means 5s.
	Timeout time.Duration
	// Now replaces time.Now (tests).
	Now func() time.Time
	// BeforeCommit, when set, runs in every group commit after the
	// batch's writes and before the transaction commits (and fsyncs), with
	// the number of writes in the batch. Blocking in it stalls commits as
	// a hung fsync would; an error fails the batch. For tests.
	BeforeCommit func(writes int) error
	// OnScrub, when set, is called by the scrub of an erasure (scrub.go)
	// at each of its stages: "begin" (the marks read, nothing compacted
	// yet) and "compacted" (no file holds the old values any more, the
	// marks not yet cleared). Blocking in it stalls the scrub. For tests.
	OnScrub func(stage string)
	// OnMigrated, when set, is called once a bbolt file an earlier
	// version kept at the path has been moved into the store (Open).
	OnMigrated func(st kv.MigrateStats, took time.Duration)
	// FS, when set, is the file system the store's files are written
	// through (kv.Options.FS), to stall the disk's syncs. For tests.
	FS vfs.FS
	// BlockCache is the engine's block cache in bytes (kv.Options;
	// 0: its default).
	BlockCache int64
}

// Open opens (creating if needed) the store directory at path, moving a
// bbolt file an earlier version kept there into it first (migrate.go).
func Open(path string, opts Options) (*Store, error) {
	if opts.Timeout == 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("%w: creating directory: %v", storage.ErrUnavailable, err)
	}
	if err := migrateFile(path, opts); err != nil {
		return nil, fmt.Errorf("%w: moving %s to the new engine: %v", storage.ErrUnavailable, path, err)
	}
	db, err := kv.Open(path, kv.Options{LockTimeout: opts.Timeout, FS: opts.FS, BlockCache: opts.BlockCache})
	if err != nil {
		return nil, fmt.Errorf("%w: opening %s: %v", storage.ErrUnavailable, path, err)
	}
	if err := retireMoved(path); err != nil {
		db.Close()
		return nil, fmt.Errorf("%w: %s: %v", storage.ErrUnavailable, path, err)
	}
	err = db.Update(func(tx *kv.Tx) error {
		for _, b := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		if err := migrateLegacyDue(tx); err != nil {
			return err
		}
		if err := foldIDs(tx); err != nil {
			return err
		}
		if err := buildCounts(tx); err != nil {
			return err
		}
		if err := migrateTenantShares(tx); err != nil {
			return err
		}
		if err := restoreLookups(tx); err != nil {
			return err
		}
		return requeueLeased(tx)
	})
	if err == nil {
		err = db.Pin(allBuckets...) // never deleted: found without a read
	}
	var fl *floors
	if err == nil {
		fl, err = loadFloors(db)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("%w: initializing %s: %v", storage.ErrUnavailable, path, err)
	}
	s := &Store{db: db, path: path, leases: newLeases(), floors: fl, now: opts.Now, onScrub: opts.OnScrub}
	s.c = newCommitter(db, opts.BeforeCommit)
	// an erasure whose scrub a crash cut short is scrubbed now (bounded: a
	// file the engine cannot delete fails Open rather than hang it)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.scrubIfMarked(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Path is the directory the store uses.
func (s *Store) Path() string { return s.path }

// Close stops the committer and closes the store.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.c.close()
		err = s.db.Close()
	})
	return err
}

// update runs fn in a shared, durable write transaction. An expected
// outcome (lost lease, unknown or conflicting DLQ entry) is returned by fn
// before it writes anything; it is passed back to the caller without
// failing the transaction, so it does not roll back the batch it shares.
// When ctx ends first, it returns ErrUnavailable (the write may still be
// committed later).
func (s *Store) update(ctx context.Context, fn func(*kv.Tx) error) error {
	return s.write(ctx, s.c.update, fn)
}

// updateUnsynced is update for a write a crash may lose
// (committer.updateUnsynced).
func (s *Store) updateUnsynced(ctx context.Context, fn func(*kv.Tx) error) error {
	return s.write(ctx, s.c.updateUnsynced, fn)
}

// write runs fn through commit (the committer's update or
// updateUnsynced), passing an expected outcome back (update).
func (s *Store) write(ctx context.Context, commit func(context.Context, func(*kv.Tx) error) error, fn func(*kv.Tx) error) error {
	var outcome error
	err := commit(ctx, func(tx *kv.Tx) error {
		outcome = nil
		if err := fn(tx); err != nil {
			if isOutcome(err) {
				outcome = err
				return nil
			}
			return err
		}
		return nil
	})
	if err == nil {
		err = outcome
	}
	return wrapIOErr(err)
}

func isOutcome(err error) bool {
	return errors.Is(err, storage.ErrLeaseLost) || errors.Is(err, storage.ErrDLQNotFound) ||
		errors.Is(err, storage.ErrConflict) || errors.Is(err, storage.ErrNotFound)
}

func (s *Store) view(fn func(*kv.Tx) error) error {
	return wrapIOErr(s.db.View(fn))
}

// logical errors pass through; anything else is a storage failure.
func wrapIOErr(err error) error {
	switch {
	case err == nil,
		errors.Is(err, storage.ErrUnavailable),
		errors.Is(err, storage.ErrNotFound),
		errors.Is(err, storage.ErrLeaseLost),
		errors.Is(err, storage.ErrDLQNotFound),
		errors.Is(err, storage.ErrConflict),
		errors.Is(err, storage.ErrInvalidCursor):
		return err
	}
	return fmt.Errorf("%w: %v", storage.ErrUnavailable, err)
}

func getRecord(tx *kv.Tx, id []byte) (*record, error) {
	return decodeRecord(id, tx.Bucket(bEvents).Get(id))
}

// decodeRecord decodes v, the stored record of id (nil: none).
func decodeRecord(id, v []byte) (*record, error) {
	if v == nil {
		return nil, nil
	}
	rec := new(record)
	if err := json.Unmarshal(v, rec); err != nil {
		return nil, fmt.Errorf("decoding event %s: %w", id, err)
	}
	return rec, nil
}

func putRecord(tx *kv.Tx, rec *record) error {
	v, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return tx.Bucket(bEvents).Put([]byte(rec.ID), v)
}

// claimKey is storage.ClaimKey as a key of bClaims.
func claimKey(source, eventID string) []byte {
	return []byte(storage.ClaimKey(source, eventID))
}

// timeKey is t as 8 big-endian bytes (Unix nanoseconds) followed by suffix.
func timeKey(t time.Time, suffix []byte) []byte {
	k := make([]byte, 8, 8+len(suffix))
	binary.BigEndian.PutUint64(k, uint64(t.UnixNano()))
	return append(k, suffix...)
}

func timeAt(k []byte) time.Time {
	return time.Unix(0, int64(binary.BigEndian.Uint64(k[:8])))
}
