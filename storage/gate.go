package storage

import (
	"cmp"
	"slices"
	"sync"
	"time"
)

// Lanes. Every queued job belongs to one lane, the unit that is paused,
// paced and held back as a whole: a job's lane is its source, its
// source's replay lane for a replayed event, or a lane of its destination
// (LaneOf, in lane.go). The
// backends index due jobs per lane, so that a lane that must wait costs
// no store work however many jobs it holds: its jobs are simply not
// looked at until the gate lets them through.

// Gate says, at lease time, which lanes may be leased and how fast. A nil
// Gate lets every lane through unpaced.
type Gate struct {
	// Each map holds lanes; a lane missing from a map follows the entry of
	// GateLaneOf(lane) (a destination's lane, its source's).
	//
	// Skip holds lanes whose jobs must not be leased now (a paused source,
	// an upstream whose circuit breaker is open). Their jobs stay due,
	// untouched, and are leased as soon as the lane is no longer skipped.
	Skip map[string]bool
	// Pace limits how many jobs of a lane leave the store: a lane whose
	// next slot is in the future is not leased. With a shared backend the
	// rate holds for all the nodes together.
	Pace map[string]Rate
	// Cap bounds how many jobs of a lane one lease may take (a half-open
	// breaker lets one trial through); a negative entry is no cap (a
	// destination's lane then does not follow its source's cap).
	Cap map[string]int
}

// skipped reports whether lane must not be leased now.
func (g *Gate) skipped(lane string) bool {
	if g == nil {
		return false
	}
	if g.Skip[lane] {
		return true // a tenant's lane apart, held by its tenant's pause (TenantLane)
	}
	skip, _ := gateEntry(g.Skip, lane)
	return skip
}

// gateEntry is lane's entry in one of the gate's maps, or, when it has
// none, the entry of the lane it follows (GateLaneOf).
func gateEntry[V any](m map[string]V, lane string) (V, bool) {
	lane = BaseLane(lane) // a tenant's share is gated with its lane
	if v, ok := m[lane]; ok {
		return v, true
	}
	v, ok := m[GateLaneOf(lane)]
	return v, ok
}

// CapOf returns how many of the lane's jobs one lease may take (ok false:
// no cap).
func (g *Gate) CapOf(lane string) (int, bool) {
	if g == nil {
		return 0, false
	}
	c, ok := gateEntry(g.Cap, lane)
	return c, ok && c >= 0
}

// Skipped reports whether lane must not be leased now.
func (g *Gate) Skipped(lane string) bool { return g.skipped(lane) }

// Open reports whether the gate leaves lane alone: neither skipped, nor
// paced, nor capped. Only such a lane's jobs may be leased by name
// (Queue.LeaseNamed), which consults no gate.
func (g *Gate) Open(lane string) bool {
	if g.Skipped(lane) {
		return false
	}
	if _, paced := g.RateOf(lane); paced {
		return false
	}
	_, capped := g.CapOf(lane)
	return !capped
}

// RateOf returns the lane's rate (ok false: unpaced).
func (g *Gate) RateOf(lane string) (Rate, bool) {
	if g == nil {
		return Rate{}, false
	}
	r, ok := gateEntry(g.Pace, lane)
	return r, ok && r.Valid()
}

// Rate is a pace: Events per Per, spread evenly (one every Per/Events,
// no bursts).
type Rate struct {
	Events int
	Per    time.Duration
}

// Valid reports whether the rate limits anything.
func (r Rate) Valid() bool { return r.Events > 0 && r.Per > 0 }

// Interval is the time between two slots, in whole microseconds (the
// unit every backend keeps the pace in).
func (r Rate) Interval() time.Duration {
	if !r.Valid() {
		return 0
	}
	return max((r.Per / time.Duration(r.Events)).Truncate(time.Microsecond), time.Microsecond)
}

// paceWindow is the span over which a pace may bunch its slots: a lane
// at 500/s may send 50 jobs within 100ms, never more (and a slow pace,
// one every 100ms or slower, sends exactly one at a time). It keeps one
// lease per slot from costing a store round trip at high rates.
const paceWindow = 100 * time.Millisecond

