package storage

import (
	"encoding/json"
	"fmt"
	"strings"
)

// A poison record is a stored job that cannot be decoded (a bug, a
// downgrade, a corrupted value). Leasing it would fail every time, so the
// backends move it to the DLQ instead, as a dead event whose DLQ entry says
// why, with whatever could be salvaged of it.

// PoisonReason starts the Error of the DLQ entry of a poison record.
const PoisonReason = "stored record could not be decoded"

// PoisonError is the DLQ entry error for a record that failed to decode
// with cause; raw tells that the entry's payload is the raw stored record
// (the event's own body could not be salvaged).
func PoisonError(cause error, raw bool) string {
	msg := fmt.Sprintf("%s: %v", PoisonReason, cause)
	if raw {
		msg += " (the payload is the raw stored record)"
	}
	return msg
}

// SalvageEvent decodes what it can of a stored event (or job) that does not
// decode as a whole, each field on its own: a field of the wrong type is
// left zero instead of losing the rest. ok is false when raw is not even
// a JSON object (nothing was salvaged).
func SalvageEvent(raw []byte) (ev Event, attempts []Attempt, ok bool) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil || fields == nil {
		return Event{}, nil, false
	}
	get := func(name string, into any) {
		if v, found := fields[name]; found {
			_ = json.Unmarshal(v, into)
		}
	}
	get("id", &ev.ID)
	get("event_id", &ev.EventID)
	get("dedupe", &ev.Dedupe)
	get("source", &ev.Source)
	get("type", &ev.Type)
	get("tenant", &ev.Tenant)
	get("request_id", &ev.RequestID)
	get("trace", &ev.Trace)
	get("upstream", &ev.Upstream)
	get("headers", &ev.Headers)
	get("body", &ev.Body)
	get("sealed", &ev.Sealed)
	get("received_at", &ev.ReceivedAt)
	get("attempts", &attempts)
	get("destination", &ev.Destination)
	get("replay", &ev.Replay)
	get("order_key", &ev.OrderKey)
	get("order_skip", &ev.OrderSkip)
	get("shared_payload", &ev.SharedPayload)
	return ev, attempts, true
}

// PoisonEvent is the event to dead-letter for the stored record raw of
// job id that cannot be decoded: what SalvageEvent reads of it, with id as
// its ID and as its event id when none was salvaged (an event found by its
// internal id, as those without a provider id), and the destination its id
// names when none was salvaged (DeliveryID). When the event itself
// could not be salvaged (no upstream: a real event always has one), its
// payload is raw and rawPayload is true (see PoisonError). The backend
// fills in what it knows otherwise (the source, from the job's lane), and
// joins the payload record of a job marked SharedPayload (JoinPayload).
func PoisonEvent(id string, raw []byte) (ev Event, attempts []Attempt, rawPayload bool) {
	ev, attempts, ok := SalvageEvent(raw)
	rawPayload = !ok || ev.Upstream == ""
	ev.ID = id
	if ev.EventID == "" {
		ev.EventID = id
	}
	if _, dest, found := strings.Cut(id, deliverySep); found && ev.Destination == "" {
		ev.Destination = dest // a delivery's id names its destination (DeliveryID)
	}
	if rawPayload {
		OwnPayload(&ev, nil, raw)
	}
	return ev, attempts, rawPayload
}
