package storage

// The event browser: every stored event, not only dead ones, newest
// first, filtered by source, destination, type, status, time and id. The
// backends walk what they already keep (no index is written for it: the
// ingress path is untouched); the rules of a match are EventFilter.Matches,
// and each listed event is what Lookup reports of it (LookupEvent).

import (
	"context"
	"encoding/base64"
	"strings"
	"time"
)

// Limits of an event listing.
const (
	EventsDefaultLimit = 50
	EventsMaxLimit     = 500
	// EventsScanFactor bounds the work of one page: a backend examines at
	// most EventsScanFactor times the page's limit events before it
	// answers (with fewer items and a next cursor when a filter is narrow).
	EventsScanFactor = 20
)

// EventFilter selects events for ListEvents. Zero fields match
// everything.
type EventFilter struct {
	Source string
	// Destination selects the events with a delivery to that destination
	// ("" and "default" alike: the default destination; empty: all).
	Destination string
	Type        string // the event type, exactly
	// Tenant selects one tenant's events, exactly ("": any).
	Tenant string
	// Status is the event's status (AggregateStatus of its deliveries'),
	// or with Destination that destination's delivery's.
	Status Status
	Since  time.Time // received at or after
	Until  time.Time // received at or before (zero: no bound)
	// ID selects the events whose internal ID or provider event ID starts
	// with it (an exact ID is its own prefix).
	ID     string
	Limit  int    // 0 means EventsDefaultLimit; at most EventsMaxLimit
	Cursor string // opaque, from EventPage.NextCursor
}

// EventPage is one page of an event listing, newest first.
type EventPage struct {
	// Events are what Lookup reports of each listed event: a fan-out
	// event once, with each destination's delivery in Deliveries.
	Events []EventInfo `json:"items"`
	// NextCursor continues the listing ("": nothing older is left). A
	// page may hold fewer events than its limit and still have one: the
	// backend stopped after EventsScanFactor×limit events examined.
	NextCursor string `json:"next_cursor,omitempty"`
}

// Browser lists stored events (the operators' event browser).
type Browser interface {
	// ListEvents lists the stored events matching f, newest first (by
	// internal ID, which is time-ordered), at most f.EffectiveLimit() of
	// them, examining at most f.ScanBudget() events. Erased events are
	// not listed; an event whose records are past retention is listed
	// while one of its DLQ entries is kept. A cursor not made by
	// ListEvents is ErrInvalidCursor.
	ListEvents(ctx context.Context, f EventFilter) (EventPage, error)
}

// EffectiveLimit clamps the filter's limit to [1, EventsMaxLimit].
func (f EventFilter) EffectiveLimit() int {
	return clampLimit(f.Limit, EventsDefaultLimit, EventsMaxLimit)
}

// ScanBudget is how many events one page examines at most.
func (f EventFilter) ScanBudget() int { return f.EffectiveLimit() * EventsScanFactor }

// Valid reports whether st is one of the statuses an event can have.
func (st Status) Valid() bool {
	switch st {
	case StatusQueued, StatusInFlight, StatusDelivered, StatusDead:
		return true
	}
	return false
}

// Matches reports whether info, what Lookup reports of an event, passes
// the filter (cursor and limit aside).
func (f EventFilter) Matches(info *EventInfo) bool {
	if f.Source != "" && info.Source != f.Source {
		return false
	}
	if f.Type != "" && info.EventType != f.Type {
		return false
	}
	if f.Tenant != "" && info.Tenant != f.Tenant {
		return false
	}
	if f.ID != "" && !strings.HasPrefix(info.ID, f.ID) && !strings.HasPrefix(info.EventID, f.ID) {
		return false
	}
	if !f.Since.IsZero() && info.ReceivedAt.Before(f.Since) {
		return false
	}
	if !f.Until.IsZero() && info.ReceivedAt.After(f.Until) {
		return false
	}
	status := info.Status
	if f.Destination != "" {
		st, ok := DeliveryStatus(info, f.Destination)
		if !ok {
			return false
		}
		status = st
	}
	return f.Status == "" || status == f.Status
}

// DeliveryStatus is the status of info's delivery to destination (ok
// false when the event has none): an event reported alone (no
// Deliveries) has one delivery, to its Destination.
func DeliveryStatus(info *EventInfo, destination string) (Status, bool) {
	want := DestinationOf(&Event{Destination: destination})
	if len(info.Deliveries) == 0 {
		return info.Status, DestinationOf(&Event{Destination: info.Destination}) == want
	}
	for _, d := range info.Deliveries {
		if d.Destination == want {
			return d.Status, true
		}
	}
	return "", false
}

// EventCursor is the cursor continuing a listing after the event of
// internal ID id.
func EventCursor(id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(id))
}

// ParseEventCursor is the internal ID an EventCursor continues after (""
// for no cursor), or ErrInvalidCursor.
func ParseEventCursor(cursor string) (string, error) {
	if cursor == "" {
		return "", nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || len(raw) == 0 {
		return "", ErrInvalidCursor
	}
	return string(raw), nil
}
