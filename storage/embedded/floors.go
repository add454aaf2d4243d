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
// and walks (a walk reads a snapshot; a write commits after it):
//   - a write putting a due key lowers its lane's floor to it while its
//     transaction runs (so that a walk whose snapshot holds the key, and
//     which reads the floors after taking it, seeks at or before the key),
//     and again once it has committed (below);
//   - a walk registers before taking its snapshot, and every lowering
//     made once a walk is registered is recorded in it: a key committed
//     after the walk's snapshot, invisible to it, is lowered to after its
//     commit, hence either while the walk is registered (recorded) or
//     after the walk moved the floor (lowering it again). A walk moves a
//     floor to the lower of the first key it found and the keys recorded.
type floors struct {
	mu sync.Mutex
	// lanes are the lanes that may hold jobs, with their floors.
	lanes map[string][]byte
	// walks are the walks under way, with what was lowered since they
	// registered.
	walks map[*floorWalk]struct{}
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
	f := &floors{lanes: map[string][]byte{}, walks: map[*floorWalk]struct{}{}}
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

// lowerFloor lowers the floor of due key k's lane to k, now and once tx
// has committed (see above).
func lowerFloor(tx *kv.Tx, k []byte) {
	f, _ := tx.Local().(*floors)
	if f == nil {
		return // Open's own upgrades, before the floors are loaded
	}
	f.lower(k)
	tx.OnCommit(func() { f.lower(k) })
}

// lower lowers the floor of due key k's lane to k, and records k in the
// walks under way.
func (f *floors) lower(k []byte) {
	lane, _, _, ok := splitDueKey(k)
	if !ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if cur, ok := f.lanes[string(lane)]; !ok || bytes.Compare(k, cur) < 0 {
		f.lanes[string(lane)] = k
	}
	for w := range f.walks {
		if cur, ok := w.low[string(lane)]; !ok || bytes.Compare(k, cur) < 0 {
			w.low[string(lane)] = k
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