// Burst is how many slots the rate may grant at once.
func (r Rate) Burst() int {
	iv := r.Interval()
	if iv <= 0 {
		return 0
	}
	return max(1, int(paceWindow/iv))
}

// Take is the pacing rule (GCRA), decided here for every backend that
// paces in Go: given the lane's theoretical arrival time tat (zero: never
// used), it grants up to want slots at now and returns how many and the
// new tat. The lane's next slot opens at NextSlot(newTAT). The Redis
// backend runs the same arithmetic in Lua (paceScript) so that all nodes
// share one pace.
func (r Rate) Take(tat, now time.Time, want int) (granted int, newTAT time.Time) {
	iv := r.Interval()
	if iv <= 0 {
		return want, tat
	}
	if tat.Before(now) {
		tat = now
	}
	// a slot is free while tat - now <= (burst-1) * iv
	room := time.Duration(r.Burst()-1)*iv - tat.Sub(now)
	if room < 0 || want <= 0 {
		return 0, tat
	}
	granted = min(want, int(room/iv)+1)
	return granted, tat.Add(time.Duration(granted) * iv)
}

// NextSlot is when a lane whose theoretical arrival time is tat may take
// its next slot.
func (r Rate) NextSlot(tat time.Time) time.Time {
	return tat.Add(-time.Duration(r.Burst()-1) * r.Interval())
}

// Pacer keeps the lanes' pacing state in memory, for a backend that only
// one process uses at a time (the embedded store). It is safe for
// concurrent use.
type Pacer struct {
	mu  sync.Mutex
	tat map[string]time.Time
}

// Take grants up to want of the lane's jobs at now under r.
func (p *Pacer) Take(lane string, r Rate, now time.Time, want int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tat == nil {
		p.tat = make(map[string]time.Time)
	}
	n, tat := r.Take(p.tat[lane], now, want)
	p.tat[lane] = tat
	return n
}

// Next is when the lane's next slot under r opens (zero or past: now).
func (p *Pacer) Next(lane string, r Rate) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	tat, ok := p.tat[lane]
	if !ok {
		return time.Time{}
	}
	return r.NextSlot(tat)
}

// Candidate is a due job a backend could lease.
type Candidate struct {
	Lane string
	Due  time.Time
	ID   string
	// Part is backend-private (the Redis partition).
	Part int
}

// Plan chooses up to n of cands to lease under the gate: lanes take turns
// (PickFair), a capped lane gives at most its cap, and a paced lane gives
// only the jobs its pace grants. take asks the paces: given how many jobs
// of each paced lane not asked yet the pick would take, it returns how many
// slots each lane got (taken for good: a slot granted for a job that is
// then not leased is lost, so a lane may go slower, never faster). Lanes
// are asked in rounds, so that a paced lane with no slot frees its place
// for the next lanes, paced ones included, and never starves them. Lanes
// sharing a pace (PaceOf) are asked one after the other, the pace's own
// lane first: a source's live traffic before its replay. Caps and paces
// hold for a base lane (BaseLane): its tenants' shares together.
func Plan(cands []Candidate, n int, gate *Gate, turns *Turns, take func(want map[string]int) (map[string]int, error)) ([]Candidate, error) {
	granted := make(map[string]int)
	for {
		picked := pickGated(cands, n, gate, turns, granted)
		want := make(map[string]int)
		for _, c := range picked {
			lane := BaseLane(c.Lane)
			if _, asked := granted[lane]; !asked {
				if _, paced := gate.RateOf(lane); paced {
					want[lane]++
				}
			}
		}
		// a lane sharing the pace of another (PaceOf: a replay lane, its
		// source's) is asked once that lane was: live traffic takes the
		// slots it needs, the replay the rest
		for lane := range want {
			if own := PaceOf(lane); own != lane {
				if _, first := want[own]; first {
					delete(want, lane)
				}
			}
		}
		if len(want) == 0 {
			return picked, nil
		}
		got, err := take(want)
		if err != nil {
			return nil, err
		}
		for lane := range want {
			granted[lane] = min(got[lane], want[lane])
		}
	}
}

