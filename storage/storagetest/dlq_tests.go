package storagetest

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

func testDLQEntry(t *testing.T, f Factory) {
	s := f.Open(t)
	if _, err := s.DLQGet(t.Context(), newID(t)); !errors.Is(err, storage.ErrDLQNotFound) {
		t.Errorf("DLQGet of an unknown id: err = %v, want storage.ErrDLQNotFound", err)
	}
	if _, err := s.Lookup(t.Context(), "stripe", "evt_unknown"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Lookup of an unknown event: err = %v, want storage.ErrNotFound", err)
	}
	ev := newEvent(t, "stripe", "evt_dead")
	ev.Type, ev.Tenant = "invoice.paid", "acct_1"
	ev.Body = []byte("{\"bin\":\"\x00\xff\"}")
	ev.Headers.Add("X-Multi", "a")
	ev.Headers.Add("X-Multi", "b")
	mustEnqueue(t, s, ev, time.Now().Add(time.Hour))
	base := time.Now()
	a1 := attempt(1, base, 503, "service unavailable")
	a2 := attempt(2, base.Add(time.Second), 422, "unprocessable")
	finish(t, s, leaseOne(t, s, base, time.Minute, ev.ID), storage.Outcome{Result: storage.Retry, Attempt: a1, Due: base.Add(time.Second)})
	before := time.Now()
	finish(t, s, leaseOne(t, s, base.Add(time.Second), time.Minute, ev.ID), storage.Outcome{Result: storage.Dead, Attempt: a2, Error: "upstream answered 422"})
	after := time.Now()

	e := dlqGet(t, s, ev.ID)
	if e.ID != ev.ID || e.EventID != ev.EventID || e.Source != ev.Source || e.Upstream != ev.Upstream {
		t.Errorf("entry ids = %s %s %s %s, want %s %s %s %s", e.ID, e.EventID, e.Source, e.Upstream, ev.ID, ev.EventID, ev.Source, ev.Upstream)
	}
	if e.EventType != ev.Type || e.Tenant != ev.Tenant {
		t.Errorf("entry type %q tenant %q, want %q %q", e.EventType, e.Tenant, ev.Type, ev.Tenant)
	}
	if !bytes.Equal(e.Payload, ev.Body) {
		t.Errorf("entry payload = %q, want %q", e.Payload, ev.Body)
	}
	if !headersEqual(e.Headers, ev.Headers) {
		t.Errorf("entry headers = %v, want %v", e.Headers, ev.Headers)
	}
	if e.Error != "upstream answered 422" || e.LastStatus != 422 {
		t.Errorf("entry error %q last_status %d, want %q 422", e.Error, e.LastStatus, "upstream answered 422")
	}
	attemptsEqual(t, "entry", e.Attempts, []storage.Attempt{*a1, *a2})
	if !e.ReceivedAt.Equal(ev.ReceivedAt) {
		t.Errorf("entry received_at %v, want %v", e.ReceivedAt, ev.ReceivedAt)
	}
	if e.Status != storage.DLQPending || e.Retries != 0 {
		t.Errorf("entry status %s retries %d, want pending 0", e.Status, e.Retries)
	}
	if e.CreatedAt.Before(before.Add(-tolerance)) || e.CreatedAt.After(after.Add(tolerance)) {
		t.Errorf("entry created_at %v, want between %v and %v", e.CreatedAt, before, after)
	}
	info := lookup(t, s, "stripe", "evt_dead")
	if info.Status != storage.StatusDead || info.ID != ev.ID || info.Tenant != ev.Tenant {
		t.Errorf("Lookup = %s %s tenant %q, want %s dead %q", info.ID, info.Status, info.Tenant, ev.ID, ev.Tenant)
	}
	wantCounts(t, s, storage.Counts{Dead: 1})
	if jobs := lease(t, s, base.Add(time.Hour), 10, time.Minute); len(jobs) != 0 {
		t.Errorf("dead job leased again: %v", jobIDs(jobs))
	}
	if _, ok, err := s.NextDue(t.Context(), nil); err != nil || ok {
		t.Errorf("NextDue with only a dead job: ok %v err %v", ok, err)
	}
}

