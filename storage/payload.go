package storage

// Shared payloads. The deliveries of an event with several store its
// payload (body and headers) once: in a payload record keyed by the
// event's internal ID (PayloadID), which the backends keep beside the
// jobs and write in the same atomic step, encoded once (EncodePayload).
// The embedded store gives a lone delivery a payload record too
// (SharePayload's lone): it rewrites a job's whole record at each lease
// and finish, and without the body that record is a fraction of the size.
// The jobs themselves are stored without body and headers, marked
// SharedPayload (SharePayload). Whatever hands out a job or needs its body
// joins the payload back (JoinPayload): Lease, a Dead outcome's DLQ entry
// (which keeps its own copy, as any entry), a replay once leased, poison
// salvage. The payload record goes with the event's last job record (its
// deliveries index stays while a DLQ entry of the event does). A DLQ retry
// re-enqueues the entry's own copy (OwnPayload).
//
// On Redis a lone delivery keeps its payload in its own job hash (a field
// beside its JSON, written once) rather than in a record of its own: one
// key fewer an event; its job is marked SharedPayload all the same, and
// the lease joins the field back. Records written before shared payloads
// existed keep their own body and headers: a job not marked SharedPayload
// is read as it always was.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"slices"
)

// payloadFormat is the first byte of an encoded payload (EncodePayload).
const payloadFormat = 1

// ErrPayloadMissing is JoinPayload's error for a job marked SharedPayload
// whose event has no payload record (it cannot be delivered).
var ErrPayloadMissing = errors.New("the payload record of the event is missing")

// PayloadID is the key of the payload record a job with SharedPayload
// reads, from the job's ID: its event's internal ID (EventIDOfDelivery);
// also the ID a sealed payload is bound to, wherever the backend keeps it.
func PayloadID(jobID string) string { return EventIDOfDelivery(jobID) }

// SharePayload decides which of an event's jobs (DeliveriesOf's) share a
// payload record: those of an event with several deliveries, and a lone
// one too when lone is set. It strips them of their body and headers,
// marks them SharedPayload and returns the payload record to store under
// PayloadID (EncodePayload); a job left as it is has no record (nil). A
// sealed event's payload record is its sealed blob (seal.go), as it is.
func SharePayload(jobs []Event, lone bool) (payload []byte) {
	if len(jobs) == 0 || len(jobs) == 1 && !lone {
		return nil
	}
	if jobs[0].Sealed != nil {
		payload = jobs[0].Sealed
	} else {
		payload = EncodePayload(jobs[0].Headers, jobs[0].Body)
	}
	for i := range jobs {
		jobs[i].Body, jobs[i].Headers, jobs[i].Sealed = nil, nil, nil
		jobs[i].SharedPayload = true
	}
	return payload
}

// JoinPayload gives ev, a stored job marked SharedPayload, the body and
// headers of payload, its event's payload record (nil: none); a job not
// marked is left as it is (its own body, as before shared payloads). A
// marked job without a payload record gives ErrPayloadMissing; one that
// does not decode, its error. A sealed payload record (seal.go) becomes
// the job's Sealed, opened by whoever holds the keys.
func JoinPayload(ev *Event, payload []byte) error {
	if !ev.SharedPayload {
		return nil
	}
	if payload == nil {
		return fmt.Errorf("%w (job %s)", ErrPayloadMissing, ev.ID)
	}
	if IsSealed(payload) {
		ev.Sealed = slices.Clone(payload) // payload may be the backend's memory
		return nil
	}
	h, body, err := DecodePayload(payload)
	if err != nil {
		return fmt.Errorf("payload of job %s: %w", ev.ID, err)
	}
	ev.Headers, ev.Body = h, body
	return nil
}

// OwnPayload makes ev a job with its own body and headers (a DLQ retry's,
// from its entry's copy): no longer reading its event's payload record.
func OwnPayload(ev *Event, h http.Header, body []byte) {
	ev.Headers, ev.Body, ev.Sealed, ev.SharedPayload = h, body, nil, false
}

// OwnEntryPayload is OwnPayload with the copy of DLQ entry e, sealed or
// not: what a DLQ retry re-enqueues.
func OwnEntryPayload(ev *Event, e *DLQEntry) {
	OwnPayload(ev, e.Headers, e.Payload)
	ev.Sealed = e.Sealed
}

// EncodePayload is a payload record: the format byte, the headers (a
// uvarint count of names, then each name with a count of its values and
// the values, every string as a uvarint length and its bytes, names in
// sorted order), then the body's raw bytes to the end.
func EncodePayload(h http.Header, body []byte) []byte { return appendPayload(nil, 0, h, body) }

// appendPayload appends EncodePayload(h, body) to out, growing it to hold
// extra more bytes after it (a seal's tag: seal.go).
func appendPayload(out []byte, extra int, h http.Header, body []byte) []byte {
	size := 1 + binary.MaxVarintLen64 + len(body) + extra
	names := make([]string, 0, len(h))
	for name, vals := range h {
		names = append(names, name)
		size += 2*binary.MaxVarintLen64 + len(name)
		for _, v := range vals {
			size += binary.MaxVarintLen64 + len(v)
		}
	}
	slices.Sort(names)
	out = slices.Grow(out, size)
	out = append(out, payloadFormat)
	out = binary.AppendUvarint(out, uint64(len(names)))
	for _, name := range names {
		out = appendString(out, name)
		out = binary.AppendUvarint(out, uint64(len(h[name])))
		for _, v := range h[name] {
			out = appendString(out, v)
		}
	}
	return append(out, body...)
}

// DecodePayload reads a payload record (EncodePayload). No headers give
// nil headers and an empty body a nil body, as a job's JSON record does.
// The body is a copy: b may be reused.
func DecodePayload(b []byte) (http.Header, []byte, error) {
	if len(b) == 0 || b[0] != payloadFormat {
		return nil, nil, errors.New("unknown payload record format")
	}
	r := payloadReader{b: b[1:]}
	n := r.uvarint()
	var h http.Header
	if n > 0 && r.err == nil {
		h = make(http.Header, min(n, uint64(len(r.b))))
		for i := uint64(0); i < n && r.err == nil; i++ {
			name := r.string()
			k := r.uvarint()
			vals := make([]string, 0, min(k, uint64(len(r.b))))
			for j := uint64(0); j < k && r.err == nil; j++ {
				vals = append(vals, r.string())
			}
			h[name] = vals
		}
	}
	if r.err != nil {
		return nil, nil, r.err
	}
	var body []byte
	if len(r.b) > 0 {
		body = slices.Clone(r.b) // b may be the backend's memory
	}
	return h, body, nil
}

func appendString(out []byte, s string) []byte {
	out = binary.AppendUvarint(out, uint64(len(s)))
	return append(out, s...)
}

// payloadReader reads DecodePayload's fields; the first error sticks.
type payloadReader struct {
	b   []byte
	err error
}

var errPayloadTruncated = errors.New("truncated payload record")

func (r *payloadReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errPayloadTruncated
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *payloadReader) string() string {
	n := r.uvarint()
	if r.err != nil {
		return ""
	}
	if n > uint64(len(r.b)) {
		r.err = errPayloadTruncated
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}
