package embedded

import (
	"bytes"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded/kv"
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
func putDue(tx *kv.Tx, rec *record) error {
	return queuePut(tx, dueKey(storage.LaneOf(&rec.Event), rec.Due, []byte(rec.ID)))
}

// deleteDue removes rec's index key at rec.Due.
func deleteDue(tx *kv.Tx, rec *record) error {
	return queueDelete(tx, dueKey(storage.LaneOf(&rec.Event), rec.Due, []byte(rec.ID)))
}

// walkLanes calls fn, in one read transaction, with the first key of
// every lane of lanes (s.floors.list()) that has one, in lane order,
// seeking from the lane's floor (floors.go); fn may walk the lane with
// the cursor. It returns fn's first error, and moves the floors up to the
// keys it found.
func (s *Store) walkLanes(lanes []laneFloor, fn func(c *kv.Cursor, lane []byte, k []byte) error) (err error) {
	w := s.floors.begin()
	var first map[string][]byte
	defer func() {
		if r := recover(); r != nil {
			s.floors.end(w, nil) // a walk cut short learned nothing
			panic(r)
		}
		if err != nil {
			first = nil // a read error reads as an empty lane: nothing learned
		}
		s.floors.end(w, first)
	}()
	err = s.view(func(tx *kv.Tx) error {
		first = map[string][]byte{}
		c := tx.Bucket(bQueue).Cursor()
		for _, lf := range lanes {
			lane := []byte(lf.lane)
			k, _ := c.Seek(lf.floor)
			if l, _, _, ok := splitDueKey(k); !ok || !bytes.Equal(l, lane) {
				first[lf.lane] = nil
				continue
			}
			first[lf.lane] = k
			if err := fn(c, lane, k); err != nil {
				return err
			}
		}
		return nil
	})
	return err
}

// candidates lists up to limit due jobs (due at or before now) of each lane
// the gate lets through, passing over the leased ones (leased); the
// tenants' shares of a lane up to limit together, each first up to its
// quota (storage.ShareQuota), then, when they hold fewer than limit that
// way, the rest of each share cut short. It reads only the keys it
// returns, the leased ones and one key per lane (and the keys finished
// since the last walk: floors.go).
func (s *Store) candidates(now time.Time, limit int, gate *storage.Gate, leased func(id []byte) bool) ([]storage.Candidate, error) {
	lanes := s.floors.list()
	shares := map[string]int{}
	for _, lf := range lanes {
		shares[storage.BaseLane(lf.lane)]++
	}
	type cut struct {
		lane string
		next []byte // the first key not read
	}
	var cuts []cut
	found := map[string]int{} // by base lane
	var out []storage.Candidate
	// read lists lane's due jobs from k on, up to max; next is the first
	// key not read when it stopped at max (nil: the lane has no more due)
	read := func(c *kv.Cursor, lane string, k []byte, max int) (n int, next []byte) {
		laneB := []byte(lane)
		for ; k != nil; k, _ = c.Next() {
			l, due, id, ok := splitDueKey(k)
			if !ok || !bytes.Equal(l, laneB) || due.After(now) {
				return n, nil
			}
			if leased(id) {
				continue
			}
			if n == max {
				return n, bytes.Clone(k)
			}
			out = append(out, storage.Candidate{Lane: lane, Due: due, ID: string(id)})
			n++
		}
		return n, nil
	}
	err := s.walkLanes(lanes, func(c *kv.Cursor, laneB []byte, k []byte) error {
		lane := string(laneB)
		if gate.Skipped(lane) {
			return nil
		}
		base := storage.BaseLane(lane)
		q := storage.ShareQuota(shares[base], limit)
		n, next := read(c, lane, k, q)
		found[base] += n
		if next != nil && q < limit {
			cuts = append(cuts, cut{lane, next})
		}
		return nil
	})
	if err != nil || len(cuts) == 0 {
		return out, err
	}
	// the shares of a lane that held fewer than limit within their quotas
	// give more: as many as the lane misses, which is the most its shares'
	// turns could take from one of them
	err = s.view(func(tx *kv.Tx) error {
		c := tx.Bucket(bQueue).Cursor()
		for _, ct := range cuts {
			missing := limit - found[storage.BaseLane(ct.lane)]
			if missing <= 0 {
				continue
			}
			k, _ := c.Seek(ct.next)
			read(c, ct.lane, k, missing)
		}
		return nil
	})
	return out, err
}

// firstFree moves c from k, the first key of lane, to the lane's first
// key whose job is not leased, and returns it (nil: every job of the lane
// is leased).
func firstFree(c *kv.Cursor, lane []byte, k []byte, leased func(id []byte) bool) []byte {
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

// tenantSharesDone is the bMeta key set once migrateTenantShares ran.
var tenantSharesDone = []byte("lanes:tenant-shares")

// migrateTenantShares moves, once, the jobs of events with a tenant that
// an earlier version queued (or kept waiting in a chain) in their base
// lane into their tenant's share (storage.LaneOf), where this version
// looks for them. A job whose record cannot be read stays where it is.
func migrateTenantShares(tx *kv.Tx) error {
	meta, err := tx.CreateBucketIfNotExists(bMeta)
	if err != nil || meta.Get(tenantSharesDone) != nil {
		return err
	}
	laneOf := func(id []byte) (string, bool) {
		rec, err := getRecord(tx, id)
		if err != nil || rec == nil {
			return "", false
		}
		return storage.LaneOf(&rec.Event), true
	}
	type move struct{ from, to []byte }
	var moves []move
	err = tx.Bucket(bQueue).ForEach(func(k, _ []byte) error {
		lane, due, id, ok := splitDueKey(k)
		if !ok || storage.BaseLane(string(lane)) != string(lane) {
			return nil // malformed, or a share already
		}
		if want, ok := laneOf(id); ok && want != string(lane) {
			moves = append(moves, move{bytes.Clone(k), dueKey(want, due, id)})
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, m := range moves {
		if err := queueRemove(tx, m.from); err != nil {
			return err
		}
		if err := queuePut(tx, m.to); err != nil {
			return err
		}
	}
	type wait struct {
		id   []byte
		lane string
	}
	var waits []wait
	err = tx.Bucket(bWaiting).ForEach(func(id, lane []byte) error {
		if want, ok := laneOf(id); ok && want != string(lane) {
			waits = append(waits, wait{bytes.Clone(id), want})
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, w := range waits {
		if err := waitingPut(tx, w.id, w.lane); err != nil {
			return err
		}
	}
	return meta.Put(tenantSharesDone, []byte{1})
}

// migrateLegacyDue moves the index of an earlier version into bQueue.
func migrateLegacyDue(tx *kv.Tx) error {
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

// onlyLanes keeps the candidates of the lanes in limit (by base lane, as
// storage.CountLanes counts them).
func onlyLanes(cands []storage.Candidate, limit map[string]int) []storage.Candidate {
	out := cands[:0]
	for _, c := range cands {
		if _, ok := limit[storage.BaseLane(c.Lane)]; ok {
			out = append(out, c)
		}
	}
	return out
}
