// Package dlq defines hookline's dead letter queue records: what an operator
// sees when a delivery failed for good, and the filters used to list them.
// It has no Caddy imports; the storage backends persist these records.
package dlq

import (
	"errors"
	"net/http"
	"time"
)

// Status is the operator-facing state of a DLQ entry.
type Status string

// The DLQ entry states of DESIGN.md.
const (
	StatusPending       Status = "pending"
	StatusInvestigating Status = "investigating"
	StatusResolved      Status = "resolved"
	StatusDiscarded     Status = "discarded"
	StatusRetried       Status = "retried"
)

// Valid reports whether s is one of the known states.
func (s Status) Valid() bool {
	switch s {
	case StatusPending, StatusInvestigating, StatusResolved, StatusDiscarded, StatusRetried:
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

// Entry is one dead-lettered event. Its ID is the internal event ID, so an
// event has at most one entry; a retried entry that fails again is updated.
type Entry struct {
	ID         string      `json:"id"`
	EventID    string      `json:"event_id"`
	Source     string      `json:"source"`
	Upstream   string      `json:"upstream"`
	Payload    []byte      `json:"payload,omitempty"`
	Headers    http.Header `json:"headers,omitempty"`
	Error      string      `json:"error"`
	LastStatus int         `json:"last_status,omitempty"`
	Attempts   []Attempt   `json:"attempts"`
	ReceivedAt time.Time   `json:"received_at"`
	CreatedAt  time.Time   `json:"created_at"`
	UpdatedAt  time.Time   `json:"updated_at"`
	Status     Status      `json:"status"`
	Resolution string      `json:"resolution,omitempty"`
	Reason     string      `json:"reason,omitempty"`
	// Retries counts how many times an operator re-enqueued this entry.
	Retries int `json:"retries,omitempty"`
}

// Filter selects DLQ entries. Zero fields match everything.
type Filter struct {
	Source string
	Status Status
	Since  time.Time // entries created at or after
	Limit  int       // 0 means DefaultLimit
	Cursor string    // opaque, from Page.NextCursor
}

// Matches reports whether e passes the filter (cursor and limit aside).
func (f Filter) Matches(e *Entry) bool {
	if f.Source != "" && e.Source != f.Source {
		return false
	}
	if f.Status != "" && e.Status != f.Status {
		return false
	}
	if !f.Since.IsZero() && e.CreatedAt.Before(f.Since) {
		return false
	}
	return true
}

// Page is one page of a listing, newest first.
type Page struct {
	Entries    []Entry `json:"entries"`
	NextCursor string  `json:"next_cursor,omitempty"`
}

// Limits of a listing.
const (
	DefaultLimit = 50
	MaxLimit     = 1000
)

// EffectiveLimit clamps the filter's limit to [1, MaxLimit].
func (f Filter) EffectiveLimit() int {
	switch {
	case f.Limit <= 0:
		return DefaultLimit
	case f.Limit > MaxLimit:
		return MaxLimit
	}
	return f.Limit
}

// Errors shared by every backend.
var (
	ErrNotFound      = errors.New("dlq entry not found")
	ErrInvalidCursor = errors.New("invalid cursor")
	// ErrConflict is returned when the operation does not fit the entry's
	// state, such as retrying an entry that was already re-enqueued.
	ErrConflict = errors.New("dlq entry is not in a state that allows this")
)
