package storage

// Destinations (fan-out). One accepted event becomes one delivery per
// destination that takes it, each a job of its own (attempts, retries, DLQ
// entry, status), all stored by Enqueue in the same atomic step as the
// claim. The rules are the functions below; the backends only persist.
//
// A delivery's job is a copy of the event with its Destination and
// Upstream set and its ID the delivery's (DeliveryID): the default
// destination's delivery keeps the event's own ID, so that events of a
// single destination are stored, found and dead-lettered exactly as before
// destinations existed (records without a destination are the default's).
// The deliveries of an event with several share one stored copy of its body
// and headers (SharePayload, payload.go).

import (
	"fmt"
	"strings"
	"time"
)

// DefaultDestination is the destination of forward_to, and of every
// record written before destinations existed.
const DefaultDestination = "default"

// deliverySep separates an event's ID from a destination's name in a
// delivery's ID (no destination name holds it).
const deliverySep = "~"

// Delivery asks Enqueue for one delivery of an event.
type Delivery struct {
	// Destination is the destination's name ("" is DefaultDestination).
	Destination string
	// Upstream is the URL the delivery is sent to.
	Upstream string
	// OrderKey is the key the destination's ordered rule found in the
	// event ("": the destination is not ordered). Every ordered delivery
	// of one event carries the same key (OrderKeyOf).
	OrderKey string
	// OrderSkip is the ordered destination's on_dead skip: a dead delivery
	// lets the next one of its key go instead of blocking it.
	OrderSkip bool
}

// IsDefaultDestination reports whether name is the default destination
// ("" or "default").
func IsDefaultDestination(name string) bool { return name == "" || name == DefaultDestination }

// ValidDestination checks a destination name: letters, digits, '.', '_'
// and '-', not empty.
func ValidDestination(name string) error {
	if name == "" {
		return fmt.Errorf("empty destination name")
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("destination name %q: only letters, digits, '.', '_' and '-' are allowed", name)
		}
	}
	return nil
}

// DeliveryID is the ID of the job (and of the DLQ entry) delivering event
// eventID (its internal ID) to destination: eventID itself for the default
// destination, eventID~destination otherwise.
func DeliveryID(eventID, destination string) string {
	if IsDefaultDestination(destination) {
		return eventID
	}
	return eventID + deliverySep + destination
}

// EventIDOfDelivery is the internal ID of the event a delivery's job ID
// belongs to (DeliveryID's inverse).
func EventIDOfDelivery(id string) string {
	ev, _, _ := strings.Cut(id, deliverySep)
	return ev
}

// DestinationOfDelivery is the name of the destination of the delivery
// whose job ID is id (DeliveryID's other inverse): DefaultDestination for
// an event's default delivery.
func DestinationOfDelivery(id string) string {
	if _, d, ok := strings.Cut(id, deliverySep); ok {
		return d
	}
	return DefaultDestination
}

// DestinationOf is the name of a job's destination ("" is reported as
// DefaultDestination).
func DestinationOf(ev *Event) string {
	if IsDefaultDestination(ev.Destination) {
		return DefaultDestination
	}
	return ev.Destination
}

// DeliveriesOf is what Enqueue stores for ev: one job's event per delivery
// ev.Deliveries lists, each a copy of ev (Deliveries cleared) with its
// Destination, Upstream, OrderKey, OrderSkip and ID (DeliveryID); without
// Deliveries, ev itself
// as its one delivery (ID DeliveryID(ev.ID, ev.Destination)). The body and
// headers are shared by the copies (and stored once: SharePayload). destinations lists the event's
// destinations for its deliveries index (EncodeDestinations), which the
// backends keep by event ID beside the jobs so that Lookup finds them all:
// nil for an event whose one delivery is the default's, stored as before
// destinations existed, without an index. A destination name that is not
// valid (ValidDestination) or listed twice, or deliveries carrying two
// different order keys (OrderKeyOf), is an error: nothing is stored.
func DeliveriesOf(ev *Event) (jobs []Event, destinations []string, err error) {
	ds := ev.Deliveries
	if len(ds) == 0 {
		ds = []Delivery{{Destination: ev.Destination, Upstream: ev.Upstream, OrderKey: ev.OrderKey, OrderSkip: ev.OrderSkip}}
	}
	if _, err := OrderKeyOf(ev); err != nil {
		return nil, nil, err
	}
	if len(ds) > 1 || !IsDefaultDestination(ds[0].Destination) {
		destinations = make([]string, len(ds))
	}
	jobs = make([]Event, len(ds))
	for i, d := range ds {
		if !IsDefaultDestination(d.Destination) {
			if err := ValidDestination(d.Destination); err != nil {
				return nil, nil, err
			}
		}
		for _, earlier := range ds[:i] {
			if DestinationOf(&Event{Destination: earlier.Destination}) == DestinationOf(&Event{Destination: d.Destination}) {
				return nil, nil, fmt.Errorf("destination %q listed twice", DestinationOf(&Event{Destination: d.Destination}))
			}
		}
		jobs[i] = *ev
		jobs[i].Deliveries = nil
		jobs[i].Destination = destinationName(d.Destination)
		jobs[i].Upstream = d.Upstream
		jobs[i].OrderKey, jobs[i].OrderSkip = d.OrderKey, d.OrderSkip
		jobs[i].ID = DeliveryID(ev.ID, d.Destination)
		if destinations != nil {
			destinations[i] = DestinationOf(&jobs[i])
		}
	}
	return jobs, destinations, nil
}

