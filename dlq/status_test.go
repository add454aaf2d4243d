package dlq

import (
	"errors"
	"slices"
	"testing"
	"time"
)

var allStatuses = []Status{StatusPending, StatusInvestigating, StatusResolved, StatusDiscarded, StatusRetried}

func TestStatusOpen(t *testing.T) {
	for _, tc := range []struct {
		s    Status
		want bool
	}{
		{StatusPending, true},
		{StatusInvestigating, true},
		{StatusResolved, false},
		{StatusDiscarded, false},
		{StatusRetried, false},
		{"", false},
		{"bogus", false},
	} {
		if got := tc.s.Open(); got != tc.want {
			t.Errorf("%q.Open() = %v, want %v", tc.s, got, tc.want)
		}
	}
}

func TestCheckTransition(t *testing.T) {
	// every (from, to) pair of the known statuses, plus unknown ones;
	// ok lists the allowed pairs, every other one is a conflict
	const (
		P = StatusPending
		I = StatusInvestigating
		R = StatusResolved
		D = StatusDiscarded
		T = StatusRetried
	)
	ok := map[[2]Status]bool{
		{P, I}: true, {P, R}: true, {P, D}: true, {P, T}: true,
		{I, I}: true, {I, R}: true, {I, D}: true, {I, T}: true,
		{R, I}: true, {R, R}: true, {R, D}: true, {R, T}: true,
		{D, I}: true, {D, R}: true, {D, D}: true,
		// an unknown from status is not refused
		{"future", I}: true, {"future", R}: true, {"future", D}: true, {"future", T}: true,
	}
	froms := append(slices.Clone(allStatuses), "future")
	tos := append(slices.Clone(allStatuses), "bogus", "")
	for _, from := range froms {
		for _, to := range tos {
			err := CheckTransition(from, to)
			if want := ok[[2]Status{from, to}]; (err == nil) != want {
				t.Errorf("CheckTransition(%q, %q) = %v, want allowed %v", from, to, err, want)
			}
			if err != nil && !errors.Is(err, ErrConflict) {
				t.Errorf("CheckTransition(%q, %q) = %v, want an ErrConflict", from, to, err)
			}
			// RefusedFrom is the same rule, as the Redis scripts see it
			refused := RefusedFrom(to)
			if to.Valid() && to != StatusPending && slices.Contains(refused, from) != (err != nil) {
				t.Errorf("RefusedFrom(%q) = %v disagrees with CheckTransition(%q, %q) = %v", to, refused, from, to, err)
			}
		}
	}
}

func TestRefusedFromIsACopy(t *testing.T) {
	RefusedFrom(StatusRetried)[0] = StatusPending
	if err := CheckTransition(StatusRetried, StatusRetried); err == nil {
		t.Fatal("changing RefusedFrom's answer changed the rule")
	}
}

func TestCheckSettable(t *testing.T) {
	for _, tc := range []struct {
		to   Status
		want bool
	}{
		{StatusPending, false},
		{StatusInvestigating, true},
		{StatusResolved, true},
		{StatusDiscarded, true},
		{StatusRetried, false},
		{"", false},
		{"bogus", false},
	} {
		err := CheckSettable(tc.to)
		if (err == nil) != tc.want || (err != nil && !errors.Is(err, ErrConflict)) {
			t.Errorf("CheckSettable(%q) = %v, want allowed %v", tc.to, err, tc.want)
		}
	}
}

func TestEntryTransition(t *testing.T) {
	t0, t1 := time.Unix(1_700_000_000, 0), time.Unix(1_700_000_600, 0)
	base := Entry{ID: "a", Status: StatusPending, UpdatedAt: t0, Retries: 1}
	for _, tc := range []struct {
		name string
		from Status
		to   Status
		text string
		want Entry // zero: refused, the entry is unchanged
	}{
		{"investigate", StatusPending, StatusInvestigating, "looking",
			Entry{ID: "a", Status: StatusInvestigating, UpdatedAt: t1, Retries: 1}},
		{"resolve keeps the text as resolution", StatusInvestigating, StatusResolved, "fixed",
			Entry{ID: "a", Status: StatusResolved, UpdatedAt: t1, Retries: 1, Resolution: "fixed"}},
		{"discard keeps the text as reason", StatusPending, StatusDiscarded, "noise",
			Entry{ID: "a", Status: StatusDiscarded, UpdatedAt: t1, Retries: 1, Reason: "noise"}},
		{"retry counts a retry", StatusResolved, StatusRetried, "ignored",
			Entry{ID: "a", Status: StatusRetried, UpdatedAt: t1, Retries: 2}},
		{"retried cannot be retried", StatusRetried, StatusRetried, "", Entry{}},
		{"discarded cannot be retried", StatusDiscarded, StatusRetried, "", Entry{}},
		{"retried cannot be resolved", StatusRetried, StatusResolved, "x", Entry{}},
		{"nothing goes back to pending", StatusInvestigating, StatusPending, "", Entry{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := base
			e.Status = tc.from
			before := e
			err := e.Transition(tc.to, tc.text, t1)
			want := tc.want
			if want.ID == "" {
				if !errors.Is(err, ErrConflict) {
					t.Fatalf("err = %v, want ErrConflict", err)
				}
				want = before
			} else if err != nil {
				t.Fatal(err)
			}
			if e.Status != want.Status || !e.UpdatedAt.Equal(want.UpdatedAt) || e.Retries != want.Retries ||
				e.Resolution != want.Resolution || e.Reason != want.Reason {
				t.Errorf("entry = %+v, want %+v", e, want)
			}
		})
	}
}
