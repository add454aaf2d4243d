package operator

import (
	"reflect"
	"testing"
	"time"
)

// TestBreakdownSplit: the counters by type and by destination leave the
// source's plain counters (so they count neither as rejected nor in the
// totals) and sum by type and by destination, in the window asked for.
func TestBreakdownSplit(t *testing.T) {
	for _, tc := range []struct {
		name         string
		c            map[string]int64
		allTime      bool
		plain        map[string]int64
		types        map[string]TypeStats
		destinations map[string]DestinationStats
	}{
		{name: "nil", c: nil},
		{name: "plain only", c: map[string]int64{"accepted": 1, "unauthorized": 2},
			plain: map[string]int64{"accepted": 1, "unauthorized": 2}},
		{
			name: "types, last hour",
			c: map[string]int64{
				"accepted": 3, "delivered": 2, "dead": 1, "unauthorized": 1,
				TypeCounter("accepted", "orders/create"): 2, TypeCounter("delivered", "orders/create"): 2,
				TypeCounter("accepted", "a:b.c"): 1, TypeCounter("dead", "a:b.c"): 1,
				TypeCounter("retry", "a:b.c"): 5, // not a type outcome: dropped
				"type:malformed":              7,
			},
			plain: map[string]int64{"accepted": 3, "delivered": 2, "dead": 1, "unauthorized": 1},
			types: map[string]TypeStats{
				"orders/create": {LastHour: TypeCounts{Received: 2, Delivered: 2}},
				"a:b.c":         {LastHour: TypeCounts{Received: 1, Dead: 1}},
			},
		},
		{
			name: "destinations, all time",
			c: map[string]int64{
				"delivered": 5, "dead": 2,
				DestinationCounter("delivered", "default"): 3, DestinationCounter("dead", "default"): 1,
				DestinationCounter("delivered", "billing"): 2, DestinationCounter("dead", "billing"): 1,
				DestinationCounter("accepted", "billing"): 9, // not a destination outcome: dropped
				"destination:malformed":                   4,
			},
			allTime: true,
			plain:   map[string]int64{"delivered": 5, "dead": 2},
			destinations: map[string]DestinationStats{
				"default": {AllTime: DestinationCounts{Delivered: 3, Dead: 1}},
				"billing": {AllTime: DestinationCounts{Delivered: 2, Dead: 1}},
			},
		},
		{
			name: "both",
			c: map[string]int64{"delivered": 1, TypeCounter("delivered", "x"): 1,
				DestinationCounter("delivered", "crm"): 1},
			plain:        map[string]int64{"delivered": 1},
			types:        map[string]TypeStats{"x": {LastHour: TypeCounts{Delivered: 1}}},
			destinations: map[string]DestinationStats{"crm": {LastHour: DestinationCounts{Delivered: 1}}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b breakdown
			plain := b.split(tc.c, tc.allTime)
			if !reflect.DeepEqual(plain, tc.plain) {
				t.Errorf("plain %v, want %v", plain, tc.plain)
			}
			if !reflect.DeepEqual(b.types, tc.types) {
				t.Errorf("types %+v, want %+v", b.types, tc.types)
			}
			if !reflect.DeepEqual(b.destinations, tc.destinations) {
				t.Errorf("destinations %+v, want %+v", b.destinations, tc.destinations)
			}
			if s := summarize(plain); s.Rejected != tc.plain["unauthorized"] {
				t.Errorf("rejected %d, want %d (counters by type or destination must not count)", s.Rejected, tc.plain["unauthorized"])
			}
		})
	}
}

// TestBreakdownWindows: the two windows of one source add up in the same
// breakdown, each in its own field.
func TestBreakdownWindows(t *testing.T) {
	var b breakdown
	b.split(map[string]int64{DestinationCounter("dead", "billing"): 1, TypeCounter("accepted", "t"): 1}, false)
	b.split(map[string]int64{DestinationCounter("dead", "billing"): 4, TypeCounter("accepted", "t"): 6}, true)
	if want := (DestinationStats{LastHour: DestinationCounts{Dead: 1}, AllTime: DestinationCounts{Dead: 4}}); b.destinations["billing"] != want {
		t.Errorf("billing %+v, want %+v", b.destinations["billing"], want)
	}
	if want := (TypeStats{LastHour: TypeCounts{Received: 1}, AllTime: TypeCounts{Received: 6}}); b.types["t"] != want {
		t.Errorf("type t %+v, want %+v", b.types["t"], want)
	}
}

// TestSecretList: the secret counters leave the plain ones; each secret in
// effect is listed by position, matched or not, a removed one's counters
// dropped; without a count from the scheme, every position up to the last
// counted (so "secret 4 of 4", never "of 3").
func TestSecretList(t *testing.T) {
	var b breakdown
	recent := b.split(map[string]int64{"accepted": 4, SecretMatchCounter(2): 3, "secret:bogus:1": 1, SecretMatchCounter(0): 1}, false)
	all := b.split(map[string]int64{"accepted": 9, SecretMatchCounter(1): 5, SecretMatchCounter(2): 4, SecretMatchCounter(4): 2,
		SecretLastMatched(1): 1700000000, SecretLastMatched(2): 1700000300, SecretLastMatched(4): 1600000000}, true)
	if !reflect.DeepEqual(recent, map[string]int64{"accepted": 4}) || !reflect.DeepEqual(all, map[string]int64{"accepted": 9}) {
		t.Errorf("plain counters: %v, %v; the secret counters must leave them", recent, all)
	}
	want := []SecretStats{
		{Position: 1, LastMatched: time.Unix(1700000000, 0).UTC(), MatchesAllTime: 5},
		{Position: 2, LastMatched: time.Unix(1700000300, 0).UTC(), MatchesLastHour: 3, MatchesAllTime: 4},
		{Position: 3},
	}
	if got := b.secretList(3); !reflect.DeepEqual(got, want) {
		t.Errorf("secretList(3) = %+v\nwant %+v", got, want)
	}
	all4 := append(want[:3:3], SecretStats{Position: 4, LastMatched: time.Unix(1600000000, 0).UTC(), MatchesAllTime: 2})
	if got := b.secretList(0); !reflect.DeepEqual(got, all4) {
		t.Errorf("secretList(0) = %+v\nwant %+v", got, all4)
	}
	if got := (&breakdown{}).secretList(0); got != nil {
		t.Errorf("no secret counted: %+v, want nil (absent from the answer)", got)
	}
	// a position far out (a store's counters are not to be trusted to
	// size an answer): the list stops at maxListedSecrets
	var far breakdown
	far.split(map[string]int64{SecretMatchCounter(2000000000): 1}, true)
	if got := far.secretList(0); len(got) != maxListedSecrets {
		t.Errorf("a counter at position 2e9: %d positions listed, want %d", len(got), maxListedSecrets)
	}
}