// destinationName is the stored destination of a delivery: "" for the
// default (so that its record is as before destinations existed).
func destinationName(name string) string {
	if IsDefaultDestination(name) {
		return ""
	}
	return name
}

// EncodeDestinations is an event's deliveries index as the backends store
// it: its destinations, comma-separated (no name holds a comma).
func EncodeDestinations(destinations []string) string { return strings.Join(destinations, ",") }

// DecodeDestinations reads a deliveries index (nil for "": no index).
func DecodeDestinations(v string) []string {
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// DeliveryInfo is what Lookup reports of one delivery of an event with
// several (EventInfo.Deliveries).
type DeliveryInfo struct {
	// Destination is the destination's name.
	Destination string `json:"destination"`
	// ID is the delivery's job ID (and DLQ entry ID): DeliveryID.
	ID string `json:"id"`
	// Status is the delivery's own status.
	Status Status `json:"status"`
	// Attempts is the delivery's attempt history.
	Attempts []Attempt `json:"attempts"`
	// NextAttempt is when a queued delivery is due.
	NextAttempt time.Time `json:"next_attempt_at,omitzero"`
	// FinishedAt is when the delivery was delivered or dead-lettered.
	FinishedAt time.Time `json:"finished_at,omitzero"`
}

// AggregateStatus is the status of an event from its deliveries': dead if
// any is, else in flight if any is, else queued if any is, else delivered
// (every delivery done).
func AggregateStatus(sts ...Status) Status {
	for _, want := range []Status{StatusDead, StatusInFlight, StatusQueued} {
		for _, st := range sts {
			if st == want {
				return want
			}
		}
	}
	return StatusDelivered
}

// GoneDeliveryInfo is what Lookup reports of a delivery of event info
// whose record and DLQ entry are both gone (past retention): delivered.
func GoneDeliveryInfo(id, destination string) *EventInfo {
	return &EventInfo{ID: id, Destination: destinationName(destination), Status: EffectiveStatus("", time.Time{}, false, time.Time{})}
}

// CombineEventInfo is what Lookup reports of event eventID from what it
// reports of each of its deliveries (in the order of its deliveries
// index): a default delivery alone as is (as before destinations existed);
// otherwise its ID and the event fields of the first delivery that has
// them, the aggregate status (AggregateStatus), the earliest next attempt
// of the queued ones, the latest finish once all are finished, every
// attempt, and each delivery in Deliveries.
func CombineEventInfo(eventID string, infos []*EventInfo) *EventInfo {
	if len(infos) == 1 && IsDefaultDestination(infos[0].Destination) {
		return infos[0]
	}
	out := *infos[0]
	for _, in := range infos {
		if in.Source != "" {
			out = *in
			break
		}
	}
	out.ID, out.Destination, out.Attempts, out.NextAttempt, out.FinishedAt = eventID, "", []Attempt{}, time.Time{}, time.Time{}
	sts := make([]Status, len(infos))
	finished := true
	for i, in := range infos {
		finished = finished && (in.Status == StatusDelivered || in.Status == StatusDead)
		sts[i] = in.Status
		out.Attempts = append(out.Attempts, in.Attempts...)
		if !in.NextAttempt.IsZero() && (out.NextAttempt.IsZero() || in.NextAttempt.Before(out.NextAttempt)) {
			out.NextAttempt = in.NextAttempt
		}
		if in.FinishedAt.After(out.FinishedAt) {
			out.FinishedAt = in.FinishedAt
		}
		out.Deliveries = append(out.Deliveries, DeliveryInfo{
			Destination: DestinationOf(&Event{Destination: in.Destination}), ID: in.ID, Status: in.Status,
			Attempts: in.Attempts, NextAttempt: in.NextAttempt, FinishedAt: in.FinishedAt,
		})
	}
	out.Status = AggregateStatus(sts...)
	if !finished {
		out.FinishedAt = time.Time{}
	}
	return &out
}

// LookupEvent is Lookup's answer for event eventID whose deliveries index
// lists destinations (nil: none, its one delivery is the default's), given
// one, what the backend knows of one delivery by its ID (nil: neither its
// record nor its DLQ entry is left). Nothing known of any delivery gives
// ErrNotFound.
func LookupEvent(eventID string, destinations []string, one func(id string) (*EventInfo, error)) (*EventInfo, error) {
	if destinations == nil {
		destinations = []string{DefaultDestination}
	}
	infos := make([]*EventInfo, len(destinations))
	found := false
	for i, d := range destinations {
		id := DeliveryID(eventID, d)
		info, err := one(id)
		if err != nil {
			return nil, err
		}
		if info == nil {
			info = GoneDeliveryInfo(id, d)
		} else {
			found = true
		}
		infos[i] = info
	}
	if !found {
		return nil, ErrNotFound
	}
	return CombineEventInfo(eventID, infos), nil
}

// EventStatus is the status of event eventID, for a duplicate's answer,
// from its deliveries index (nil: its one delivery is the default's) and
// one, the status of one delivery by its ID (EffectiveStatus).
func EventStatus(eventID string, destinations []string, one func(id string) (Status, error)) (Status, error) {
	if destinations == nil {
		return one(eventID)
	}
	sts := make([]Status, len(destinations))
	for i, d := range destinations {
		st, err := one(DeliveryID(eventID, d))
		if err != nil {
			return "", err
		}
		sts[i] = st
	}
	return AggregateStatus(sts...), nil
}
