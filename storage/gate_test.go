package storage

import (
	"fmt"
	"strconv"
	"testing"
	"time"
)

func TestRateTake(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	for _, tc := range []struct {
		name    string
		rate    Rate
		tat     time.Time
		now     time.Time
		want    int
		granted int
		newTAT  time.Time
	}{
		{"unlimited", Rate{}, time.Time{}, t0, 7, 7, time.Time{}},
		{"first use, slow pace: one", Rate{Events: 1, Per: time.Second}, time.Time{}, t0, 5, 1, t0.Add(time.Second)},
		{"slot not open yet", Rate{Events: 1, Per: time.Second}, t0.Add(time.Second), t0.Add(999 * time.Millisecond), 5, 0, t0.Add(time.Second)},
		{"slot just open", Rate{Events: 1, Per: time.Second}, t0.Add(time.Second), t0.Add(time.Second), 5, 1, t0.Add(2 * time.Second)},
		{"idle lane does not bank slots", Rate{Events: 1, Per: time.Second}, t0, t0.Add(time.Hour), 5, 1, t0.Add(time.Hour + time.Second)},
		{"fast pace: a 100ms burst", Rate{Events: 50, Per: time.Second}, time.Time{}, t0, 10, 5, t0.Add(100 * time.Millisecond)},
		{"fast pace: want fewer", Rate{Events: 50, Per: time.Second}, time.Time{}, t0, 2, 2, t0.Add(40 * time.Millisecond)},
		{"fast pace: partly used burst", Rate{Events: 50, Per: time.Second}, t0.Add(60 * time.Millisecond), t0, 10, 2, t0.Add(100 * time.Millisecond)},
		{"want none", Rate{Events: 1, Per: time.Second}, time.Time{}, t0, 0, 0, t0},
		{"30 per minute", Rate{Events: 30, Per: time.Minute}, time.Time{}, t0, 30, 1, t0.Add(2 * time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, tat := tc.rate.Take(tc.tat, tc.now, tc.want)
			if g != tc.granted || !tat.Equal(tc.newTAT) {
				t.Fatalf("Take = %d, %v; want %d, %v", g, tat, tc.granted, tc.newTAT)
			}
		})
	}
}

// Over any span, a pace never grants more than its rate allows (plus one
// burst), however often it is asked; asked at each NextSlot, as the
// dispatcher does, it grants its full rate.
func TestRateTakeNeverExceeds(t *testing.T) {
	for _, r := range []Rate{{1, time.Second}, {30, time.Minute}, {50, time.Second}, {1000, time.Second}} {
		t.Run(fmt.Sprintf("%d per %v", r.Events, r.Per), func(t *testing.T) {
			t0 := time.Unix(1_700_000_000, 0)
			span := 10 * r.Per
			limit := r.Events*10 + r.Burst()
			var tat time.Time
			total := 0
			for now := t0; now.Before(t0.Add(span)); now = now.Add(r.Interval() / 3) {
				g, nt := r.Take(tat, now, 100)
				tat, total = nt, total+g
			}
			if total > limit {
				t.Fatalf("asked every interval/3: granted %d over %v, want at most %d", total, span, limit)
			}
			tat, total = time.Time{}, 0
			for now := t0; now.Before(t0.Add(span)); now = r.NextSlot(tat) {
				g, nt := r.Take(tat, now, 100)
				if g == 0 {
					t.Fatalf("nothing granted at the next slot %v", now)
				}
				tat, total = nt, total+g
			}
			if total > limit || total < r.Events*10 {
				t.Fatalf("asked at each next slot: granted %d over %v, want %d to %d", total, span, r.Events*10, limit)
			}
		})
	}
}