func testDLQList(t *testing.T, f Factory) {
	s := f.Open(t)
	const n = 25
	evs := make([]*storage.Event, n)
	for i := range evs {
		src := "stripe"
		if i%3 == 0 {
			src = "github"
		}
		evs[i] = newEvent(t, src, "")
		mustEnqueue(t, s, evs[i], time.Now().Add(time.Hour))
	}
	jobs := lease(t, s, time.Now(), 2*n, time.Minute)
	if len(jobs) != n {
		t.Fatalf("leased %d jobs, want %d", len(jobs), n)
	}
	byID := map[string]*storage.Job{}
	for _, j := range jobs {
		byID[j.ID] = j
	}
	// dead-letter in an order unrelated to the ids, a little apart so that
	// creation times differ even at millisecond precision
	created := make([]*storage.Event, n)
	for i := range created {
		ev := evs[(i*7)%n]
		created[i] = ev
		finish(t, s, byID[ev.ID], storage.Outcome{Result: storage.Dead, Attempt: attempt(1, time.Now(), 500, ""), Error: fmt.Sprintf("error %d", i)})
		time.Sleep(2 * time.Millisecond)
	}
	for i := 1; i < n; i += 4 {
		if err := s.DLQSetStatus(t.Context(), created[i].ID, storage.DLQInvestigating, "", time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DLQSetStatus(t.Context(), created[2].ID, storage.DLQResolved, "replayed by hand", time.Now()); err != nil {
		t.Fatal(err)
	}
	// the model: entries as DLQGet reports them, newest first
	var newest []*storage.DLQEntry
	for i := n - 1; i >= 0; i-- {
		e := dlqGet(t, s, created[i].ID)
		if len(newest) > 0 && !e.CreatedAt.Before(newest[len(newest)-1].CreatedAt) {
			t.Fatalf("entry %d created at %v, not before entry %d at %v", i, e.CreatedAt, i+1, newest[len(newest)-1].CreatedAt)
		}
		newest = append(newest, e)
	}

	tests := []struct {
		name      string
		filter    storage.DLQFilter
		fullPages bool // every page but the last has Limit entries
	}{
		{"default limit", storage.DLQFilter{}, true},
		{"limit 10", storage.DLQFilter{Limit: 10}, true},
		{"limit 1", storage.DLQFilter{Limit: 1}, true},
		{"limit 25", storage.DLQFilter{Limit: 25}, true},
		{"source", storage.DLQFilter{Source: "github", Limit: 4}, false},
		{"status", storage.DLQFilter{Status: storage.DLQInvestigating, Limit: 2}, false},
		{"status pending and source", storage.DLQFilter{Status: storage.DLQPending, Source: "stripe", Limit: 3}, false},
		{"since", storage.DLQFilter{Since: newest[n-1-10].CreatedAt, Limit: 4}, false},
		{"since and source", storage.DLQFilter{Since: newest[n-1-10].CreatedAt, Source: "stripe", Limit: 5}, false},
		{"resolved", storage.DLQFilter{Status: storage.DLQResolved}, false},
		{"no match", storage.DLQFilter{Source: "nobody"}, false},
		{"type", storage.DLQFilter{Type: "stripe.type_1", Limit: 3}, false},
		{"until", storage.DLQFilter{Until: newest[n-1-10].CreatedAt, Limit: 4}, false},
		{"since and until", storage.DLQFilter{Since: newest[n-1-5].CreatedAt, Until: newest[n-1-15].CreatedAt, Limit: 3}, false},
		{"destination default", storage.DLQFilter{Destination: "default", Limit: 7}, false},
		{"another destination", storage.DLQFilter{Destination: "billing"}, false},
		{"type and status", storage.DLQFilter{Type: "github.type_0", Status: storage.DLQPending}, false},
		{"type of another source", storage.DLQFilter{Type: "github.type_0", Source: "stripe"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var want []string
			for _, e := range newest {
				if tc.filter.Matches(e) {
					want = append(want, e.ID)
				}
			}
			pages := listAll(t, s, tc.filter)
			var got []string
			for i, p := range pages {
				if tc.fullPages && i < len(pages)-1 && len(p.Entries) != tc.filter.EffectiveLimit() {
					t.Errorf("page %d has %d entries, want %d", i+1, len(p.Entries), tc.filter.EffectiveLimit())
				}
				for _, e := range p.Entries {
					got = append(got, e.ID)
					if !tc.filter.Matches(&e) {
						t.Errorf("entry %s (%s, %s, %v) does not match the filter", e.ID, e.Source, e.Status, e.CreatedAt)
					}
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("listed %d entries %v\nwant %d %v", len(got), got, len(want), want)
			}
			if tc.name == "limit 10" && len(pages) != 3 {
				t.Errorf("%d pages of 10 for 25 entries, want 3", len(pages))
			}
		})
	}

	t.Run("entry fields", func(t *testing.T) {
		p, err := s.DLQList(t.Context(), storage.DLQFilter{Limit: n})
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range p.Entries {
			m := newest[i]
			if e.ID != m.ID || e.Source != m.Source || e.EventID != m.EventID || e.EventType != m.EventType || e.Status != m.Status ||
				e.Error != m.Error || e.LastStatus != m.LastStatus || !e.CreatedAt.Equal(m.CreatedAt) {
				t.Errorf("listed entry %+v\ndiffers from DLQGet %+v", e, *m)
			}
		}
	})

	t.Run("invalid cursor", func(t *testing.T) {
		for _, c := range []string{"%%% not a cursor %%%", "\x00"} {
			if _, err := s.DLQList(t.Context(), storage.DLQFilter{Cursor: c}); !errors.Is(err, storage.ErrInvalidCursor) {
				t.Errorf("cursor %q: err = %v, want storage.ErrInvalidCursor", c, err)
			}
		}
	})
}

// testRequeueZeroDue: a DLQ retry and a replay given no due time (zero)
// are due now (storage.RequeueDue), not kept waiting: each is leased at
// once, and counted queued until then.
func testRequeueZeroDue(t *testing.T, f Factory) {
	s := f.Open(t)
	dead := newEvent(t, "stripe", "evt_zero_retry")
	mustEnqueue(t, s, dead, time.Now().Add(time.Hour))
	finish(t, s, leaseOne(t, s, time.Now(), time.Minute, dead.ID), storage.Outcome{Result: storage.Dead, Attempt: attempt(1, time.Now(), 400, "bad"), Error: "permanent"})
	done := newEvent(t, "stripe", "evt_zero_replay")
	deliver(t, s, done, 1)
	info := infoOf(t, s, done)

	if err := s.DLQRetry(t.Context(), dead.ID, time.Time{}); err != nil {
		t.Fatalf("DLQRetry with a zero due: %v", err)
	}
	if err := s.Replay(t.Context(), info, time.Time{}); err != nil {
		t.Fatalf("Replay with a zero due: %v", err)
	}
	wantCounts(t, s, storage.Counts{Queued: 2})
	jobs := lease(t, s, time.Now().Add(tolerance), 10, time.Minute)
	if got := jobIDs(jobs); !slices.Contains(got, dead.ID) || !slices.Contains(got, done.ID) || len(got) != 2 {
		t.Fatalf("leased %v at once, want the retried %s and the replayed %s", got, dead.ID, done.ID)
	}
	for _, j := range jobs {
		finish(t, s, j, storage.Outcome{Result: storage.Delivered, Attempt: attempt(2, time.Now(), 200, "")})
	}
	wantCounts(t, s, storage.Counts{})
}

func testDLQRetry(t *testing.T, f Factory) {
	s := f.Open(t)
	if err := s.DLQRetry(t.Context(), newID(t), time.Now()); !errors.Is(err, storage.ErrDLQNotFound) {
		t.Errorf("DLQRetry of an unknown id: err = %v, want storage.ErrDLQNotFound", err)
	}
	ev := newEvent(t, "stripe", "evt_retry")
	ev.Tenant = "acct_2" // the retried job keeps it (checkEvent)
	ev.Headers.Set("Stripe-Signature", "t=1,v1=abc")
	mustEnqueue(t, s, ev, time.Now().Add(time.Hour))
	a1 := attempt(1, time.Now(), 500, "boom")
	finish(t, s, leaseOne(t, s, time.Now(), time.Minute, ev.ID), storage.Outcome{Result: storage.Dead, Attempt: a1, Error: "permanent"})
	wantCounts(t, s, storage.Counts{Dead: 1})

	retryAt := time.Now().Add(time.Minute) // due then (a paced bulk retry)
	before := time.Now()
	if err := s.DLQRetry(t.Context(), ev.ID, retryAt); err != nil {
		t.Fatalf("DLQRetry: %v", err)
	}
	after := time.Now()
	e := dlqGet(t, s, ev.ID)
	if e.Status != storage.DLQRetried || e.Retries != 1 {
		t.Errorf("entry after DLQRetry: status %s retries %d, want retried 1", e.Status, e.Retries)
	}
	// updated_at is when the operator acted, not when the job is due
	if e.UpdatedAt.Before(before.Add(-tolerance)) || e.UpdatedAt.After(after.Add(tolerance)) {
		t.Errorf("entry updated_at %v, want the time of the call (%v to %v)", e.UpdatedAt, before, after)
	}
	wantCounts(t, s, storage.Counts{Queued: 1})
	if info := lookup(t, s, "stripe", "evt_retry"); info.Status != storage.StatusQueued {
		t.Errorf("Lookup after DLQRetry: %s, want queued", info.Status)
	}
	if err := s.DLQRetry(t.Context(), ev.ID, time.Now()); !errors.Is(err, storage.ErrConflict) {
		t.Errorf("second DLQRetry: err = %v, want storage.ErrConflict", err)
	}
	wantCounts(t, s, storage.Counts{Queued: 1})

	if jobs := lease(t, s, retryAt.Add(-10*time.Millisecond), 10, time.Minute); len(jobs) != 0 {
		t.Fatalf("retried job leased before the retry time")
	}
	j := leaseOne(t, s, retryAt, time.Minute, ev.ID)
	checkEvent(t, "retried job", j.Event, *ev)
	if j.RoundAttempts() != 0 {
		t.Errorf("retried job RoundAttempts = %d, want 0", j.RoundAttempts())
	}
	attemptsEqual(t, "retried job", j.Attempts, []storage.Attempt{*a1})

	// it dies again: the same entry is back to pending
	a2 := attempt(2, time.Now(), 410, "gone")
	finish(t, s, j, storage.Outcome{Result: storage.Dead, Attempt: a2, Error: "gone for good"})
	e = dlqGet(t, s, ev.ID)
	if e.Status != storage.DLQPending || e.Retries != 1 || e.Error != "gone for good" || e.LastStatus != 410 {
		t.Errorf("entry after dying again: status %s retries %d error %q last %d; want pending 1 %q 410", e.Status, e.Retries, e.Error, e.LastStatus, "gone for good")
	}
	attemptsEqual(t, "entry after dying again", e.Attempts, []storage.Attempt{*a1, *a2})
	if !bytes.Equal(e.Payload, ev.Body) || !headersEqual(e.Headers, ev.Headers) {
		t.Errorf("entry after dying again lost its payload or headers")
	}
	if pages := listAll(t, s, storage.DLQFilter{}); len(pages) != 1 || len(pages[0].Entries) != 1 {
		t.Errorf("DLQList after dying again: %d pages, want one entry", len(pages))
	}
	wantCounts(t, s, storage.Counts{Dead: 1})

	// a second operator retry works, and counts
	if err := s.DLQRetry(t.Context(), ev.ID, time.Now()); err != nil {
		t.Fatalf("DLQRetry of the pending entry: %v", err)
	}
	if e := dlqGet(t, s, ev.ID); e.Retries != 2 {
		t.Errorf("Retries = %d after the second retry, want 2", e.Retries)
	}
	j = leaseOne(t, s, time.Now(), time.Minute, ev.ID)
	if j.RoundAttempts() != 0 || len(j.Attempts) != 2 {
		t.Errorf("second retry: %d attempts (round %d), want 2 (0)", len(j.Attempts), j.RoundAttempts())
	}
	finish(t, s, j, storage.Outcome{Result: storage.Dead, Attempt: attempt(3, time.Now(), 500, ""), Error: "again"})

	// discarded entries cannot be retried
	if err := s.DLQSetStatus(t.Context(), ev.ID, storage.DLQDiscarded, "test event", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.DLQRetry(t.Context(), ev.ID, time.Now()); !errors.Is(err, storage.ErrConflict) {
		t.Errorf("DLQRetry of a discarded entry: err = %v, want storage.ErrConflict", err)
	}
	if e := dlqGet(t, s, ev.ID); e.Status != storage.DLQDiscarded {
		t.Errorf("discarded entry is %s after a refused retry", e.Status)
	}
	wantCounts(t, s, storage.Counts{})
	if jobs := lease(t, s, time.Now(), 10, time.Minute); len(jobs) != 0 {
		t.Errorf("discarded entry was re-enqueued: %v", jobIDs(jobs))
	}
}

func testDLQSetStatus(t *testing.T, f Factory) {
	s := f.Open(t)
	var evs []*storage.Event
	for range 2 {
		ev := newEvent(t, "stripe", "")
		mustEnqueue(t, s, ev, time.Now().Add(time.Hour))
		evs = append(evs, ev)
	}
	for _, j := range lease(t, s, time.Now(), 10, time.Minute) {
		finish(t, s, j, storage.Outcome{Result: storage.Dead, Attempt: attempt(1, time.Now(), 500, ""), Error: "dead"})
	}
	wantCounts(t, s, storage.Counts{Dead: 2})
	a, b := evs[0].ID, evs[1].ID

	steps := []struct {
		id         string
		status     storage.DLQStatus
		text       string
		resolution string
		reason     string
		dead       int
	}{
		{a, storage.DLQInvestigating, "", "", "", 2},
		{a, storage.DLQResolved, "upstream fixed, replayed manually", "upstream fixed, replayed manually", "", 1},
		{b, storage.DLQInvestigating, "", "", "", 1},
		{b, storage.DLQDiscarded, "test event from the dashboard", "", "test event from the dashboard", 0},
	}
	created := map[string]time.Time{a: dlqGet(t, s, a).CreatedAt, b: dlqGet(t, s, b).CreatedAt}
	for i, st := range steps {
		// operator times well apart from the dead-lettering time
		now := time.Now().Add(time.Duration(i+1) * time.Minute)
		if err := s.DLQSetStatus(t.Context(), st.id, st.status, st.text, now); err != nil {
			t.Fatalf("DLQSetStatus(%s): %v", st.status, err)
		}
		e := dlqGet(t, s, st.id)
		if e.Status != st.status || e.Resolution != st.resolution || e.Reason != st.reason {
			t.Errorf("after %s: status %s resolution %q reason %q; want %s %q %q", st.status, e.Status, e.Resolution, e.Reason, st.status, st.resolution, st.reason)
		}
		if !closeTo(e.UpdatedAt, now) || !e.CreatedAt.Equal(created[st.id]) {
			t.Errorf("after %s: created_at %v updated_at %v, want %v %v", st.status, e.CreatedAt, e.UpdatedAt, created[st.id], now)
		}
		if !bytes.Equal(e.Payload, evs[slices.IndexFunc(evs, func(ev *storage.Event) bool { return ev.ID == st.id })].Body) {
			t.Errorf("after %s: payload lost", st.status)
		}
		wantCounts(t, s, storage.Counts{Dead: st.dead})
	}
	if err := s.DLQSetStatus(t.Context(), newID(t), storage.DLQResolved, "x", time.Now()); !errors.Is(err, storage.ErrDLQNotFound) {
		t.Errorf("DLQSetStatus of an unknown id: err = %v, want storage.ErrDLQNotFound", err)
	}
	for _, bad := range []storage.DLQStatus{"bogus", storage.DLQRetried} {
		if err := s.DLQSetStatus(t.Context(), a, bad, "", time.Now()); err == nil {
			t.Errorf("DLQSetStatus(%q) succeeded", bad)
		}
	}
	if e := dlqGet(t, s, a); e.Status != storage.DLQResolved {
		t.Errorf("refused status changes moved the entry to %s", e.Status)
	}
}

// testDLQCounts counts entries by source and status.
func testDLQCounts(t *testing.T, f Factory) {
	s := f.Open(t)
	kill := func(source string) *storage.Event {
		ev := newEvent(t, source, "")
		ev.EventID, ev.Dedupe = ev.ID, false
		mustEnqueue(t, s, ev, time.Time{})
		finish(t, s, leaseOneOf(t, s, ev.ID), storage.Outcome{Result: storage.Dead, Attempt: attempt(1, time.Now(), 500, ""), Error: "x"})
		return ev
	}
	kill("stripe")
	kill("stripe")
	d := kill("github")
	if err := s.DLQSetStatus(t.Context(), d.ID, storage.DLQDiscarded, "noise", time.Now()); err != nil {
		t.Fatal(err)
	}
	got, err := s.DLQCounts(t.Context())
	want := map[string]map[storage.DLQStatus]int{"stripe": {storage.DLQPending: 2}, "github": {storage.DLQDiscarded: 1}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("DLQCounts = %v, %v; want %v", got, err, want)
	}
}
