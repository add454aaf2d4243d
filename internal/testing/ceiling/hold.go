package ceiling

import (
	"sync"

	"github.com/hookline/hookline/storage"
)

// lanesSeen is the lanes a ceiling queue has been given jobs of, for the
// one gate rule it keeps: a queue with no lanes of its own holds all its
// jobs while the gate skips every lane it has seen. A load run that pauses
// every source (scripts/bench/run HELD=1) then measures its ingest with
// deliveries held, as it does the stores'. A pause of some of the lanes
// holds nothing, and paces and caps are not kept.
type lanesSeen struct {
	mu    sync.Mutex
	lanes map[string]struct{}
}

// add notes lane.
func (l *lanesSeen) add(lane string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.lanes[lane]; ok {
		return
	}
	if l.lanes == nil {
		l.lanes = map[string]struct{}{}
	}
	l.lanes[lane] = struct{}{}
}

// held reports whether gate skips every lane seen (false before any).
func (l *lanesSeen) held(gate *storage.Gate) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lanes) == 0 {
		return false
	}
	for lane := range l.lanes {
		if !gate.Skipped(lane) {
			return false
		}
	}
	return true
}
