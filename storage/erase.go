package storage

// Erasure (GDPR): an operator removes one event and everything stored of
// it, on every backend, in one atomic step per event where the backend
// allows it (one embedded transaction; one Lua script in the event's Redis
// partition):
//
//   - every delivery's job, whatever its state: queued, waiting in an
//     ordered chain, in flight, delivered or dead;
//   - the DLQ entry of every delivery, whatever its status;
//   - the event's deliveries index, its (source, event id) index, and any
//     body and headers stored apart from the jobs (a payload record).
//
// What is kept: the claim on (source, event id), until it expires as it
// would have, so that a provider's resend is still answered 200 duplicate
// and not delivered again; and beside it a tombstone naming the event's
// internal id as erased (no body, no header), which expires with the
// claim, so that the duplicate answer says "erased" (StatusErased) rather
// than "delivered". The stats counters are not changed. Lookup of an
// erased event is ErrNotFound, and so is a second erasure.
//
// Ordered chains: an erased delivery leaves its chain. Erasing the head
// lets the next delivery of its key go at once (as resolving or
// discarding a blocking head does, whatever the head's state: an erased
// head never finishes); erasing a delivery waiting behind the head removes
// it from its chain (ErasesFromChain).
//
// A delivery in flight when its event is erased is gone: its worker's
// Finish answers ErrLeaseLost and writes nothing (no record comes back).

import (
	"context"
	"errors"
	"time"
)

// StatusErased is the status a duplicate of an erased event is answered
// with (and the L1 cache remembers) while the claim lasts: the event was
// accepted once, then erased by an operator; it is not delivered again.
// Lookup never reports it: an erased event is not found.
const StatusErased Status = "erased"

// EraseResult is what Erase removed.
type EraseResult struct {
	// ID is the erased event's internal ID.
	ID string `json:"id"`
	// Deliveries counts the deliveries of the event that had anything
	// stored (a job, a DLQ entry or both), all removed.
	Deliveries int `json:"deliveries"`
	// DLQEntries counts the DLQ entries removed, whatever their status.
	DLQEntries int `json:"dlq_entries"`
	// DedupeUntil is when the claim kept on (source, event id) expires:
	// resends are answered as duplicates (StatusErased) until then. Zero
	// when the event has no claim (no provider id, or its claim expired).
	DedupeUntil time.Time `json:"dedupe_until,omitzero"`
}

// Eraser removes events for good (GDPR erasure).
type Eraser interface {
	// Erase removes the event eventID of source as described above (an
	// event without a provider id is named by its internal ID, as Lookup
	// finds it), in one atomic step per event where the backend allows,
	// keeping only its claim and the erased tombstone. An event of which
	// nothing is stored (unknown, erased already, or past retention) is
	// ErrNotFound. now decides what the ordered chain's next delivery is
	// due at.
	Erase(ctx context.Context, source, eventID string, now time.Time) (EraseResult, error)
	// EraseBatch erases each event of source named by its internal ID in
	// ids as Erase does, as one step of a larger erasure (a tenant's): the
	// result of each, in order, a zero one (no ID) for an event of which
	// nothing is stored. An id is never taken for a provider's event id
	// (an event whose provider id equals another's internal id is not
	// erased in its place). Each event is erased atomically, and the backend does once
	// for the batch what it can (the embedded store scrubs its files once).
	// An error is the store's: some events of the batch may be erased
	// all the same, and their results say which.
	EraseBatch(ctx context.Context, source string, ids []string, now time.Time) ([]EraseResult, error)
}

// ErrSpooled is Erase's answer for an event a node holds in its spool
// (storage/spool) while the shared store is unreachable: it cannot be
// erased there, and is erased once moved into the store.
var ErrSpooled = errors.New("the event waits in this node's spool until the store answers; erase it once it is moved")

// ErasedStatus is the status of a duplicate of an event, for Enqueue's
// answer: StatusErased when the event's tombstone says it was erased,
// else status, its status as EventStatus computes it.
func ErasedStatus(erased bool, status Status) Status {
	if erased {
		return StatusErased
	}
	return status
}

// ErasesFromChain says what erasing delivery id does to the ordered chain
// whose head is head: pop reports whether id is the head, which is popped
// and lets the next job of the chain go (PopsChain's effect, whatever the
// head's state); otherwise remove reports whether id must be taken out of
// the chain where it waits (it is in the chain and not its head).
func ErasesFromChain(id, head string, inChain bool) (pop, remove bool) {
	if head == id {
		return true, false
	}
	return false, inChain
}
