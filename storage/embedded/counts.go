package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded/kv"
)

// The counters. QueueByLane, Counts and DLQCounts read them (one key per
// lane and per source and DLQ status, never a job or an entry), and every
// write of the indexes they count adjusts them in the same transaction:
// they are exact by construction, after a crash too (a transaction
// commits both or neither).
//
//	q \x00 lane                   -> int64: the lane's keys in bQueue (queued and leased jobs)
//	w \x00 lane                   -> int64: the lane's keys in bWaiting (chained jobs behind their head)
//	d \x00 source \x00 status     -> int64: DLQ entries of source in status
//	v                             -> the counters' version (absent: to be built)
//
// Every write of those indexes goes through the helpers below (queuePut,
// queueDelete, waitingPut, waitingDelete, putEntry, deleteEntry), each of
// which counts only what changes (a Put of a key already there, a Delete
// of one absent count nothing).
//
// In flight: the leased jobs are not counted but read from the leases
// in memory (leases.go), which know each one's lane and end: a job whose
// lease ran out is queued again, as Lookup reports it. Reading them costs
// one entry per leased job: no more than the dispatchers hold.
//
// A store written by an earlier version has no counters: Open builds them
// from the indexes (buildCounts) before the Store is handed out. A store
// that an earlier version wrote to after this one had built its counters
// (a downgrade, then an upgrade) holds counters that missed those writes:
// ResetCounters deletes them and Open rebuilds them.
var bCounts = []byte("counts")

// countsVersion is the value of the "v" key of counters this version
// maintains.
var countsVersion = []byte("1")

// Counter kinds (the first byte of a counter's key).
const (
	cntQueue   = 'q'
	cntWaiting = 'w'
	cntDLQ     = 'd'
)

// counterKey is the key of the counter of kind for name (a lane, or a
// DLQ source \x00 status).
func counterKey(kind byte, name string) []byte {
	k := make([]byte, 0, 2+len(name))
	return append(append(k, kind, 0), name...)
}

// dlqCounterName is the counter name of the DLQ entries of source in st.
func dlqCounterName(source string, st storage.DLQStatus) string {
	return source + "\x00" + string(st)
}

// count adds d to the counter of kind for name, deleting it at zero.
func count(tx *kv.Tx, kind byte, name string, d int64) error {
	b := tx.Bucket(bCounts)
	k := counterKey(kind, name)
	var n int64
	if v := b.Get(k); len(v) == 8 {
		n = int64(binary.BigEndian.Uint64(v))
	}
	if n+d == 0 {
		return b.Delete(k)
	}
	return b.Put(k, int64Value(n+d))
}

// laneOfDueKey is the lane of a bQueue key ("" if malformed).
func laneOfDueKey(k []byte) string {
	lane, _, _, _ := splitDueKey(k)
	return string(lane)
}

// hasKey reports whether b holds k (an empty value is not nil).
func hasKey(b *kv.Bucket, k []byte) bool {
	return b.Get(k) != nil
}

// queuePut adds key k (dueKey) to bQueue.
func queuePut(tx *kv.Tx, k []byte) error {
	b := tx.Bucket(bQueue)
	if hasKey(b, k) {
		return nil
	}
	if err := b.Put(k, nil); err != nil {
		return err
	}
	lowerFloor(tx, k)
	return count(tx, cntQueue, laneOfDueKey(k), 1)
}

// queueDelete removes key k (dueKey) from bQueue, if there.
func queueDelete(tx *kv.Tx, k []byte) error {
	if !hasKey(tx.Bucket(bQueue), k) {
		return nil
	}
	return queueRemove(tx, k)
}

// queueRemove removes key k (dueKey), which the caller found in bQueue in
// tx, from bQueue.
func queueRemove(tx *kv.Tx, k []byte) error {
	if err := tx.Bucket(bQueue).Delete(k); err != nil {
		return err
	}
	return count(tx, cntQueue, laneOfDueKey(k), -1)
}

// waitingPut records chained job id of lane waiting behind its head.
func waitingPut(tx *kv.Tx, id []byte, lane string) error {
	b := tx.Bucket(bWaiting)
	if old := b.Get(id); old != nil {
		if err := count(tx, cntWaiting, string(old), -1); err != nil {
			return err
		}
	}
	if err := b.Put(id, []byte(lane)); err != nil {
		return err
	}
	return count(tx, cntWaiting, lane, 1)
}

// waitingDelete removes chained job id from the waiting ones, returning
// its lane ("" if it was not waiting).
func waitingDelete(tx *kv.Tx, id []byte) (string, error) {
	b := tx.Bucket(bWaiting)
	old := b.Get(id)
	if old == nil {
		return "", nil
	}
	lane := string(old)
	if err := b.Delete(id); err != nil {
		return "", err
	}
	return lane, count(tx, cntWaiting, lane, -1)
}

