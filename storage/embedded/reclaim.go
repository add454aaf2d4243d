package embedded

import (
	"bytes"
	"context"
	"sync"
)

// Space back after retention. A cleanup deletes the records and index
// keys of the events past retention; the engine marks them deleted, and
// gives their space back once a compaction rewrites the tables they are
// in. Its own compactions follow the writes: while events keep coming they
// get there, but a store that went quiet after a burst would keep the
// burst's tables. So once the cleanups have deleted compactAfter keys, the
// key ranges they emptied are compacted (kv.DB.Compact): in the time
// ordered indexes everything before the last key swept, in the records
// and DLQ entries the range of the ids swept (ids are time ordered: the
// live records in it are few, and rewritten as they are).

// sweptRanges are the key ranges, per bucket, of what one Cleanup deleted.
type sweptRanges struct {
	lo, hi map[string][]byte
}

func newSweptRanges() *sweptRanges {
	return &sweptRanges{lo: map[string][]byte{}, hi: map[string][]byte{}}
}

// add widens bucket b's range to key k.
func (r *sweptRanges) add(b, k []byte) {
	name := string(b)
	if lo, ok := r.lo[name]; !ok || bytes.Compare(k, lo) < 0 {
		r.lo[name] = bytes.Clone(k)
	}
	if hi, ok := r.hi[name]; !ok || bytes.Compare(k, hi) > 0 {
		r.hi[name] = bytes.Clone(k)
	}
}

// timeIndexes are the buckets whose keys start with a time: compacted
// from their first key.
var timeIndexes = map[string]bool{string(bDone): true, string(bClaimExp): true, string(bDLQIdx): true}

// reclaim compacts the ranges the cleanups swept once they add up to
// compactAfter deleted keys since the last compaction (n: this cleanup's).
// It runs in the cleanup's goroutine, with the cleanup's ctx. An error is
// not the cleanup's: the next one tries again.
func (s *Store) reclaim(ctx context.Context, r *sweptRanges, n int) {
	s.pending.merge(r)
	if s.deleted.Add(int64(n)) < compactAfter {
		return
	}
	ranges := s.pending.take()
	for name, hi := range ranges.hi {
		lo := ranges.lo[name]
		if timeIndexes[name] {
			lo = nil
		}
		if err := s.db.Compact(ctx, []byte(name), lo, hi); err != nil {
			s.pending.merge(ranges) // the next cleanup tries again
			return
		}
	}
	s.deleted.Store(0)
	s.compactions.Add(1)
}

// pendingRanges are the ranges swept since the last compaction.
type pendingRanges struct {
	mu sync.Mutex
	r  *sweptRanges
}

// merge adds r's ranges.
func (p *pendingRanges) merge(r *sweptRanges) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.r == nil {
		p.r = newSweptRanges()
	}
	for name, lo := range r.lo {
		p.r.add([]byte(name), lo)
		p.r.add([]byte(name), r.hi[name])
	}
}

// take returns the ranges and forgets them.
func (p *pendingRanges) take() *sweptRanges {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.r
	if r == nil {
		r = newSweptRanges()
	}
	p.r = nil
	return r
}
