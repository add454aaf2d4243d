package storage

// Destinations (fan-out). One accepted event becomes one delivery per
// destination that takes it, each a job of its own (attempts, retries, DLQ
// entry, status), all stored by Enqueue in the same atomic step as the
// claim. The rules are the functions below; the backends only persist.
//
// A delivery's job is a full copy of the event with its Destination and
// Upstream set and its ID the delivery's (DeliveryID): the default
// destination's delivery keeps the event's own ID, so that events of a
// single destination are stored, found and dead-lettered exactly as before
// destinations existed (records without a destination are the default's).

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
// Destination, Upstream and ID (DeliveryID); without Deliveries, ev itself
// as its one delivery (ID DeliveryID(ev.ID, ev.Destination)). The event's
// destinations are recorded in every copy (Destinations) when there is more
// than one delivery or a non-default one, so that Lookup finds them all.
// The body and headers are shared by the copies.
func DeliveriesOf(ev *Event) []Event {
	ds := ev.Deliveries
	if len(ds) == 0 {
		ds = []Delivery{{Destination: ev.Destination, Upstream: ev.Upstream}}
	}
	var names []string
	if len(ds) > 1 || !IsDefaultDestination(ds[0].Destination) {
		names = make([]string, len(ds))
		for i, d := range ds {
			names[i] = destinationName(d.Destination)
		}
	}
	out := make([]Event, len(ds))
	for i, d := range ds {
		out[i] = *ev
		out[i].Deliveries = nil
		out[i].Destination = destinationName(d.Destination)
		out[i].Upstream = d.Upstream
		out[i].ID = DeliveryID(ev.ID, d.Destination)
		out[i].Destinations = names
	}
	return out
}

// destinationName is the stored destination of a delivery: "" for the
// default (so that its record is as before destinations existed).
func destinationName(name string) string {
	if IsDefaultDestination(name) {
		return ""
	}
	return name
}

// DestinationsOf lists the destinations of the event a stored job belongs
// to: those recorded in it, or only its own (a record of one delivery).
func DestinationsOf(ev *Event) []string {
	if len(ev.Destinations) > 0 {
		return ev.Destinations
	}
	return []string{ev.Destination}
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

// CombineEventInfo is what Lookup reports of an event from what it reports
// of each of its deliveries (their infos, in the event's destination
// order): one default delivery's info as is (as before destinations
// existed); otherwise for several, its ID and the first's event fields,
// the aggregate status (AggregateStatus), the earliest next attempt of the
// queued ones, the latest finish once all are finished, every attempt, and
// each delivery in Deliveries.
func CombineEventInfo(eventID string, infos []*EventInfo, destinations []string) *EventInfo {
	if len(infos) == 1 && IsDefaultDestination(destinations[0]) {
		return infos[0]
	}
	out := *infos[0]
	out.ID, out.Attempts, out.NextAttempt, out.FinishedAt = eventID, nil, time.Time{}, time.Time{}
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
			Destination: DestinationOf(&Event{Destination: destinations[i]}), ID: in.ID, Status: in.Status,
			Attempts: in.Attempts, NextAttempt: in.NextAttempt, FinishedAt: in.FinishedAt,
		})
	}
	out.Status = AggregateStatus(sts...)
	if !finished {
		out.FinishedAt = time.Time{}
	}
	if out.Attempts == nil {
		out.Attempts = []Attempt{}
	}
	return &out
}