// entryCounted is the source and status of a stored DLQ entry, the
// fields its counter is named by (ok false: absent or unreadable, not
// counted).
func entryCounted(v []byte) (name string, ok bool) {
	if v == nil {
		return "", false
	}
	var e struct {
		Source string            `json:"source"`
		Status storage.DLQStatus `json:"status"`
	}
	if json.Unmarshal(v, &e) != nil {
		return "", false
	}
	return dlqCounterName(e.Source, e.Status), true
}

// deleteEntry removes DLQ entry id (bDLQ and bDLQOpen; its bDLQIdx key is
// the caller's).
func deleteEntry(tx *kv.Tx, id []byte) error {
	b := tx.Bucket(bDLQ)
	if name, ok := entryCounted(b.Get(id)); ok {
		if err := count(tx, cntDLQ, name, -1); err != nil {
			return err
		}
	}
	if err := b.Delete(id); err != nil {
		return err
	}
	return tx.Bucket(bDLQOpen).Delete(id)
}

// buildCounts (re)builds the counters from the indexes when they are not
// this version's: a store written by an earlier version.
func buildCounts(tx *kv.Tx) error {
	b, err := tx.CreateBucketIfNotExists(bCounts)
	if err != nil {
		return err
	}
	if bytes.Equal(b.Get([]byte("v")), countsVersion) {
		return nil
	}
	if err := tx.DeleteBucket(bCounts); err != nil {
		return err
	}
	if _, err := tx.CreateBucket(bCounts); err != nil {
		return err
	}
	c, err := countIndexes(tx)
	if err != nil {
		return err
	}
	for kind, m := range c {
		for name, n := range m {
			if err := count(tx, kind, name, n); err != nil {
				return err
			}
		}
	}
	return tx.Bucket(bCounts).Put([]byte("v"), countsVersion)
}

