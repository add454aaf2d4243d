package storage

import (
	"reflect"
	"testing"
	"time"
)

func TestEffectiveStatus(t *testing.T) {
	now := time.Unix(1_700_000_000, 500_000_000)
	for _, tc := range []struct {
		name       string
		stored     Status
		leaseUntil time.Time
		inDLQ      bool
		want       Status
	}{
		{"queued", StatusQueued, time.Time{}, false, StatusQueued},
		{"leased", StatusInFlight, now.Add(time.Millisecond), false, StatusInFlight},
		{"lease ends now: queued again", StatusInFlight, now, false, StatusQueued},
		{"lease ran out: queued again", StatusInFlight, now.Add(-time.Second), false, StatusQueued},
		{"leased without a lease end: queued again", StatusInFlight, time.Time{}, false, StatusQueued},
		{"delivered", StatusDelivered, time.Time{}, false, StatusDelivered},
		{"dead", StatusDead, time.Time{}, true, StatusDead},
		{"a record's status wins over the DLQ", StatusQueued, time.Time{}, true, StatusQueued},
		{"no record, a DLQ entry: dead", "", time.Time{}, true, StatusDead},
		{"no record, no entry: delivered", "", time.Time{}, false, StatusDelivered},
		{"no record: the lease does not matter", "", now.Add(time.Hour), false, StatusDelivered},
	} {
		if got := EffectiveStatus(tc.stored, tc.leaseUntil, tc.inDLQ, now); got != tc.want {
			t.Errorf("%s: EffectiveStatus = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestNewEventInfo(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	ev := &Event{ID: "id1", EventID: "evt_1", Source: "stripe", Upstream: "http://x", Body: []byte("b"), ReceivedAt: t0}
	attempts := []Attempt{{N: 1, At: t0, Status: 500}}
	due, fin := t0.Add(time.Minute), t0.Add(time.Hour)
	base := EventInfo{ID: "id1", EventID: "evt_1", Source: "stripe", ReceivedAt: t0, Attempts: attempts}
	for _, tc := range []struct {
		status   Status
		due, fin time.Time
		next     time.Time // expected NextAttempt
		finished time.Time
	}{
		{StatusQueued, due, time.Time{}, due, time.Time{}},
		{StatusInFlight, due, time.Time{}, time.Time{}, time.Time{}},
		{StatusDelivered, time.Time{}, fin, time.Time{}, fin},
		{StatusDead, time.Time{}, fin, time.Time{}, fin},
	} {
		want := base
		want.Status, want.NextAttempt, want.FinishedAt = tc.status, tc.next, tc.finished
		if got := NewEventInfo(ev, attempts, tc.status, tc.due, tc.fin); !reflect.DeepEqual(*got, want) {
			t.Errorf("%s: NewEventInfo = %+v, want %+v", tc.status, *got, want)
		}
	}
}

func TestDeadEventInfo(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	attempts := []Attempt{{N: 1, At: t0, Status: 500}}
	for _, tc := range []struct {
		name  string
		entry DLQEntry
		want  EventInfo
	}{
		{"pending entry", DLQEntry{ID: "id1", EventID: "evt_1", Source: "stripe", ReceivedAt: t0,
			CreatedAt: t0.Add(time.Hour), UpdatedAt: t0.Add(2 * time.Hour), Status: DLQPending, Attempts: attempts},
			EventInfo{ID: "id1", EventID: "evt_1", Source: "stripe", Status: StatusDead, ReceivedAt: t0,
				FinishedAt: t0.Add(time.Hour), Attempts: attempts}},
		// whatever the operator did with the entry, the event is dead
		{"resolved entry", DLQEntry{ID: "id2", EventID: "id2", Source: "github", ReceivedAt: t0,
			CreatedAt: t0, Status: DLQResolved},
			EventInfo{ID: "id2", EventID: "id2", Source: "github", Status: StatusDead, ReceivedAt: t0, FinishedAt: t0}},
	} {
		if got := DeadEventInfo(&tc.entry); !reflect.DeepEqual(*got, tc.want) {
			t.Errorf("%s: DeadEventInfo = %+v, want %+v", tc.name, *got, tc.want)
		}
	}
}
