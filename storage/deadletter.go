package storage

import (
	"time"
)

// NewDLQEntry is the DLQ entry of job dying at now, after attempts (its
// full history, the last attempt included) for reason. earlier is the
// event's previous entry, if it was dead-lettered before and retried: the
// new entry replaces it and carries its retry count over. The entry is
// pending, created and updated at now; its payload is the job's body (or
// its sealed payload).
func NewDLQEntry(job *Job, attempts []Attempt, reason string, now time.Time, earlier *DLQEntry) *DLQEntry {
	e := &DLQEntry{
		ID:          job.ID,
		EventID:     job.EventID,
		Source:      job.Source,
		Destination: job.Destination,
		EventType:   job.Type,
		Tenant:      job.Tenant,
		RequestID:   job.RequestID,
		Upstream:    job.Upstream,
		Payload:     job.Body,
		Headers:     job.Headers,
		Sealed:      job.Sealed,
		Error:       reason,
		Attempts:    attempts,
		ReceivedAt:  job.ReceivedAt,
		CreatedAt:   now,
		UpdatedAt:   now,
		Status:      DLQPending,
		OrderKey:    job.OrderKey,
		OrderSkip:   job.OrderSkip,
	}
	if n := len(attempts); n > 0 {
		e.LastStatus = attempts[n-1].Status
	}
	if earlier != nil {
		e.Retries = earlier.Retries
	}
	return e
}

// CheckRetryEvent is nil when DLQRetry may re-enqueue an entry's event
// whose record has status st ("" when the record is gone, past retention):
// only a dead event is re-enqueued; any other status means it is live
// again (ErrConflict). The entry's own status is checked by
// CheckDLQTransition.
func CheckRetryEvent(st Status) error {
	if st == "" || st == StatusDead {
		return nil
	}
	return ErrConflict
}

// RequeueDue is the due time of a job that DLQRetry or Replay re-enqueues
// for due, at now: due itself, or now when due is zero (the caller gave
// none). A zero due time is never stored: a store reads it as a job
// waiting behind its chain's head.
func RequeueDue(due, now time.Time) time.Time {
	if due.IsZero() {
		return now
	}
	return due
}

// RetryEvent is the job a DLQ retry of entry e re-enqueues: the event of
// its stored record (nil: gone past retention, rebuilt by EventOfEntry),
// with the entry's own copy of the payload (OwnEntryPayload), back in its
// source's lane rather than a replay's. Whatever else the record held is
// kept: its claim (Dedupe), trace, and tenant's own lane (Apart).
func RetryEvent(stored *Event, e *DLQEntry) Event {
	ev := EventOfEntry(e)
	if stored != nil {
		ev = *stored
	}
	OwnEntryPayload(&ev, e)
	ev.Replay = false
	return ev
}

// EventOfEntry rebuilds the event a DLQ entry holds, for a retry whose
// event record is gone (past retention). An event without a provider id
// carries its internal id as event id, and was never deduplicated.
func EventOfEntry(e *DLQEntry) Event {
	return Event{ID: e.ID, EventID: e.EventID, Dedupe: e.EventID != EventIDOfDelivery(e.ID), Source: e.Source,
		Destination: e.Destination, Type: e.EventType, Tenant: e.Tenant, RequestID: e.RequestID, Upstream: e.Upstream, Headers: e.Headers, Body: e.Payload, Sealed: e.Sealed, ReceivedAt: e.ReceivedAt,
		OrderKey: e.OrderKey, OrderSkip: e.OrderSkip}
}