// countIndexes counts what the counters hold by reading the indexes and
// the DLQ entries (O(jobs + entries)): by kind, then name.
func countIndexes(tx *kv.Tx) (map[byte]map[string]int64, error) {
	out := map[byte]map[string]int64{cntQueue: {}, cntWaiting: {}, cntDLQ: {}}
	err := tx.Bucket(bQueue).ForEach(func(k, _ []byte) error {
		if lane, _, _, ok := splitDueKey(k); ok {
			out[cntQueue][string(lane)]++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = tx.Bucket(bWaiting).ForEach(func(_, lane []byte) error {
		out[cntWaiting][string(lane)]++
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = tx.Bucket(bDLQ).ForEach(func(_, v []byte) error {
		if name, ok := entryCounted(v); ok {
			out[cntDLQ][name]++
		}
		return nil
	})
	return out, err
}

// readCounts reads every counter: by kind, then name.
func readCounts(tx *kv.Tx) map[byte]map[string]int64 {
	out := map[byte]map[string]int64{cntQueue: {}, cntWaiting: {}, cntDLQ: {}}
	_ = tx.Bucket(bCounts).ForEach(func(k, v []byte) error {
		if len(k) < 2 || k[1] != 0 || len(v) != 8 || out[k[0]] == nil {
			return nil
		}
		out[k[0]][string(k[2:])] = int64(binary.BigEndian.Uint64(v))
		return nil
	})
	return out
}

// laneCounts turns counters (readCounts) and the leased jobs
// (leases.byLane) into counts by lane.
func laneCounts(c map[byte]map[string]int64, leased map[string]int64) map[string]storage.Counts {
	out := map[string]storage.Counts{}
	for _, kind := range []byte{cntQueue, cntWaiting} {
		for lane, n := range c[kind] {
			v := out[lane]
			v.Queued += int(n)
			out[lane] = v
		}
	}
	for lane, n := range leased {
		v := out[lane]
		v.InFlight += int(n)
		v.Queued -= int(n)
		out[lane] = v
	}
	for lane, v := range out {
		if v == (storage.Counts{}) {
			delete(out, lane)
		}
	}
	return out
}

// dlqCounts turns counters (readCounts, recount) into DLQ counts by
// source and status.
func dlqCounts(c map[byte]map[string]int64) map[string]map[storage.DLQStatus]int {
	out := map[string]map[storage.DLQStatus]int{}
	for name, n := range c[cntDLQ] {
		src, st, _ := bytes.Cut([]byte(name), []byte{0})
		if n == 0 {
			continue
		}
		if out[string(src)] == nil {
			out[string(src)] = map[storage.DLQStatus]int{}
		}
		out[string(src)][storage.DLQStatus(st)] += int(n)
	}
	return out
}

// Counts implements storage.Store: from the counters (QueueByLane's and
// DLQCounts' answers, storage.SumCounts).
func (s *Store) Counts(ctx context.Context) (storage.Counts, error) {
	byLane, dlq, err := s.counted()
	return storage.SumCounts(byLane, dlq), err
}

// counted reads QueueByLane's and DLQCounts' answers in one transaction.
func (s *Store) counted() (map[string]storage.Counts, map[string]map[storage.DLQStatus]int, error) {
	now := s.now()
	var (
		byLane map[string]storage.Counts
		dlq    map[string]map[storage.DLQStatus]int
	)
	err := s.view(func(tx *kv.Tx) error {
		c := readCounts(tx)
		queue := tx.Bucket(bQueue)
		leased := s.leases.byLane(now, func(lane string, due time.Time, id string) bool {
			return hasKey(queue, dueKey(lane, due, []byte(id)))
		})
		byLane, dlq = laneCounts(c, leased), dlqCounts(c)
		return nil
	})
	return byLane, dlq, err
}

// QueueBySource implements storage.Store.
func (s *Store) QueueBySource(ctx context.Context) (map[string]storage.Counts, error) {
	byLane, err := s.QueueByLane(ctx)
	return storage.CountsBySource(byLane), err
}

// QueueByLane implements storage.Store: from the counters, one key per
// lane, and the leases (see bCounts).
func (s *Store) QueueByLane(ctx context.Context) (map[string]storage.Counts, error) {
	byLane, _, err := s.counted()
	return byLane, err
}

// DLQCounts implements storage.Store: from the counters.
func (s *Store) DLQCounts(ctx context.Context) (map[string]map[storage.DLQStatus]int, error) {
	_, dlq, err := s.counted()
	return dlq, err
}

// Recount implements storage.Recounter: QueueByLane and DLQCounts as
// they were before the counters, by reading every index key and DLQ
// entry. A leased job is in flight until its lease runs out.
func (s *Store) Recount(ctx context.Context) (map[string]storage.Counts, map[string]map[storage.DLQStatus]int, error) {
	now := s.now()
	byLane := map[string]storage.Counts{}
	dlq := map[string]map[storage.DLQStatus]int{}
	err := s.view(func(tx *kv.Tx) error {
		err := tx.Bucket(bWaiting).ForEach(func(_, lane []byte) error {
			n := byLane[string(lane)]
			n.Queued++
			byLane[string(lane)] = n
			return nil
		})
		if err != nil {
			return err
		}
		err = tx.Bucket(bQueue).ForEach(func(k, _ []byte) error {
			lane, _, id, ok := splitDueKey(k)
			if !ok {
				return nil
			}
			n := byLane[string(lane)]
			if s.leases.leasedKey(id, now) {
				n.InFlight++
			} else {
				n.Queued++
			}
			byLane[string(lane)] = n
			return nil
		})
		if err != nil {
			return err
		}
		return tx.Bucket(bDLQ).ForEach(func(_, v []byte) error {
			var e struct {
				Source string            `json:"source"`
				Status storage.DLQStatus `json:"status"`
			}
			if json.Unmarshal(v, &e) != nil {
				return nil
			}
			if dlq[e.Source] == nil {
				dlq[e.Source] = map[storage.DLQStatus]int{}
			}
			dlq[e.Source][e.Status]++
			return nil
		})
	})
	return byLane, dlq, err
}

// ResetCounters deletes the counters of the store at path (not open), so
// that the next Open rebuilds them from the indexes: for a store an
// earlier version wrote to after this one had built them (a downgrade,
// then an upgrade), whose counters missed those writes. A bbolt file of
// an earlier version is moved to the new engine first.
func ResetCounters(path string) error {
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("%w: %v", storage.ErrUnavailable, err) // no store there: none made
	}
	if err := migrateFile(path, Options{}); err != nil {
		return fmt.Errorf("%w: moving %s to the new engine: %v", storage.ErrUnavailable, path, err)
	}
	db, err := kv.Open(path, kv.Options{LockTimeout: 5 * time.Second})
	if err != nil {
		return fmt.Errorf("%w: opening %s: %v", storage.ErrUnavailable, path, err)
	}
	if err := retireMoved(path); err != nil {
		db.Close()
		return fmt.Errorf("%w: %s: %v", storage.ErrUnavailable, path, err)
	}
	defer db.Close()
	return db.Update(func(tx *kv.Tx) error {
		if tx.Bucket(bCounts) == nil {
			return nil
		}
		return tx.DeleteBucket(bCounts)
	})
}