func TestPickFair(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	c := func(lane string, sec int, id string) Candidate {
		return Candidate{Lane: lane, Due: t0.Add(time.Duration(sec) * time.Second), ID: id}
	}
	ids := func(cs []Candidate) string {
		s := ""
		for _, c := range cs {
			s += c.ID + " "
		}
		return s
	}
	backlog := []Candidate{c("a", 1, "a1"), c("a", 2, "a2"), c("a", 3, "a3"), c("a", 4, "a4"), c("b", 9, "b1"), c("b", 10, "b2")}
	// lane a: a backlog of share 1 (x), one job each of shares 2 (y) and a
	// itself (z, an event without a tenant); lane b: one job
	shares := []Candidate{c("a#1", 1, "x1"), c("a#1", 2, "x2"), c("a#1", 3, "x3"), c("a#1", 4, "x4"),
		c("a#2", 5, "y1"), c("a", 6, "z1"), c("b", 9, "b1")}
	for _, tc := range []struct {
		name  string
		cands []Candidate
		n     int
		limit map[string]int
		want  string
	}{
		{"empty", nil, 5, nil, ""},
		{"none wanted", backlog, 0, nil, ""},
		{"lanes take turns, oldest lane first", backlog, 4, nil, "a1 b1 a2 b2 "},
		{"all fit", backlog, 10, nil, "a1 b1 a2 b2 a3 a4 "},
		{"a paced lane gets its slots only", backlog, 4, map[string]int{"a": 1}, "a1 b1 b2 "},
		{"a lane with no slot is left out", backlog, 4, map[string]int{"b": 0}, "a1 a2 a3 a4 "},
		{"unordered input", []Candidate{c("b", 2, "b1"), c("a", 3, "a2"), c("a", 1, "a1")}, 2, nil, "a1 b1 "},
		// a lane's tenant shares take turns within it, and the lane takes
		// its turn with the others as one: shares never crowd other lanes
		{"shares take turns within their lane", shares, 6, nil, "x1 b1 y1 z1 x2 x3 "},
		{"a lane's cap holds for its shares together", shares, 6, map[string]int{"a": 2}, "x1 b1 y1 "},
		{"a share alone", []Candidate{c("a#3", 1, "x1"), c("a#3", 2, "x2")}, 5, map[string]int{"a": 1}, "x1 "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ids(PickFair(tc.cands, tc.n, tc.limit, nil)); got != tc.want {
				t.Fatalf("PickFair = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPlan(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	c := func(lane string, sec int, id string) Candidate {
		return Candidate{Lane: lane, Due: t0.Add(time.Duration(sec) * time.Second), ID: id}
	}
	cands := []Candidate{c("a", 1, "a1"), c("a", 2, "a2"), c("b", 3, "b1"), c("b", 4, "b2"), c("c", 5, "c1"), c("c", 6, "c2")}
	hourly := Rate{Events: 1, Per: time.Hour}
	ids := func(cs []Candidate) string {
		s := ""
		for _, c := range cs {
			s += c.ID + " "
		}
		return s
	}
	for _, tc := range []struct {
		name   string
		n      int
		gate   *Gate
		slots  map[string]int // what each paced lane's pace has
		want   string
		rounds int // calls of take
	}{
		{"no gate", 4, nil, nil, "a1 b1 c1 a2 ", 0},
		{"a paced lane with no slot frees its place, also for a paced lane", 1,
			&Gate{Pace: map[string]Rate{"a": hourly, "b": hourly}}, map[string]int{"a": 0, "b": 1}, "b1 ", 2},
		{"only unpaced left", 1,
			&Gate{Pace: map[string]Rate{"a": hourly, "b": hourly}}, map[string]int{"a": 0, "b": 0}, "c1 ", 2},
		{"granted slots", 4, &Gate{Pace: map[string]Rate{"b": hourly}}, map[string]int{"b": 1}, "a1 b1 c1 a2 ", 1},
		{"cap", 6, &Gate{Cap: map[string]int{"c": 1}}, nil, "a1 b1 c1 a2 b2 ", 0},
		{"cap below the pace", 6, &Gate{Cap: map[string]int{"b": 1}, Pace: map[string]Rate{"b": hourly}},
			map[string]int{"b": 5}, "a1 b1 c1 a2 c2 ", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rounds := 0
			asked := map[string]int{}
			got, err := Plan(cands, tc.n, tc.gate, nil, func(want map[string]int) (map[string]int, error) {
				rounds++
				out := map[string]int{}
				for lane, k := range want {
					if asked[lane]++; asked[lane] > 1 {
						t.Errorf("lane %s asked twice", lane)
					}
					out[lane] = min(k, tc.slots[lane])
				}
				return out, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if ids(got) != tc.want || rounds != tc.rounds {
				t.Errorf("Plan = %q in %d rounds, want %q in %d", ids(got), rounds, tc.want, tc.rounds)
			}
		})
	}
}

// TestPlanSharedPace: a source's replay lane shares its pace (PaceOf) and
// is asked after the live lane, so live traffic takes the slots it needs
// however old the replay backlog, and both together never pass the pace.
func TestPlanSharedPace(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	live, replay := LanesOf("a")[0], LanesOf("a")[1]
	cands := []Candidate{
		{Lane: replay, Due: t0, ID: "r1"}, {Lane: replay, Due: t0.Add(time.Second), ID: "r2"},
		{Lane: live, Due: t0.Add(2 * time.Second), ID: "l1"},
	}
	hourly := Rate{Events: 1, Per: time.Hour}
	gate := &Gate{Pace: map[string]Rate{live: hourly, replay: hourly}}
	for _, tc := range []struct {
		slots int // in the shared pace
		want  string
		order string // the lanes asked, round by round
	}{
		{0, "", "a|a~replay|"},
		{1, "l1 ", "a|a~replay|"},
		{2, "r1 l1 ", "a|a~replay|"},
		{5, "r1 l1 r2 ", "a|a~replay|"},
	} {
		left := tc.slots
		order := ""
		got, err := Plan(cands, 10, gate, nil, func(want map[string]int) (map[string]int, error) {
			out := map[string]int{}
			for lane, k := range want {
				order += lane + "|"
				g := min(k, left)
				left -= g
				out[lane] = g
			}
			return out, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		s := ""
		for _, c := range got {
			s += c.ID + " "
		}
		if s != tc.want || order != tc.order || left < 0 {
			t.Errorf("%d slots: Plan = %q asking %q, want %q asking %q", tc.slots, s, order, tc.want, tc.order)
		}
	}
}

func TestGateOpen(t *testing.T) {
	g := &Gate{
		Skip: map[string]bool{"held": true, "shop/crm": false},
		Pace: map[string]Rate{"slow": {Events: 1, Per: time.Second}, "zero": {}},
		Cap:  map[string]int{"trial": 1, "shop/crm": -1},
	}
	for lane, want := range map[string]bool{
		"held": false, "slow": false, "trial": false,
		"shop/crm": true, // an entry of its own, holding nothing
		"zero":     true, // an invalid rate paces nothing
		"other":    true,
	} {
		if got := g.Open(lane); got != want {
			t.Errorf("Open(%q) = %v, want %v", lane, got, want)
		}
	}
	var none *Gate
	if !none.Open("any") {
		t.Error("a nil gate holds a lane back")
	}
}

// TestTenantLanes: an event with a tenant waits in its tenant's share of
// its lane (a replay does not), and every rule on lanes sees the share as
// its lane.
func TestTenantLanes(t *testing.T) {
	sh := func(tenant string) string { return "#" + strconv.Itoa(TenantShare(tenant)) }
	for _, tc := range []struct {
		ev                       Event
		lane, base, source, gate string
		pace                     string
	}{
		{Event{Source: "shop"}, "shop", "shop", "shop", "shop", "shop"},
		{Event{Source: "shop", Tenant: "a.myshopify.com"}, "shop" + sh("a.myshopify.com"), "shop", "shop", "shop", "shop"},
		{Event{Source: "shop", Destination: "crm", Tenant: "b"}, "shop/crm" + sh("b"), "shop/crm", "shop", "shop", "shop/crm"},
		{Event{Source: "shop", Tenant: "b", Replay: true}, "shop~replay", "shop~replay", "shop", "shop~replay", "shop"},
		// apart: the tenant's own lane
		{Event{Source: "shop", Tenant: "b", Apart: true}, "shop#t" + TenantKey("b"), "shop", "shop", "shop", "shop"},
		{Event{Source: "shop", Destination: "crm", Tenant: "b", Apart: true}, "shop/crm#t" + TenantKey("b"), "shop/crm", "shop", "shop", "shop/crm"},
		{Event{Source: "shop", Tenant: "b", Apart: true, Replay: true}, "shop~replay", "shop~replay", "shop", "shop~replay", "shop"},
		{Event{Source: "shop", Apart: true}, "shop", "shop", "shop", "shop", "shop"},
	} {
		lane := LaneOf(&tc.ev)
		if lane != tc.lane || BaseLane(lane) != tc.base || SourceOfLane(lane) != tc.source || GateLaneOf(lane) != tc.gate || PaceOf(lane) != tc.pace {
			t.Errorf("%+v: lane %q base %q source %q gate %q pace %q; want %q %q %q %q %q", tc.ev, lane, BaseLane(lane),
				SourceOfLane(lane), GateLaneOf(lane), PaceOf(lane), tc.lane, tc.base, tc.source, tc.gate, tc.pace)
		}
	}
	// a share follows its lane's gate entries, the destination's first
	g := &Gate{Skip: map[string]bool{"shop": true, "shop/crm": false}, Cap: map[string]int{"shop": 1}}
	if !g.Skipped("shop#3") || g.Skipped("shop/crm#3") || !g.Skipped("shop/old#2") {
		t.Error("a tenant's share does not follow its lane's skip entry")
	}
	if c, ok := g.CapOf("shop#7"); !ok || c != 1 {
		t.Errorf("CapOf a share = %d, %v; want its lane's 1", c, ok)
	}
	// a tenant's lane apart follows its lane, unless skipped by name
	g.Skip[TenantLane("shop/crm", "b")] = true
	if !g.Skipped(TenantLane("shop/crm", "b")) || g.Skipped(TenantLane("shop/crm", "c")) || g.Skipped("shop/crm#3") || !g.Skipped(TenantLane("shop", "c")) {
		t.Error("a tenant's lane apart is not skipped by name alone")
	}
	// a lane name is stored: its tenant key must never change (FNV-1a 64 of "b")
	if k := TenantKey("b"); k != "af63df4c8601f1a5" {
		t.Errorf("TenantKey(b) = %s", k)
	}
	if !IsTenantLane(TenantLane("shop/crm", "b"), "b") || IsTenantLane(TenantLane("shop/crm", "b"), "c") || IsTenantLane("shop#3", "b") {
		t.Error("IsTenantLane")
	}
	// an order key's chain is its lane's, whatever the tenant
	a := Event{Source: "shop", Tenant: "a", OrderKey: "K"}
	b := Event{Source: "shop", Tenant: "b", OrderKey: "K"}
	if ChainOf(&a) != ChainOf(&b) {
		t.Errorf("chains of one order key across tenants: %q, %q", ChainOf(&a), ChainOf(&b))
	}
	// the shares spread tenants: 1,000 tenants use every share
	used := map[int]bool{}
	for i := range 1000 {
		used[TenantShare(fmt.Sprintf("shop-%d.myshopify.com", i))] = true
	}
	if len(used) != TenantShares {
		t.Errorf("1,000 tenants use %d shares of %d", len(used), TenantShares)
	}
	byBase := ByBaseLane(map[string]Counts{"shop#1": {Queued: 2}, "shop#4": {Queued: 3, InFlight: 1}, "shop": {Queued: 1}, "gh": {Queued: 5}})
	if byBase["shop"] != (Counts{Queued: 6, InFlight: 1}) || byBase["gh"] != (Counts{Queued: 5}) || len(byBase) != 2 {
		t.Errorf("ByBaseLane = %v", byBase)
	}
}
