package embedded

import (
	"bytes"
	"slices"
	"sync"

	"github.com/hookline/hookline/storage/embedded/kv"
)

// The lanes' floors: where a walk of the due index starts.
//
// A finished job's due key is deleted, and the engine keeps a tombstone
// where it was until a compaction drops it: a walk that began at a lane's
// start would step over every job the lane finished since, at every lease,
// and a backlog's drain would slow down as it went (measured: a third of
// the upstream's speed). So the store remembers, for each lane that may
// hold jobs, a floor: a key at or before the lane's first live key. A walk
// seeks there, and moves the floor up to the first key it found. The set
// of lanes is kept with them: a lane with no floor has no job.
//
// A floor must never be above a live key, whatever the order of writes
// and walks (a walk reads a snapshot; a write commits after it, and its
// keys may be visible before its commit returns):
//   - a write putting a due key lowers its lane's floor to it while its
//     transaction runs, and the key is pending until the transaction has
//     ended: no walk raises a floor above a pending key (a walk whose
//     snapshot was taken before the commit cannot see it), and a walk that
//     sees the key reads the floors after its snapshot, so at or below it;
//   - once the transaction has ended (committed or not: a failed commit
//     may have been applied), the key is lowered to again and no longer
//     pending; a walk registers before taking its snapshot, and every
//     lowering made while it is registered is recorded in it, so a walk
//     whose snapshot missed the key (taken before the commit) and which
//     ends after it never raises the floor above it.
//
// A walk moves a floor to the lowest of the first key it found, the keys
// recorded in it and the keys pending.
type floors struct {
	mu sync.Mutex
	// lanes are the lanes that may hold jobs, with their floors.
	lanes map[string][]byte
	// walks are the walks under way, with what was lowered since they
	// registered.
	walks map[*floorWalk]struct{}
	// pending counts, per lane, the keys put by transactions not yet
	// ended.
	pending map[string]map[string]int
}

// floorWalk is a walk of the due index under way.
type floorWalk struct {
	low map[string][]byte // lane -> the lowest key put since the walk registered
}

// laneFloor is a lane and where its walk starts.
type laneFloor struct {
	lane  string
	floor []byte
}

// loadFloors finds every lane's first key, at Open (nothing else runs).
func loadFloors(db *kv.DB) (*floors, error) {
	f := newFloors()
	err := db.View(func(tx *kv.Tx) error {
		c := tx.Bucket(bQueue).Cursor()
		for k, _ := c.First(); k != nil; {
			lane, _, _, ok := splitDueKey(k)
			if !ok {
				k, _ = c.Next()
				continue
			}
			f.lanes[string(lane)] = k
			// the first key after the lane: lane \x01 sorts after every lane \x00 ...
			k, _ = c.Seek(append(bytes.Clone(lane), 1))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	db.SetLocal(f)
	return f, nil
}

func newFloors() *floors {
	return &floors{lanes: map[string][]byte{}, walks: map[*floorWalk]struct{}{}, pending: map[string]map[string]int{}}
}

// lowerFloor lowers the floor of due key k's lane to k, keeps k pending
// until tx has ended, then lowers again (see above).
func lowerFloor(tx *kv.Tx, k []byte) {
	f, _ := tx.Local().(*floors)
	if f == nil {
		return // Open's own upgrades, before the floors are loaded
	}
	f.put(k)
	tx.OnEnd(func() { f.settle(k) })
}

// put lowers the floor of k's lane to k and keeps k pending.
func (f *floors) put(k []byte) { f.note(k, 1) }

// settle lowers the floor of k's lane to k again, records k in the walks
// under way, and ends k's pending (put).
func (f *floors) settle(k []byte) { f.note(k, -1) }

// note lowers the floor of due key k's lane to k, records k in the walks
// under way, and adds delta to k's pending count.
func (f *floors) note(k []byte, delta int) {
	lane, _, _, ok := splitDueKey(k)
	if !ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lowerLocked(string(lane), k)
	p := f.pending[string(lane)]
	if p == nil {
		p = map[string]int{}
		f.pending[string(lane)] = p
	}
	if p[string(k)] += delta; p[string(k)] <= 0 {
		delete(p, string(k))
	}
	if len(p) == 0 {
		delete(f.pending, string(lane))
	}
}

// lowerLocked lowers the floor of lane to due key k, and records k in
// the walks under way; f.mu is held.
func (f *floors) lowerLocked(lane string, k []byte) {
	if cur, ok := f.lanes[lane]; !ok || bytes.Compare(k, cur) < 0 {
		f.lanes[lane] = k
	}
	for w := range f.walks {
		if cur, ok := w.low[lane]; !ok || bytes.Compare(k, cur) < 0 {
			w.low[lane] = k
		}
	}
}

// begin registers a walk; call it before taking the walk's snapshot.
func (f *floors) begin() *floorWalk {
	w := &floorWalk{low: map[string][]byte{}}
	f.mu.Lock()
	f.walks[w] = struct{}{}
	f.mu.Unlock()
	return w
}

// list is the lanes and their floors in lane order; call it once the
// walk's snapshot is taken.
func (f *floors) list() []laneFloor {
	f.mu.Lock()
	out := make([]laneFloor, 0, len(f.lanes))
	for lane, k := range f.lanes {
		out = append(out, laneFloor{lane, k})
	}
	f.mu.Unlock()
	slices.SortFunc(out, func(a, b laneFloor) int { return bytes.Compare([]byte(a.lane), []byte(b.lane)) })
	return out
}

// end unregisters walk w and moves up the floors of the lanes it read:
// first maps a lane to the first key the walk found in it (nil: none).
// A floor is only ever raised here, never above a key recorded in w.
func (f *floors) end(w *floorWalk, first map[string][]byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.walks, w)
	for lane, k := range first {
		if low, ok := w.low[lane]; ok && (k == nil || bytes.Compare(low, k) < 0) {
			k = low
		}
		for p := range f.pending[lane] {
			if k == nil || bytes.Compare([]byte(p), k) < 0 {
				k = []byte(p)
			}
		}
		cur, ok := f.lanes[lane]
		switch {
		case !ok:
			// gone, or never there: a key put since was recorded in w or
			// lowers the floor after this
			if k != nil {
				f.lanes[lane] = k
			}
		case k == nil:
			delete(f.lanes, lane) // empty, and nothing put since the walk registered
		case bytes.Compare(k, cur) > 0:
			f.lanes[lane] = k
		}
	}
}
