package storage

import (
	"errors"
	"slices"
	"testing"
	"time"
)

var allStatuses = []DLQStatus{DLQPending, DLQInvestigating, DLQResolved, DLQDiscarded, DLQRetried}

func TestStatusOpen(t *testing.T) {
	for _, tc := range []struct {
		s    DLQStatus
		want bool
	}{
		{DLQPending, true},
		{DLQInvestigating, true},
		{DLQResolved, false},
		{DLQDiscarded, false},
		{DLQRetried, false},
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
		P = DLQPending
		I = DLQInvestigating
		R = DLQResolved
		D = DLQDiscarded
		T = DLQRetried
	)
	ok := map[[2]DLQStatus]bool{
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
			err := CheckDLQTransition(from, to)
			if want := ok[[2]DLQStatus{from, to}]; (err == nil) != want {
				t.Errorf("CheckDLQTransition(%q, %q) = %v, want allowed %v", from, to, err, want)
			}
			if err != nil && !errors.Is(err, ErrConflict) {
				t.Errorf("CheckDLQTransition(%q, %q) = %v, want an ErrConflict", from, to, err)
			}
			// DLQRefusedFrom is the same rule, as the Redis scripts see it
			refused := DLQRefusedFrom(to)
			if to.Valid() && to != DLQPending && slices.Contains(refused, from) != (err != nil) {
				t.Errorf("DLQRefusedFrom(%q) = %v disagrees with CheckDLQTransition(%q, %q) = %v", to, refused, from, to, err)
			}
		}
	}
}

func TestRefusedFromIsACopy(t *testing.T) {
	DLQRefusedFrom(DLQRetried)[0] = DLQPending
	if err := CheckDLQTransition(DLQRetried, DLQRetried); err == nil {
		t.Fatal("changing DLQRefusedFrom's answer changed the rule")
	}
}

func TestCheckSettable(t *testing.T) {
	for _, tc := range []struct {
		to   DLQStatus
		want bool
	}{
		{DLQPending, false},
		{DLQInvestigating, true},
		{DLQResolved, true},
		{DLQDiscarded, true},
		{DLQRetried, false},
		{"", false},
		{"bogus", false},
	} {
		err := CheckDLQSettable(tc.to)
		if (err == nil) != tc.want || (err != nil && !errors.Is(err, ErrConflict)) {
			t.Errorf("CheckDLQSettable(%q) = %v, want allowed %v", tc.to, err, tc.want)
		}
	}
}

func TestEntryTransition(t *testing.T) {
	t0, t1 := time.Unix(1_700_000_000, 0), time.Unix(1_700_000_600, 0)
	base := DLQEntry{ID: "a", Status: DLQPending, UpdatedAt: t0, Retries: 1}
	for _, tc := range []struct {
		name string
		from DLQStatus
		to   DLQStatus
		text string
		want DLQEntry // zero: refused, the entry is unchanged
	}{
		{"investigate", DLQPending, DLQInvestigating, "looking",
			DLQEntry{ID: "a", Status: DLQInvestigating, UpdatedAt: t1, Retries: 1}},
		{"resolve keeps the text as resolution", DLQInvestigating, DLQResolved, "fixed",
			DLQEntry{ID: "a", Status: DLQResolved, UpdatedAt: t1, Retries: 1, Resolution: "fixed"}},
		{"discard keeps the text as reason", DLQPending, DLQDiscarded, "noise",
			DLQEntry{ID: "a", Status: DLQDiscarded, UpdatedAt: t1, Retries: 1, Reason: "noise"}},
		{"retry counts a retry", DLQResolved, DLQRetried, "ignored",
			DLQEntry{ID: "a", Status: DLQRetried, UpdatedAt: t1, Retries: 2}},
		{"retried cannot be retried", DLQRetried, DLQRetried, "", DLQEntry{}},
		{"discarded cannot be retried", DLQDiscarded, DLQRetried, "", DLQEntry{}},
		{"retried cannot be resolved", DLQRetried, DLQResolved, "x", DLQEntry{}},
		{"nothing goes back to pending", DLQInvestigating, DLQPending, "", DLQEntry{}},
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
