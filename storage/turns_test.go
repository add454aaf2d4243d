package storage

import (
	"fmt"
	"testing"
	"time"
)

// TestTurnsAcrossLeases: leases of one job each (a paced lane) serve every
// share of a lane in turn, the newest tenant's event within as many leases
// as the lane has shares with due jobs; without Turns, the share with the
// oldest job would win every lease.
func TestTurnsAcrossLeases(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	var cands []Candidate
	for i := range 50 { // a busy tenant's backlog, in its own lane and in a share
		cands = append(cands, Candidate{Lane: "a#t00ff", Due: t0.Add(time.Duration(2*i) * time.Second), ID: fmt.Sprintf("t%d", i)})
		cands = append(cands, Candidate{Lane: "a#4", Due: t0.Add(time.Duration(2*i+1) * time.Second), ID: fmt.Sprintf("s%d", i)})
	}
	cands = append(cands, Candidate{Lane: "a#9", Due: t0.Add(time.Hour), ID: "quiet"}, // the newest
		Candidate{Lane: "b", Due: t0.Add(time.Hour), ID: "b1"})
	lease := func(turns *Turns, rest []Candidate) ([]Candidate, Candidate) {
		got := PickFair(rest, 1, map[string]int{"a": 1, "b": 0}, turns)
		if len(got) != 1 {
			t.Fatalf("PickFair = %v, want one job", got)
		}
		turns.Served(got)
		var left []Candidate
		for _, c := range rest {
			if c.ID != got[0].ID {
				left = append(left, c)
			}
		}
		return left, got[0]
	}
	turns := new(Turns)
	rest, seen := cands, map[string]int{}
	for i := range 3 {
		var c Candidate
		rest, c = lease(turns, rest)
		seen[c.Lane] = i + 1
	}
	if seen["a#9"] == 0 || seen["a#4"] == 0 || seen["a#t00ff"] == 0 {
		t.Errorf("three leases of one job served shares %v, want each of the three", seen)
	}
	// the same leases without turns: the oldest share each time
	rest = cands
	for range 3 {
		var c Candidate
		if rest, c = lease(nil, rest); c.Lane == "a#9" {
			t.Fatal("without turns the newest share was served: the test shows nothing")
		}
	}
	// a share served last that has no due job now: the next by name goes
	turns = &Turns{last: map[string]string{"a": "a#5"}}
	if got := PickFair(cands, 1, nil, turns); got[0].Lane != "a#9" {
		t.Errorf("after a#5, PickFair served %s, want a#9", got[0].Lane)
	}
	turns = &Turns{last: map[string]string{"a": "a#zz"}}
	if got := PickFair(cands, 1, nil, turns); got[0].Lane != "a#4" {
		t.Errorf("after the last share by name, PickFair served %s, want the first, a#4", got[0].Lane)
	}
}
