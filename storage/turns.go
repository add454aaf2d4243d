package storage

import (
	"cmp"
	"slices"
	"sync"
)

// Turns keeps the tenant shares of each lane taking turns from one lease
// to the next. Within one lease a lane's shares take turns (PickFair),
// but a lease that takes fewer of a lane's jobs than it has shares with
// due jobs (a paced lane's lease takes one job at a time) would always
// serve the share with the oldest job, and a tenant's backlog, older than
// another tenant's event, would hold it back to its end. With Turns, each
// lease of a lane starts with the share after the one its last lease
// served, in share name order: every share with due jobs is served within
// as many of the lane's jobs as it has such shares. A backend keeps one
// for its process; each node's leases take their turns on their own. Its
// size is bounded by the number of lanes (one name each), not of tenants.
type Turns struct {
	mu sync.Mutex
	// last maps a lane (BaseLane) to the share whose job it handed out
	// last
	last map[string]string
}

// order sorts the shares of base (each a list of candidates of one lane,
// oldest first) in the order they take their turns at this lease: after
// the share served last, by name, going round (at the lane's first lease,
// from the share holding the oldest job); with t nil, the share holding
// the oldest job first.
func (t *Turns) order(base string, shares [][]Candidate) {
	if t == nil {
		slices.SortFunc(shares, func(a, b []Candidate) int {
			return cmp.Or(a[0].Due.Compare(b[0].Due), cmp.Compare(a[0].Lane, b[0].Lane))
		})
		return
	}
	slices.SortFunc(shares, func(a, b []Candidate) int { return cmp.Compare(a[0].Lane, b[0].Lane) })
	t.mu.Lock()
	last, ok := t.last[base]
	t.mu.Unlock()
	var i int
	if ok {
		// the first share named after the last one served, going round
		i, _ = slices.BinarySearchFunc(shares, last, func(s []Candidate, name string) int {
			if s[0].Lane <= name {
				return -1
			}
			return 1
		})
	} else {
		// the lane's first lease: the share with the oldest job first
		for j := range shares {
			if shares[j][0].Due.Before(shares[i][0].Due) {
				i = j
			}
		}
	}
	if i > 0 && i < len(shares) {
		rotated := append(slices.Clone(shares[i:]), shares[:i]...)
		copy(shares, rotated)
	}
}

// Served records the shares of each lane that picked (a lease's jobs, in
// the order they are handed out) served last: the next lease of the lane
// starts after them.
func (t *Turns) Served(picked []Candidate) {
	if t == nil || len(picked) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.last == nil {
		t.last = make(map[string]string)
	}
	for _, c := range picked {
		t.last[BaseLane(c.Lane)] = c.Lane
	}
}
