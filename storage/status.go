package storage

import (
	"time"
)

// EffectiveStatus is an event's status as reported at now (duplicate
// answers, Lookup, per-lane counts) from what a backend stores: stored is
// the status of its record ("" when there is no record any more),
// leaseUntil the end of its lease, inDLQ whether a DLQ entry exists for
// it (only looked at when there is no record).
//
// A leased job whose lease ran out is queued again (it waits for
// redelivery). Only finished records are removed: an event without a
// record is dead if a DLQ entry is left, delivered otherwise.
func EffectiveStatus(stored Status, leaseUntil time.Time, inDLQ bool, now time.Time) Status {
	switch {
	case stored == "" && inDLQ:
		return StatusDead
	case stored == "":
		return StatusDelivered
	case stored == StatusInFlight && !leaseUntil.After(now):
		return StatusQueued
	}
	return stored
}

// NewEventInfo is what Lookup reports of a stored event whose effective
// status is status: a queued event's next attempt is when it is due.
func NewEventInfo(ev *Event, attempts []Attempt, status Status, due, finishedAt time.Time) *EventInfo {
	info := &EventInfo{
		ID: ev.ID, EventID: ev.EventID, Source: ev.Source, Destination: ev.Destination, EventType: ev.Type, Tenant: ev.Tenant, RequestID: ev.RequestID, Status: status,
		ReceivedAt: ev.ReceivedAt, FinishedAt: finishedAt, Attempts: attempts,
	}
	if status == StatusQueued {
		info.NextAttempt = due
	}
	return info
}

// DeadEventInfo is what Lookup reports of an event known only by its DLQ
// entry (its record is past retention): dead since the entry was created.
func DeadEventInfo(e *DLQEntry) *EventInfo {
	return &EventInfo{
		ID: e.ID, EventID: e.EventID, Source: e.Source, Destination: e.Destination, EventType: e.EventType, Tenant: e.Tenant, RequestID: e.RequestID, Status: StatusDead,
		ReceivedAt: e.ReceivedAt, FinishedAt: e.CreatedAt, Attempts: e.Attempts,
	}
}
