package storage

import (
	"errors"
	"net/http"
	"reflect"
	"testing"
	"time"
)

func TestNewDLQEntry(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	now := t0.Add(time.Hour)
	job := &Job{
		Event: Event{ID: "id1", EventID: "evt_1", Dedupe: true, Source: "stripe", Type: "invoice.paid", RequestID: "req-1", Upstream: "http://up/",
			Headers: http.Header{"X-A": {"1"}}, Body: []byte(`{"n":1}`), ReceivedAt: t0},
		RoundStart: 1, Lease: "tok", LeaseUntil: now,
	}
	a1 := Attempt{N: 1, At: t0, Status: 503}
	a2 := Attempt{N: 2, At: t0.Add(time.Minute), Error: "timeout"} // no response
	a3 := Attempt{N: 3, At: t0.Add(2 * time.Minute), Status: 410}
	want := func(attempts []Attempt, last, retries int) *DLQEntry {
		return &DLQEntry{ID: "id1", EventID: "evt_1", Source: "stripe", EventType: "invoice.paid", RequestID: "req-1", Upstream: "http://up/",
			Payload: []byte(`{"n":1}`), Headers: http.Header{"X-A": {"1"}}, Error: "gone",
			LastStatus: last, Attempts: attempts, ReceivedAt: t0, CreatedAt: now, UpdatedAt: now,
			Status: DLQPending, Retries: retries}
	}
	for _, tc := range []struct {
		name     string
		attempts []Attempt
		earlier  *DLQEntry
		want     *DLQEntry
	}{
		{"first death", []Attempt{a1, a3}, nil, want([]Attempt{a1, a3}, 410, 0)},
		{"last attempt without a response", []Attempt{a1, a2}, nil, want([]Attempt{a1, a2}, 0, 0)},
		{"no attempt (dead without trying)", nil, nil, want(nil, 0, 0)},
		// dead again after an operator retry: the retry count is carried
		// over, nothing else of the earlier entry
		{"dead again after retries", []Attempt{a1, a2, a3},
			&DLQEntry{ID: "id1", Status: DLQRetried, Retries: 2, CreatedAt: t0, Resolution: "r", Reason: "x", Error: "old"},
			want([]Attempt{a1, a2, a3}, 410, 2)},
	} {
		got := NewDLQEntry(job, tc.attempts, "gone", now, tc.earlier)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

func TestCheckRetryEvent(t *testing.T) {
	for _, tc := range []struct {
		st   Status
		want bool
	}{
		{"", true}, // the record is gone (past retention)
		{StatusDead, true},
		{StatusQueued, false},
		{StatusInFlight, false},
		{StatusDelivered, false},
	} {
		err := CheckRetryEvent(tc.st)
		if (err == nil) != tc.want || (err != nil && !errors.Is(err, ErrConflict)) {
			t.Errorf("CheckRetryEvent(%q) = %v, want allowed %v", tc.st, err, tc.want)
		}
	}
}

func TestEventOfEntry(t *testing.T) {
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		e          DLQEntry
		wantDedupe bool
	}{
		{"provider id", DLQEntry{ID: "01a", EventID: "evt_1"}, true},
		{"no provider id: the internal id stands in", DLQEntry{ID: "01a", EventID: "01a"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.e
			e.Source, e.Upstream, e.Payload, e.ReceivedAt = "stripe", "http://127.0.0.1:1/", []byte("{}"), at
			e.EventType, e.RequestID = "invoice.paid", "req-1"
			e.Headers = map[string][]string{"X-A": {"1"}}
			ev := EventOfEntry(&e)
			if ev.ID != e.ID || ev.EventID != e.EventID || ev.Dedupe != tc.wantDedupe || ev.Source != "stripe" ||
				ev.Type != "invoice.paid" || ev.RequestID != "req-1" ||
				ev.Upstream != e.Upstream || string(ev.Body) != "{}" || ev.Headers.Get("X-A") != "1" || !ev.ReceivedAt.Equal(at) {
				t.Fatalf("EventOfEntry = %+v, want the entry's event with Dedupe %v", ev, tc.wantDedupe)
			}
		})
	}
}

// TestRetryEvent: a retry re-enqueues the stored record's event with the
// entry's copy of the payload, out of any replay lane, keeping what the
// record alone holds; without a record, the entry's event.
func TestRetryEvent(t *testing.T) {
	e := &DLQEntry{ID: "01a", EventID: "evt_1", Source: "shop", Tenant: "b.myshopify.com",
		Payload: []byte(`{"entry":1}`), Headers: map[string][]string{"X-A": {"entry"}}}
	stored := &Event{ID: "01a", EventID: "evt_1", Dedupe: true, Source: "shop", Tenant: "b.myshopify.com",
		Trace: "00-abc-def-01", Apart: true, Replay: true, SharedPayload: true}
	ev := RetryEvent(stored, e)
	if !ev.Apart || ev.Trace != stored.Trace || !ev.Dedupe || ev.Replay || ev.SharedPayload ||
		string(ev.Body) != `{"entry":1}` || ev.Headers.Get("X-A") != "entry" {
		t.Errorf("RetryEvent of a stored record = %+v", ev)
	}
	if !stored.Replay || !stored.SharedPayload || stored.Body != nil {
		t.Errorf("RetryEvent changed the stored record: %+v", stored)
	}
	gone := RetryEvent(nil, e)
	if gone.Apart || gone.Trace != "" || gone.ID != "01a" || !gone.Dedupe || string(gone.Body) != `{"entry":1}` {
		t.Errorf("RetryEvent without a record = %+v, want the entry's event", gone)
	}
}
