package storage

import "testing"

func TestSumCounts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		byLane map[string]Counts
		dlq    map[string]map[DLQStatus]int
		want   Counts
	}{
		{"empty", nil, nil, Counts{}},
		{"lanes", map[string]Counts{"a": {Queued: 2, InFlight: 1}, "a~replay": {Queued: 1}, "b/crm": {InFlight: 3}}, nil,
			Counts{Queued: 3, InFlight: 4}},
		{"open entries only", nil, map[string]map[DLQStatus]int{
			"a": {DLQPending: 2, DLQInvestigating: 1, DLQResolved: 5},
			"b": {DLQRetried: 1, DLQDiscarded: 1, DLQPending: 1},
		}, Counts{Dead: 4}},
	} {
		if got := SumCounts(tc.byLane, tc.dlq); got != tc.want {
			t.Errorf("%s: SumCounts = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
