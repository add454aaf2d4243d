package embedded

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

// sampleRecord is a record as a delivery's lease finds it: a shared
// payload (no body or headers of its own), queued, due now.
func sampleRecord(now time.Time) *record {
	return &record{Job: storage.Job{Event: storage.Event{ID: "019a8d1e-1f2b-7c3d-8e4f-5a6b7c8d9e0f", EventID: "evt_1Nabc123def456", Dedupe: true,
		Source: "stripe", Type: "invoice.paid", RequestID: "9f1c2d3e-aaaa-bbbb-cccc-1234567890ab", SharedPayload: true,
		Upstream: "http://127.0.0.1:9000/hooks", ReceivedAt: now}}, Status: storage.StatusQueued, Due: now}
}

func TestRecordCodec(t *testing.T) {
	// nanoseconds and a zone other than UTC: a due time names its index
	// key, so it must come back to the nanosecond
	now := time.Date(2026, 11, 24, 13, 4, 5, 123456789, time.FixedZone("X", 3600))
	full := sampleRecord(now)
	full.SharedPayload, full.Headers, full.Body = false, http.Header{"Stripe-Signature": {"t=1,v1=ab"}, "X-Two": {"a", "b"}}, []byte("{\"id\":\"evt\"}\x00\xff")
	full.Attempts = []storage.Attempt{{N: 1, At: now, Status: 503, Duration: 1500 * time.Microsecond, Error: "upstream answered 503"}, {N: 2, At: now.Add(time.Second)}}
	full.RoundStart, full.Lease, full.LeaseUntil = 1, "tok", now.Add(time.Minute)
	full.Destination, full.OrderKey, full.OrderSkip, full.Replay, full.Trace = "billing", "cus_1", true, true, "00-abc-def-01"
	sealed := sampleRecord(now)
	sealed.SharedPayload, sealed.Sealed = false, []byte{1, 2, 3}
	finished := sampleRecord(now)
	finished.Due, finished.Status, finished.FinishedAt = time.Time{}, storage.StatusDelivered, now.Add(time.Second)
	for _, tc := range []struct {
		name string
		rec  *record
	}{{"queued, shared payload", sampleRecord(now)}, {"every field", full}, {"sealed", sealed}, {"finished", finished}} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := encodeRecord(tc.rec)
			if err != nil {
				t.Fatal(err)
			}
			if v[0] == '{' {
				t.Fatalf("encoded record begins with '{': it would be read as JSON")
			}
			got, err := decodeRecord([]byte(tc.rec.ID), v)
			if err != nil {
				t.Fatal(err)
			}
			assertSameRecord(t, got, tc.rec)
			// a record an earlier version wrote as JSON reads the same
			j, err := json.Marshal(tc.rec)
			if err != nil {
				t.Fatal(err)
			}
			old, err := decodeRecord([]byte(tc.rec.ID), j)
			if err != nil {
				t.Fatal(err)
			}
			assertSameRecord(t, old, tc.rec)
		})
	}
	for _, bad := range [][]byte{[]byte("{not json"), []byte("\xa1\x62id"), {0xff}} {
		if _, err := decodeRecord([]byte("x"), bad); err == nil {
			t.Errorf("decodeRecord(%q) did not fail", bad)
		}
	}
}

// assertSameRecord compares records with their times as instants (a
// decoded time's zone is a fixed offset).
func assertSameRecord(t *testing.T, got, want *record) {
	t.Helper()
	for _, p := range []struct{ g, w time.Time }{{got.Due, want.Due}, {got.FinishedAt, want.FinishedAt},
		{got.ReceivedAt, want.ReceivedAt}, {got.LeaseUntil, want.LeaseUntil}} {
		if !p.g.Equal(p.w) || p.g.UnixNano() != p.w.UnixNano() {
			t.Fatalf("time %v, want %v", p.g, p.w)
		}
	}
	if len(got.Attempts) != len(want.Attempts) {
		t.Fatalf("attempts %+v, want %+v", got.Attempts, want.Attempts)
	}
	for i := range got.Attempts {
		if !got.Attempts[i].At.Equal(want.Attempts[i].At) {
			t.Fatalf("attempt %d at %v, want %v", i, got.Attempts[i].At, want.Attempts[i].At)
		}
		got.Attempts[i].At = want.Attempts[i].At
	}
	g, w := *got, *want
	g.Due, g.FinishedAt, g.ReceivedAt, g.LeaseUntil = w.Due, w.FinishedAt, w.ReceivedAt, w.LeaseUntil
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("decoded\n%+v\nwant\n%+v", g, w)
	}
}

// The codec's reason to be (codec.go): decoding a record at lease and
// encoding it at finish, CBOR against the JSON of earlier versions.
func BenchmarkRecordCodec(b *testing.B) {
	rec := sampleRecord(time.Now())
	j, _ := json.Marshal(rec)
	c, _ := encodeRecord(rec)
	b.Run("decode/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r record
			if err := json.Unmarshal(j, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode/cbor", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeRecord(nil, c); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(rec); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode/cbor", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := encodeRecord(rec); err != nil {
				b.Fatal(err)
			}
		}
	})
}
