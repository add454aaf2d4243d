package storage

// Replay: re-sending events already delivered (still within retention).
// An operator lists delivered events (ListDelivered) and re-enqueues each
// (Replay) in its source's replay lane, so that a replay backlog takes
// turns with live traffic instead of holding it back. The rules are the
// functions below; the backends only persist.

import (
	"strconv"
	"strings"
	"time"
)

// Limits of a replay: those of a bulk DLQ retry.
const (
	ReplayDefaultLimit = 100
	ReplayMaxLimit     = DLQMaxLimit
)

// ReplayFilter selects delivered events to replay. Zero fields match
// everything.
type ReplayFilter struct {
	Source string
	// Destination selects one destination's deliveries ("" and "default"
	// alike: the default destination's; empty: all).
	Destination string
	Type        string // the event type, exactly
	// Tenant selects one tenant's deliveries, exactly ("": any).
	Tenant string
	// ID selects one event's deliveries by its internal ID ("": any).
	ID    string
	Since time.Time // delivered at or after
	Until time.Time // delivered at or before
	Limit int       // 0 means ReplayDefaultLimit; at most ReplayMaxLimit
	// Cursor continues a listing (ReplayPage.NextCursor; "": from Since).
	Cursor string
}

// ReplayPage is one page of ListDelivered, oldest delivery first.
type ReplayPage struct {
	// Events are the delivered events listed.
	Events []EventInfo
	// NextCursor continues the listing ("": nothing later is left). A
	// page may hold fewer events than its limit and still have one: the
	// backend stopped after ScanBudget index entries examined.
	NextCursor string
}

// EffectiveLimit clamps the filter's limit to [1, ReplayMaxLimit].
func (f ReplayFilter) EffectiveLimit() int {
	return clampLimit(f.Limit, ReplayDefaultLimit, ReplayMaxLimit)
}

// InRange reports whether an event finished at finished is within the
// filter's [Since, Until].
func (f ReplayFilter) InRange(finished time.Time) bool {
	return (f.Since.IsZero() || !finished.Before(f.Since)) && (f.Until.IsZero() || !finished.After(f.Until))
}

// Matches reports whether an event whose record has status st and
// finished at finished may be replayed under the filter: only delivered
// events are (queued, in-flight and dead ones are not).
func (f ReplayFilter) Matches(ev *Event, st Status, finished time.Time) bool {
	if st != StatusDelivered || !f.InRange(finished) {
		return false
	}
	return (f.Source == "" || ev.Source == f.Source) && (f.Type == "" || ev.Type == f.Type) &&
		(f.Tenant == "" || ev.Tenant == f.Tenant) && (f.ID == "" || EventIDOfDelivery(ev.ID) == f.ID) &&
		(f.Destination == "" || DestinationOf(ev) == DestinationOf(&Event{Destination: f.Destination}))
}

// ReplayCursor is the cursor a replay answers with: the listing's next
// cursor ("": none, and then none) and until, the end of the walk that the
// replay's first page fixed. Replayed events are delivered again at the
// newest end of the listing: a walk with no end would meet them again on
// a later page and replay them twice.
func ReplayCursor(next string, until time.Time) string {
	if next == "" {
		return ""
	}
	return next + "~" + strconv.FormatInt(until.UnixNano(), 10)
}

// ParseReplayCursor reads a ReplayCursor back: the listing's cursor and
// the walk's end, or ErrInvalidCursor.
func ParseReplayCursor(cursor string) (next string, until time.Time, err error) {
	next, ns, ok := strings.Cut(cursor, "~")
	n, perr := strconv.ParseInt(ns, 10, 64)
	if !ok || perr != nil || next == "" {
		return "", time.Time{}, ErrInvalidCursor
	}
	return next, time.Unix(0, n), nil
}

// ErrNotDelivered is Replay's refusal of an event that is not delivered
// (any more): queued again by another replay, in flight, dead.
// errors.Is(ErrNotDelivered, ErrConflict) holds.
var ErrNotDelivered error = conflictError("event is not delivered (queued, in flight, dead, or replayed meanwhile)")

// conflictError is an ErrConflict with its own text.
type conflictError string

func (e conflictError) Error() string { return string(e) }

// Is makes errors.Is(e, ErrConflict) hold.
func (e conflictError) Is(target error) bool { return target == ErrConflict }

// CheckReplayEvent is nil when Replay may re-enqueue an event whose record
// has status st ("" when the record is gone: ErrNotFound); an event that
// is not delivered gives ErrNotDelivered.
func CheckReplayEvent(st Status) error {
	switch st {
	case StatusDelivered:
		return nil
	case "":
		return ErrNotFound
	}
	return ErrNotDelivered
}

// ReplayJob turns a delivered event's job into its replay: in the replay
// lane, with a fresh attempt budget (the attempt history is kept), not
// leased. The caller queues it at its due time.
func ReplayJob(job *Job) {
	job.Replay = true
	job.RoundStart = len(job.Attempts)
	job.Lease, job.LeaseUntil = "", time.Time{}
}
