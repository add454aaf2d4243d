package storage

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"testing"
)

// A payload record round-trips to what a job's own JSON record would give.
func TestPayloadRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name    string
		headers http.Header
		body    []byte
	}{
		{"empty", nil, nil},
		{"body only", nil, []byte(`{"a":1}`)},
		{"headers only", http.Header{"Content-Type": {"application/json"}}, nil},
		{"multi-valued and empty values", http.Header{"X-Multi": {"one", "two", ""}, "X-Empty": {""}, "Content-Type": {"application/json"}}, []byte("x")},
		{"binary body", http.Header{"A": {"\x00é"}}, []byte{0, 1, 2, 0xff, '\n', 0}},
		{"large body", http.Header{"A": {"b"}}, bytes.Repeat([]byte("0123456789"), 10000)},
		{"empty non-nil", http.Header{}, []byte{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, body, err := DecodePayload(EncodePayload(tc.headers, tc.body))
			if err != nil {
				t.Fatal(err)
			}
			// what a job's own JSON record gives back
			var want Event
			b, _ := json.Marshal(Event{Headers: tc.headers, Body: tc.body})
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(h, want.Headers) || !reflect.DeepEqual(body, want.Body) {
				t.Errorf("round trip = %#v %q, want %#v %q", h, body, want.Headers, want.Body)
			}
		})
	}
	// header bytes that are not UTF-8 (obs-text) are kept as they are
	h, _, err := DecodePayload(EncodePayload(http.Header{"A": {"\x80\xff"}}, nil))
	if err != nil || h.Get("A") != "\x80\xff" {
		t.Errorf("obs-text header = %q, %v", h.Get("A"), err)
	}
	// deterministic, whatever the map order
	h = http.Header{"B": {"2"}, "A": {"1"}, "C": {"3"}}
	if a, b := EncodePayload(h, []byte("x")), EncodePayload(h.Clone(), []byte("x")); !bytes.Equal(a, b) {
		t.Error("EncodePayload is not deterministic")
	}
}

// A payload record cut short or of another format is an error, never a
// panic or a wrong payload.
func TestDecodePayloadBroken(t *testing.T) {
	full := EncodePayload(http.Header{"Content-Type": {"application/json"}, "X-A": {"1", "2"}}, []byte("body"))
	headerEnd := len(full) - len("body")
	for n := range headerEnd {
		if _, _, err := DecodePayload(full[:n]); err == nil {
			t.Errorf("DecodePayload of %d of %d bytes: no error", n, len(full))
		}
	}
	if _, _, err := DecodePayload(append([]byte{9}, full[1:]...)); err == nil {
		t.Error("DecodePayload of an unknown format: no error")
	}
	huge := []byte{payloadFormat, 1, 0xff, 0xff, 0xff, 0xff, 0x0f}
	if _, _, err := DecodePayload(huge); err == nil {
		t.Error("DecodePayload of a name longer than the record: no error")
	}
}

// SharePayload: one job is left as it is; several share one record and
// JoinPayload gives each back its body and headers; a job not marked (a
// record written before payload records) keeps its own.
func TestSharePayload(t *testing.T) {
	ev := &Event{ID: "e1", Source: "s", Upstream: "http://u/", Headers: http.Header{"X": {"1"}}, Body: []byte("body")}
	for _, tc := range []struct {
		name       string
		deliveries []Delivery
		lone       bool // SharePayload's lone
		shared     bool
	}{
		{"default alone", nil, false, false},
		{"one destination", []Delivery{{Destination: "crm", Upstream: "http://crm/"}}, false, false},
		{"three", []Delivery{{Destination: "default", Upstream: "http://u/"}, {Destination: "crm", Upstream: "http://crm/"}, {Destination: "b", Upstream: "http://b/"}}, false, true},
		{"default alone, lone shared", nil, true, true},
		{"one destination, lone shared", []Delivery{{Destination: "crm", Upstream: "http://crm/"}}, true, true},
		{"three, lone shared", []Delivery{{Destination: "default", Upstream: "http://u/"}, {Destination: "crm", Upstream: "http://crm/"}, {Destination: "b", Upstream: "http://b/"}}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := *ev
			e.Deliveries = tc.deliveries
			jobs, _, err := DeliveriesOf(&e)
			if err != nil {
				t.Fatal(err)
			}
			payload := SharePayload(jobs, tc.lone)
			if (payload != nil) != tc.shared {
				t.Fatalf("payload record %v, want one: %v", payload != nil, tc.shared)
			}
			for i := range jobs {
				j := jobs[i]
				if j.SharedPayload != tc.shared || tc.shared && (j.Body != nil || j.Headers != nil) {
					t.Errorf("job %s: shared %v, body %q, headers %v", j.ID, j.SharedPayload, j.Body, j.Headers)
				}
				// through the stored JSON, as a backend reads it back
				b, _ := json.Marshal(j)
				var stored Event
				if err := json.Unmarshal(b, &stored); err != nil {
					t.Fatal(err)
				}
				if err := JoinPayload(&stored, payload); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(stored.Body, ev.Body) || !reflect.DeepEqual(stored.Headers, ev.Headers) || PayloadID(j.ID) != ev.ID {
					t.Errorf("job %s joined: body %q headers %v, payload id %s", j.ID, stored.Body, stored.Headers, PayloadID(j.ID))
				}
			}
		})
	}
	// a marked job whose record is missing cannot be delivered
	if err := JoinPayload(&Event{ID: "e1~crm", SharedPayload: true}, nil); !errors.Is(err, ErrPayloadMissing) {
		t.Errorf("JoinPayload without a record: %v, want ErrPayloadMissing", err)
	}
	// a DLQ retry's job has its own payload again
	j := Event{ID: "e1~crm", SharedPayload: true}
	OwnPayload(&j, ev.Headers, ev.Body)
	if j.SharedPayload || !bytes.Equal(j.Body, ev.Body) {
		t.Errorf("OwnPayload: %+v", j)
	}
	if err := JoinPayload(&j, []byte("not a record")); err != nil || !bytes.Equal(j.Body, ev.Body) {
		t.Errorf("JoinPayload of a job with its own payload: %v, body %q", err, j.Body)
	}
}

// A poison record of a job sharing its payload keeps the mark, so that the
// backend joins the record to its DLQ entry; a raw payload drops it.
func TestPoisonEventSharedPayload(t *testing.T) {
	ev, _, raw := PoisonEvent("e1~crm", []byte(`{"id":"e1~crm","upstream":"http://u/","shared_payload":true,"attempts":"bad"}`))
	if raw || !ev.SharedPayload {
		t.Errorf("salvaged shared job: raw %v shared %v", raw, ev.SharedPayload)
	}
	ev, _, raw = PoisonEvent("e1~crm", []byte(`{"shared_payload":true}`))
	if !raw || ev.SharedPayload {
		t.Errorf("raw payload: raw %v shared %v", raw, ev.SharedPayload)
	}
}