// pickGated is PickFair under the gate's caps and the slots granted to
// the paced lanes asked so far (a paced lane not in granted is not limited
// yet), by base lane.
func pickGated(cands []Candidate, n int, gate *Gate, turns *Turns, granted map[string]int) []Candidate {
	limit := make(map[string]int)
	seen := make(map[string]bool)
	for _, c := range cands {
		lane := BaseLane(c.Lane)
		if seen[lane] {
			continue
		}
		seen[lane] = true
		l, limited := -1, false
		if cp, ok := gate.CapOf(lane); ok {
			l, limited = cp, true
		}
		if g, asked := granted[lane]; asked && (!limited || g < l) {
			l, limited = g, true
		}
		if limited {
			limit[lane] = l
		}
	}
	return PickFair(cands, n, limit, turns)
}

// CountLanes counts candidates by base lane (BaseLane), as PickFair's
// limit counts them.
func CountLanes(cands []Candidate) map[string]int {
	out := make(map[string]int)
	for _, c := range cands {
		out[BaseLane(c.Lane)]++
	}
	return out
}

// PickFair chooses up to n candidates to lease, taking lanes in turn
// (oldest job of each lane first, lanes ordered by their oldest job) so
// that one lane's backlog never starves the others, and no more of a lane
// than limit allows (limit nil or a lane missing from it: no limit). A
// lane's tenant shares (BaseLane) are one lane here, within which they
// take turns the same way: one tenant's backlog holds back the other
// shares of its lane by one job a turn, and other lanes not at all. The
// shares' turns go on from lease to lease by turns (Turns.Served); with
// turns nil, a lane's share with the oldest job goes first. The result is
// in the order the jobs should be handed out.
func PickFair(cands []Candidate, n int, limit map[string]int, turns *Turns) []Candidate {
	if n <= 0 || len(cands) == 0 {
		return nil
	}
	shares := make(map[string][]Candidate) // by lane, oldest first
	for _, c := range cands {
		shares[c.Lane] = append(shares[c.Lane], c)
	}
	byBase := make(map[string][][]Candidate)
	for lane, cs := range shares {
		slices.SortFunc(cs, func(a, b Candidate) int {
			return cmp.Or(a.Due.Compare(b.Due), cmp.Compare(a.ID, b.ID))
		})
		base := BaseLane(lane)
		byBase[base] = append(byBase[base], cs)
	}
	byLane := make(map[string][]Candidate, len(byBase))
	lanes := make([]string, 0, len(byBase))
	for base, ss := range byBase {
		turns.order(base, ss)
		cs := takeTurns(ss, -1)
		if l, ok := limit[base]; ok && len(cs) > l {
			cs = cs[:max(l, 0)]
		}
		byLane[base] = cs
		lanes = append(lanes, base)
	}
	slices.SortFunc(lanes, func(a, b string) int {
		ca, cb := byLane[a], byLane[b]
		if len(ca) == 0 || len(cb) == 0 {
			return cmp.Compare(len(cb), len(ca))
		}
		return cmp.Or(ca[0].Due.Compare(cb[0].Due), cmp.Compare(a, b))
	})
	ordered := make([][]Candidate, len(lanes))
	for i, lane := range lanes {
		ordered[i] = byLane[lane]
	}
	return takeTurns(ordered, n)
}

// takeTurns interleaves lists, in their order: the first of each, then
// the second of each, and so on, up to n (n < 0: all).
func takeTurns(lists [][]Candidate, n int) []Candidate {
	total := 0
	for _, l := range lists {
		total += len(l)
	}
	if n < 0 || n > total {
		n = total
	}
	if len(lists) == 1 {
		return lists[0][:n]
	}
	out := make([]Candidate, 0, n)
	for round := 0; len(out) < n; round++ {
		for _, l := range lists {
			if round < len(l) {
				out = append(out, l[round])
				if len(out) == n {
					break
				}
			}
		}
	}
	return out
}
