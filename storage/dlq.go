package storage

// The dead letter queue's records: what an operator sees when a delivery
// failed for good, and the filters used to list them. Their lifecycle is in
// dlqstatus.go; the entry of a dying job is built by NewDLQEntry.

import (
	"errors"
	"net/http"
	"time"
)

// DLQStatus is the operator-facing state of a DLQ entry.
type DLQStatus string

// The DLQ entry states (docs/admin-api.md).
const (
	DLQPending       DLQStatus = "pending"
	DLQInvestigating DLQStatus = "investigating"
	DLQResolved      DLQStatus = "resolved"
	DLQDiscarded     DLQStatus = "discarded"
	DLQRetried       DLQStatus = "retried"
)

// Valid reports whether s is one of the known states.
func (s DLQStatus) Valid() bool {
	switch s {
	case DLQPending, DLQInvestigating, DLQResolved, DLQDiscarded, DLQRetried:
		return true
	}
	return false
}

// Attempt is one delivery attempt to the upstream.
type Attempt struct {
	N        int           `json:"n"`
	At       time.Time     `json:"at"`
	Status   int           `json:"status,omitempty"` // HTTP status, 0 when no response
	Duration time.Duration `json:"duration_ns"`
	Error    string        `json:"error,omitempty"`
}

// DLQEntry is one dead-lettered delivery. Its ID is the delivery's job ID
// (DeliveryID: the internal event ID for the default destination), so a
// delivery has at most one entry; a retried entry that fails again is
// updated.
type DLQEntry struct {
	ID      string `json:"id"`
	EventID string `json:"event_id"`
	Source  string `json:"source"`
	// Destination is the dead delivery's destination ("": the default).
	Destination string `json:"destination,omitempty"`
	EventType   string `json:"event_type,omitempty"`
	// Tenant is the customer account of the event ("": none).
	Tenant     string      `json:"tenant,omitempty"`
	RequestID  string      `json:"request_id,omitempty"`
	Upstream   string      `json:"upstream"`
	Payload    []byte      `json:"payload,omitempty"`
	Headers    http.Header `json:"headers,omitempty"`
	Error      string      `json:"error"`
	LastStatus int         `json:"last_status,omitempty"`
	Attempts   []Attempt   `json:"attempts"`
	ReceivedAt time.Time   `json:"received_at"`
	CreatedAt  time.Time   `json:"created_at"`
	UpdatedAt  time.Time   `json:"updated_at"`
	Status     DLQStatus   `json:"status"`
	Resolution string      `json:"resolution,omitempty"`
	Reason     string      `json:"reason,omitempty"`
	// Retries counts how many times an operator re-enqueued this entry.
	Retries int `json:"retries,omitempty"`
	// OrderKey is the dead delivery's order key ("": not ordered), so that
	// a retry re-queues it in its chain and settling the entry releases
	// its key (ChainOfEntry).
	OrderKey string `json:"order_key,omitempty"`
	// OrderSkip is the dead delivery's on_dead skip, kept for its retry.
	OrderSkip bool `json:"order_skip,omitempty"`
	// Sealed is the entry's headers and payload sealed together (seal.go)
	// when encryption is on: a sealed entry has no Payload or Headers.
	Sealed []byte `json:"sealed,omitempty"`
	// Waiting is how many deliveries of the same key wait behind this
	// entry's delivery, which blocks them (ChainWaiting); read-time only,
	// 0 when it blocks nothing.
	Waiting int `json:"waiting,omitempty"`
}

// DLQFilter selects DLQ entries. Zero fields match everything.
type DLQFilter struct {
	Source string
	// Destination selects one destination's entries ("" and "default"
	// alike select the default destination's; empty: all).
	Destination string
	Type        string // the event type, exactly
	// Tenant selects one tenant's entries, exactly (empty: all).
	Tenant string
	Status DLQStatus
	Since  time.Time // entries created at or after
	Until  time.Time // entries created at or before (zero: no bound)
	Limit  int       // 0 means DLQDefaultLimit
	Cursor string    // opaque, from DLQPage.NextCursor
}

// Matches reports whether e passes the filter (cursor and limit aside).
func (f DLQFilter) Matches(e *DLQEntry) bool {
	if f.Source != "" && e.Source != f.Source {
		return false
	}
	if f.Destination != "" && DestinationOf(&Event{Destination: e.Destination}) != DestinationOf(&Event{Destination: f.Destination}) {
		return false
	}
	if f.Type != "" && e.EventType != f.Type {
		return false
	}
	if f.Tenant != "" && e.Tenant != f.Tenant {
		return false
	}
	if f.Status != "" && e.Status != f.Status {
		return false
	}
	if !f.Since.IsZero() && e.CreatedAt.Before(f.Since) {
		return false
	}
	if !f.Until.IsZero() && e.CreatedAt.After(f.Until) {
		return false
	}
	return true
}

// DLQPage is one page of a listing, newest first.
type DLQPage struct {
	Entries []DLQEntry `json:"entries"`
	// NextCursor continues the listing ("": nothing older is left). A
	// page may hold fewer entries than its limit and still have one: the
	// backend stopped after ScanBudget index entries examined.
	NextCursor string `json:"next_cursor,omitempty"`
}

// Limits of a listing.
const (
	DLQDefaultLimit = 50
	DLQMaxLimit     = 1000
)

// EffectiveLimit clamps the filter's limit to [1, DLQMaxLimit].
func (f DLQFilter) EffectiveLimit() int { return clampLimit(f.Limit, DLQDefaultLimit, DLQMaxLimit) }

// clampLimit is limit within [1, most], def when it is not positive.
func clampLimit(limit, def, most int) int {
	switch {
	case limit <= 0:
		return def
	case limit > most:
		return most
	}
	return limit
}

// Errors shared by every backend.
var (
	ErrDLQNotFound   = errors.New("dlq entry not found")
	ErrInvalidCursor = errors.New("invalid cursor")
	// ErrConflict is returned when the operation does not fit the entry's
	// state, such as retrying an entry that was already re-enqueued.
	ErrConflict = errors.New("dlq entry is not in a state that allows this")
)
