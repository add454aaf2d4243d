package storage

import (
	"fmt"
	"slices"
	"time"
)

// The lifecycle of an entry. It is created pending (by the backend that
// dead-letters the event); an operator moves it to investigating, resolved
// or discarded (DLQSetStatus) or re-enqueues its event (DLQRetry: it becomes
// retried). A retried entry belongs to the live event again: nothing moves
// it but the event dying once more (a new pending entry under the same ID).
// A discarded entry cannot be retried. Nothing moves an entry back to
// pending.

// Open reports whether s counts as still needing an operator: pending and
// investigating entries (Counts.Dead, the backends' open-entry indexes).
func (s DLQStatus) Open() bool {
	return s == DLQPending || s == DLQInvestigating
}

// refusedFrom lists, for every status an entry can be moved to, the
// statuses it cannot be moved from. A status absent here is never a target.
var refusedFrom = map[DLQStatus][]DLQStatus{
	DLQInvestigating: {DLQRetried},
	DLQResolved:      {DLQRetried},
	DLQDiscarded:     {DLQRetried},
	DLQRetried:       {DLQRetried, DLQDiscarded},
}

// DLQRefusedFrom lists the statuses from which an entry cannot be moved to
// to (nil when to is never a target: CheckDLQTransition refuses it from
// anywhere). The Redis scripts get this list, so that they refuse
// atomically what CheckDLQTransition refuses.
func DLQRefusedFrom(to DLQStatus) []DLQStatus {
	return slices.Clone(refusedFrom[to])
}

// CheckDLQTransition is nil when an entry in status from may be moved to
// status to, and wraps ErrConflict otherwise. A from status this version
// does not know is not refused (only the known refusals are).
func CheckDLQTransition(from, to DLQStatus) error {
	refused, ok := refusedFrom[to]
	if !ok {
		return fmt.Errorf("%w: cannot move an entry to status %q", ErrConflict, to)
	}
	if slices.Contains(refused, from) {
		return ErrConflict
	}
	return nil
}

// CheckDLQSettable is nil when an operator may set status to by hand
// (DLQSetStatus): investigating, resolved or discarded. Retried is reached
// only by re-enqueueing (DLQRetry), pending never. It wraps ErrConflict.
func CheckDLQSettable(to DLQStatus) error {
	switch to {
	case DLQInvestigating, DLQResolved, DLQDiscarded:
		return nil
	}
	return fmt.Errorf("%w: cannot set status %q", ErrConflict, to)
}

// Transition moves e to status to at now if CheckDLQTransition allows it, and
// returns its error otherwise (e unchanged). text is the operator's
// resolution (resolved) or reason (discarded); moving to retried counts one
// more retry.
func (e *DLQEntry) Transition(to DLQStatus, text string, now time.Time) error {
	if err := CheckDLQTransition(e.Status, to); err != nil {
		return err
	}
	e.Status, e.UpdatedAt = to, now
	switch to {
	case DLQResolved:
		e.Resolution = text
	case DLQDiscarded:
		e.Reason = text
	case DLQRetried:
		e.Retries++
	}
	return nil
}
