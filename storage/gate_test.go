package storage

import (
	"fmt"
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ids(PickFair(tc.cands, tc.n, tc.limit)); got != tc.want {
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
			got, err := Plan(cands, tc.n, tc.gate, func(want map[string]int) (map[string]int, error) {
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
		got, err := Plan(cands, 10, gate, func(want map[string]int) (map[string]int, error) {
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
