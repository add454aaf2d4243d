package storage

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

func TestValidDestination(t *testing.T) {
	for _, ok := range []string{"default", "billing", "a.b_c-D9"} {
		if err := ValidDestination(ok); err != nil {
			t.Errorf("ValidDestination(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a~b", "a/b", "a b", "é"} {
		if ValidDestination(bad) == nil {
			t.Errorf("ValidDestination(%q) = nil, want an error", bad)
		}
	}
}

func TestDeliveryID(t *testing.T) {
	for _, tc := range []struct{ ev, dest, want string }{
		{"01J", "", "01J"}, {"01J", "default", "01J"}, {"01J", "billing", "01J~billing"},
	} {
		got := DeliveryID(tc.ev, tc.dest)
		if got != tc.want {
			t.Errorf("DeliveryID(%q, %q) = %q, want %q", tc.ev, tc.dest, got, tc.want)
		}
		if back := EventIDOfDelivery(got); back != tc.ev {
			t.Errorf("EventIDOfDelivery(%q) = %q, want %q", got, back, tc.ev)
		}
		if d, want := DestinationOfDelivery(got), DestinationOf(&Event{Destination: tc.dest}); d != want {
			t.Errorf("DestinationOfDelivery(%q) = %q, want %q", got, d, want)
		}
	}
}

func TestDestinationLanes(t *testing.T) {
	for _, tc := range []struct {
		ev               Event
		lane, gate, pace string
	}{
		{Event{Source: "stripe"}, "stripe", "stripe", "stripe"},
		{Event{Source: "stripe", Destination: "default"}, "stripe", "stripe", "stripe"},
		{Event{Source: "stripe", Replay: true}, "stripe~replay", "stripe~replay", "stripe"},
		{Event{Source: "stripe", Destination: "billing"}, "stripe/billing", "stripe", "stripe/billing"},
		{Event{Source: "stripe", Destination: "billing", Replay: true}, "stripe/billing~replay", "stripe~replay", "stripe/billing"},
	} {
		lane := LaneOf(&tc.ev)
		if lane != tc.lane || GateLaneOf(lane) != tc.gate || SourceOfLane(lane) != "stripe" || PaceOf(lane) != tc.pace {
			t.Errorf("%+v: lane %q (want %q), gate lane %q (want %q), source %q, pace %q (want %q)",
				tc.ev, lane, tc.lane, GateLaneOf(lane), tc.gate, SourceOfLane(lane), PaceOf(lane), tc.pace)
		}
		if lanes := DestinationLanes(tc.ev.Source, tc.ev.Destination); !tc.ev.Replay && (lanes[0] != lane || lanes[1] != lane+"~replay") {
			t.Errorf("%+v: DestinationLanes %q", tc.ev, lanes)
		}
	}
}

func TestGateFollowsSourceForDestinations(t *testing.T) {
	r := Rate{Events: 10, Per: time.Second}
	g := &Gate{Skip: map[string]bool{"a": true}, Pace: map[string]Rate{"b": r, "b~replay": r}, Cap: map[string]int{"c": 1}}
	if !g.Skipped("a/x") || g.Skipped("b/x") {
		t.Errorf("skip of a destination lane does not follow its source")
	}
	if got, ok := g.RateOf("b/x~replay"); !ok || got != r {
		t.Errorf("RateOf(b/x~replay) = %v %v", got, ok)
	}
	if n, ok := g.CapOf("c/x"); !ok || n != 1 {
		t.Errorf("CapOf(c/x) = %d %v", n, ok)
	}
	if _, ok := g.CapOf("b/x"); ok {
		t.Errorf("CapOf(b/x): capped")
	}
	// a configured destination's own entries win over its source's: not
	// skipped, not capped, unpaced
	g.Skip["a/own"], g.Cap["c/own"], g.Pace["b/own"] = false, -1, Rate{}
	if g.Skipped("a/own") {
		t.Errorf("a/own skipped despite its own entry")
	}
	if n, ok := g.CapOf("c/own"); ok {
		t.Errorf("CapOf(c/own) = %d, capped despite its own negative entry", n)
	}
	if r, ok := g.RateOf("b/own"); ok {
		t.Errorf("RateOf(b/own) = %v, paced despite its own zero entry", r)
	}
}

func TestAggregateStatus(t *testing.T) {
	for _, tc := range []struct {
		in   []Status
		want Status
	}{
		{[]Status{StatusDelivered}, StatusDelivered},
		{[]Status{StatusDelivered, StatusDelivered}, StatusDelivered},
		{[]Status{StatusDelivered, StatusQueued}, StatusQueued},
		{[]Status{StatusQueued, StatusInFlight, StatusDelivered}, StatusInFlight},
		{[]Status{StatusInFlight, StatusDead, StatusDelivered}, StatusDead},
		{[]Status{StatusDead}, StatusDead},
	} {
		if got := AggregateStatus(tc.in...); got != tc.want {
			t.Errorf("AggregateStatus(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestDeliveriesOf(t *testing.T) {
	ev := &Event{ID: "01J", Source: "stripe", Upstream: "http://a", Body: []byte("x")}
	one, ds, _ := DeliveriesOf(ev)
	if len(one) != 1 || one[0].ID != "01J" || one[0].Destination != "" || ds != nil || one[0].Upstream != "http://a" {
		t.Fatalf("no deliveries: %+v %q", one, ds)
	}
	ev.Deliveries = []Delivery{{Destination: "default", Upstream: "http://a"}, {Destination: "billing", Upstream: "http://b"}}
	two, ds, _ := DeliveriesOf(ev)
	if len(two) != 2 || two[0].ID != "01J" || two[1].ID != "01J~billing" || two[1].Upstream != "http://b" ||
		two[0].Destination != "" || two[1].Destination != "billing" || two[1].Deliveries != nil {
		t.Fatalf("two deliveries: %+v", two)
	}
	if enc := EncodeDestinations(ds); enc != "default,billing" || len(DecodeDestinations(enc)) != 2 || DecodeDestinations("") != nil {
		t.Errorf("destinations %q, encoded %q", ds, enc)
	}
	ev.Deliveries = nil
	ev.Destination = "billing"
	lone, ds, _ := DeliveriesOf(ev)
	if len(lone) != 1 || lone[0].ID != "01J~billing" || len(ds) != 1 {
		t.Errorf("one non-default delivery: %+v %q", lone, ds)
	}
}

func TestDeliveriesOfRefuses(t *testing.T) {
	for _, ds := range [][]Delivery{
		{{Destination: "a~b"}},
		{{Destination: "billing"}, {Destination: "billing"}},
		{{Destination: ""}, {Destination: "default"}},
	} {
		if _, _, err := DeliveriesOf(&Event{ID: "01J", Deliveries: ds}); err == nil {
			t.Errorf("DeliveriesOf(%+v): no error", ds)
		}
	}
}

func TestCombineEventInfo(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := &EventInfo{ID: "01J", Source: "s", Status: StatusDelivered, FinishedAt: t0}
	if got := CombineEventInfo("01J", []*EventInfo{a}); got != a {
		t.Errorf("one default delivery: %+v, want it as is", got)
	}
	b := &EventInfo{ID: "01J~b", Source: "s", Destination: "b", Status: StatusQueued, NextAttempt: t0.Add(time.Minute)}
	got := CombineEventInfo("01J", []*EventInfo{a, b})
	if got.ID != "01J" || got.Status != StatusQueued || !got.FinishedAt.IsZero() || !got.NextAttempt.Equal(t0.Add(time.Minute)) ||
		len(got.Deliveries) != 2 || got.Deliveries[0].Destination != DefaultDestination || got.Deliveries[1].ID != "01J~b" {
		t.Errorf("combined: %+v", got)
	}
	gone := GoneDeliveryInfo("01J~c", "c")
	got = CombineEventInfo("01J", []*EventInfo{gone, a})
	if got.Source != "s" || got.Status != StatusDelivered || !got.FinishedAt.Equal(t0) || got.Deliveries[0].Destination != "c" {
		t.Errorf("combined with a gone delivery: %+v", got)
	}
}

func TestDLQFilterDestination(t *testing.T) {
	def, bill := &DLQEntry{}, &DLQEntry{Destination: "billing"}
	for _, tc := range []struct {
		f         string
		def, bill bool
	}{{"", true, true}, {"default", true, false}, {"billing", false, true}} {
		f := DLQFilter{Destination: tc.f}
		if f.Matches(def) != tc.def || f.Matches(bill) != tc.bill {
			t.Errorf("filter %q: default %v billing %v", tc.f, f.Matches(def), f.Matches(bill))
		}
	}
	if e := NewDLQEntry(&Job{Event: Event{ID: "01J~billing", Destination: "billing"}}, nil, "x", time.Now(), nil); e.Destination != "billing" || e.ID != "01J~billing" {
		t.Errorf("NewDLQEntry: %+v", e)
	}
	if ev := EventOfEntry(&DLQEntry{ID: "01J~billing", EventID: "01J", Destination: "billing"}); ev.Destination != "billing" || ev.Dedupe {
		t.Errorf("EventOfEntry of a generated-id delivery: %+v", ev)
	}
}

// TestRecordsWithoutDestination: a job and a DLQ entry written before
// destinations existed (no destination field) are the default's.
func TestRecordsWithoutDestination(t *testing.T) {
	var ev Event
	if err := json.Unmarshal([]byte(`{"id":"01J","event_id":"e","dedupe":true,"source":"stripe","upstream":"http://a"}`), &ev); err != nil {
		t.Fatal(err)
	}
	if DestinationOf(&ev) != DefaultDestination || LaneOf(&ev) != "stripe" || DeliveryID("01J", ev.Destination) != ev.ID {
		t.Errorf("old job: destination %q lane %q", DestinationOf(&ev), LaneOf(&ev))
	}
	var e DLQEntry
	if err := json.Unmarshal([]byte(`{"id":"01J","event_id":"e","source":"stripe","status":"pending"}`), &e); err != nil {
		t.Fatal(err)
	}
	if !(DLQFilter{Destination: "default"}).Matches(&e) || (DLQFilter{Destination: "billing"}).Matches(&e) {
		t.Errorf("old DLQ entry not matched as the default's")
	}
	if out, _ := json.Marshal(NewDLQEntry(&Job{Event: ev}, nil, "x", time.Now(), nil)); bytes.Contains(out, []byte(`"destination"`)) {
		t.Errorf("a default delivery's DLQ entry has a destination field: %s", out)
	}
}
