package embedded

import (
	"bytes"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/hookline/hookline/storage"
)

// The due index, one run of keys per lane:
//
//	lane \x00 due (8 bytes, Unix nanoseconds, big-endian) id -> nil
//
// Queued and leased jobs are both in it, a leased one at the time it was
// due (the lease is kept in memory: leases.go). A cursor finds a lane's oldest job with one Seek and jumps over
// a whole lane with another, so a lane the gate holds back costs nothing
// however many jobs it holds.
var bQueue = []byte("queue")

// bLegacyDue is the index of earlier versions (due|id for every lane),
// moved into bQueue when the store is opened.
var bLegacyDue = []byte("due")

// dueKey is the index key of a job of lane due at t.
func dueKey(lane string, t time.Time, id []byte) []byte {
	k := make([]byte, 0, len(lane)+1+8+len(id))
	k = append(k, lane...)
	k = append(k, 0)
	return append(k, timeKey(t, id)...)
}

// splitDueKey returns a due key's lane, time and id (ok false if malformed).
func splitDueKey(k []byte) (lane []byte, due time.Time, id []byte, ok bool) {
	i := bytes.IndexByte(k, 0)
	if i < 0 || len(k) < i+1+8 {
		return nil, time.Time{}, nil, false
	}
	return k[:i], timeAt(k[i+1:]), k[i+1+8:], true
}

// putDue indexes rec (queued or leased) at rec.Due.
func putDue(tx *bolt.Tx, rec *record) error {
	return queuePut(tx, dueKey(storage.LaneOf(&rec.Event), rec.Due, []byte(rec.ID)))
}

// deleteDue removes rec's index key at rec.Due.
func deleteDue(tx *bolt.Tx, rec *record) error {
	return queueDelete(tx, dueKey(storage.LaneOf(&rec.Event), rec.Due, []byte(rec.ID)))
}

// laneHeads calls fn with the first key of every lane, in lane order; fn
// may walk the lane with the cursor. It returns fn's first error.
func laneHeads(tx *bolt.Tx, fn func(c *bolt.Cursor, lane []byte, k []byte) error) error {
	c := tx.Bucket(bQueue).Cursor()
	for k, _ := c.First(); k != nil; {
		lane, _, _, ok := splitDueKey(k)
		if !ok {
			k, _ = c.Next()
			continue
		}
		lane = bytes.Clone(lane)
		if err := fn(c, lane, k); err != nil {
			return err
		}
		// jump to the first key after the lane: lane \x01 sorts after every lane \x00 ...
		k, _ = c.Seek(append(lane, 1))
	}
	return nil
}

// candidates lists up to limit due jobs (due at or before now) of each lane
// the gate lets through, passing over the leased ones (leased). It reads
// only the keys it returns, the leased ones and one key per lane.
func candidates(tx *bolt.Tx, now time.Time, limit int, gate *storage.Gate, leased func(id []byte) bool) []storage.Candidate {
	var out []storage.Candidate
	_ = laneHeads(tx, func(c *bolt.Cursor, laneB []byte, k []byte) error {
		lane := string(laneB)
		if gate.Skipped(lane) {
			return nil
		}
		for i := 0; k != nil && i < limit; k, _ = c.Next() {
			l, due, id, ok := splitDueKey(k)
			if !ok || !bytes.Equal(l, laneB) || due.After(now) {
				break
			}
			if leased(id) {
				continue
			}
			out = append(out, storage.Candidate{Lane: lane, Due: due, ID: string(id)})
			i++
		}
		return nil
	})
	return out
}

// firstFree moves c from k, the first key of lane, to the lane's first
// key whose job is not leased, and returns it (nil: every job of the lane
// is leased).
func firstFree(c *bolt.Cursor, lane []byte, k []byte, leased func(id []byte) bool) []byte {
	for ; k != nil; k, _ = c.Next() {
		l, _, id, ok := splitDueKey(k)
		if !ok || !bytes.Equal(l, lane) {
			return nil
		}
		if !leased(id) {
			return k
		}
	}
	return nil
}

// migrateLegacyDue moves the index of an earlier version into bQueue.
func migrateLegacyDue(tx *bolt.Tx) error {
	old := tx.Bucket(bLegacyDue)
	if old == nil {
		return nil
	}
	err := old.ForEach(func(k, _ []byte) error {
		if len(k) < 8 {
			return nil
		}
		rec, err := getRecord(tx, k[8:])
		lane := ""
		switch {
		case err == nil && rec == nil:
			return nil // an orphan key
		case err == nil:
			lane = storage.LaneOf(&rec.Event)
		}
		// an unreadable record keeps an index key (lane ""), so that a lease
		// meets it and dead-letters it instead of losing it
		return tx.Bucket(bQueue).Put(dueKey(lane, timeAt(k), k[8:]), nil)
	})
	if err != nil {
		return err
	}
	return tx.DeleteBucket(bLegacyDue)
}

// onlyLanes keeps the candidates of the lanes in limit.
func onlyLanes(cands []storage.Candidate, limit map[string]int) []storage.Candidate {
	out := cands[:0]
	for _, c := range cands {
		if _, ok := limit[c.Lane]; ok {
			out = append(out, c)
		}
	}
	return out
}
