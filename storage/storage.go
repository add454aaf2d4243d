// Package storage is the one seam between hookline's ingress path, its
// delivery workers and the backends that keep events durable (embedded,
// Redis). Every backend passes the conformance suite in storagetest.
//
// The model: an accepted webhook is an Event. Enqueue claims the event's
// (source, event id) pair and stores the event as a due Job in one atomic,
// durable step. Workers Lease due jobs; a job whose worker died becomes due
// again when its lease expires (or, where the leases live in the process,
// as the embedded store's do, when the store is opened again). A
// worker Finishes a leased job as delivered, rescheduled, dead (moved to the
// DLQ) or released (handed back untouched).
package storage

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// Status is where an event is in its life.
type Status string

// Event states, as reported to providers for duplicates and to operators.
const (
	StatusQueued    Status = "queued"
	StatusInFlight  Status = "in_flight"
	StatusDelivered Status = "delivered"
	StatusDead      Status = "dead"
	// StatusSpooled is an event a node kept in its local spool while the
	// shared store was unreachable, not yet moved into it (storage/spool).
	StatusSpooled Status = "spooled"
)

// Reported is the status a duplicate's answer tells its sender: in_flight
// is reported as queued (a delivery under way is not yet delivered, and the
// sender has no use for the difference); the others as they are.
func (s Status) Reported() Status {
	if s == StatusInFlight {
		return StatusQueued
	}
	return s
}

// Event is an accepted webhook: the exact bytes received and what is needed
// to deliver them.
type Event struct {
	// ID is the internal, unique, time-ordered ID. A stored job's is its
	// delivery's (DeliveryID: the event's own for the default destination),
	// also its DLQ entry's ID.
	ID string `json:"id"`
	// EventID is the provider's ID used for deduplication (or a generated one).
	EventID string `json:"event_id"`
	// Dedupe is false when EventID was generated: such events never collide.
	Dedupe bool   `json:"dedupe"`
	Source string `json:"source"`
	// Type is the event type its source's type_from rules found ("": none).
	Type string `json:"type,omitempty"`
	// Tenant is the customer account the event belongs to, as its
	// source's tenant_from rules found it (normalized as an id is; "":
	// none).
	Tenant string `json:"tenant,omitempty"`
	// RequestID is the id of the ingress request that accepted the event
	// (Caddy's {http.request.uuid}), for the audit log.
	RequestID string `json:"request_id,omitempty"`
	// Trace is the W3C traceparent of the ingress request's span when
	// Caddy's tracing is on: each delivery attempt is a span of that trace.
	Trace string `json:"trace,omitempty"`
	// Destination is the name of the destination a job delivers to
	// ("" is DefaultDestination, as in records written before destinations
	// existed).
	Destination string `json:"destination,omitempty"`
	// Deliveries asks Enqueue for one delivery per entry (DeliveriesOf);
	// empty: one delivery to Destination at Upstream. Read only by Enqueue,
	// never stored.
	Deliveries []Delivery `json:"-"`
	// Replay is true once an operator replayed the delivered event: its
	// jobs wait in its source's replay lane (LaneOf).
	Replay bool `json:"replay,omitempty"`
	// Apart is true for a live delivery of an event with a tenant that
	// waits in its tenant's own lane (TenantLane) instead of the share its
	// tenant hashes to: set by the ingress for a tenant an operator
	// pauses, and by a Release with Outcome.Apart.
	Apart bool `json:"apart,omitempty"`
	// OrderKey is the key of a delivery of an ordered destination (its
	// Delivery's): the deliveries of one lane with the same key go out
	// one at a time, in the order they were accepted (ChainOf); "": not
	// ordered.
	OrderKey string `json:"order_key,omitempty"`
	// OrderSkip is true when a dead delivery lets the next one of its key
	// go (on_dead skip) instead of blocking its key until its DLQ entry
	// is settled (on_dead block).
	OrderSkip bool `json:"order_skip,omitempty"`
	// SharedPayload is true for a stored job whose body and headers are
	// not in its record but in its event's payload record, which the
	// event's deliveries share (SharePayload); a job handed out by Lease
	// has them joined back (JoinPayload).
	SharedPayload bool `json:"shared_payload,omitempty"`
	// Sealed is the event's headers and body sealed together (seal.go)
	// when encryption is on: a sealed record has no Headers or Body.
	Sealed     []byte      `json:"sealed,omitempty"`
	Upstream   string      `json:"upstream"`
	Headers    http.Header `json:"headers,omitempty"`
	Body       []byte      `json:"body,omitempty"`
	ReceivedAt time.Time   `json:"received_at"`
}

// Job is an event in the delivery queue, as handed to a worker by Lease.
type Job struct {
	Event
	// Attempts is the full attempt history, across operator retries.
	Attempts []Attempt `json:"attempts,omitempty"`
	// RoundStart is the index in Attempts where the current attempt budget
	// began (an operator retry from the DLQ starts a fresh budget).
	RoundStart int `json:"round_start,omitempty"`
	// Lease identifies the current lease; Finish must present it.
	Lease      string    `json:"lease,omitempty"`
	LeaseUntil time.Time `json:"lease_until,omitempty"`
}

// RoundAttempts is the number of attempts used in the current budget.
func (j *Job) RoundAttempts() int { return len(j.Attempts) - j.RoundStart }

// Result is what a worker decided about a leased job.
type Result int

// Results of Finish.
const (
	// Delivered: the upstream accepted the event.
	Delivered Result = iota + 1
	// Retry: a transient failure; deliver again at Outcome.Due.
	Retry
	// Dead: permanent failure or budget exhausted; move to the DLQ.
	Dead
	// Release: no attempt was made (shutdown, open breaker); due again at
	// Outcome.Due (zero: now) with the attempt budget untouched.
	Release
)

// String is the result's name, as the metrics, the stats and the audit
// log name it: "delivered", "retry", "dead" or "release".
func (r Result) String() string {
	switch r {
	case Delivered:
		return "delivered"
	case Retry:
		return "retry"
	case Dead:
		return "dead"
	case Release:
		return "release"
	}
	return "unknown"
}

// Status is the status a job takes when it is finished with r: delivered,
// dead, or queued again (Retry, Release); "" for an unknown result.
func (r Result) Status() Status {
	switch r {
	case Delivered:
		return StatusDelivered
	case Dead:
		return StatusDead
	case Retry, Release:
		return StatusQueued
	}
	return ""
}

// Outcome is passed to Finish.
type Outcome struct {
	Result  Result
	Attempt *Attempt  // the attempt made; nil for Release
	Due     time.Time // for Retry and Release
	Error   string    // for Dead: why (shown in the DLQ entry)
	// Apart, for a Release of a live delivery with a tenant, moves the
	// job into its tenant's own lane for good (Event.Apart, TenantLane),
	// where a pause of its tenant holds it without holding back the
	// other tenants of its share. Ignored for any other job or result.
	Apart bool
}

// MovesApart reports whether finishing a job of ev with out moves it into
// its tenant's own lane (Outcome.Apart).
func (out Outcome) MovesApart(ev *Event) bool {
	return out.Apart && out.Result == Release && ev.Tenant != "" && !ev.Replay && !ev.Apart
}

// EnqueueResult tells the ingress what Enqueue did.
type EnqueueResult struct {
	// Duplicate is true when (source, event id) was already claimed within
	// its dedupe window; nothing was enqueued.
	Duplicate bool
	// ID is the internal ID of the stored (or the earlier) event.
	ID string
	// Status is the current status of the earlier event for duplicates,
	// StatusQueued otherwise.
	Status Status
	// DedupeUntil is when a duplicate's claim expires (zero if unknown).
	DedupeUntil time.Time
	// Due lists deliveries this enqueue stored due at once that a lease
	// may take by name (LeaseNamed), so that the node that accepted the
	// event starts delivering it without looking for it. Ordered
	// deliveries are left out (their chains decide), and so are those a
	// backend keeps in one record until a lease expands them (Redis'
	// fan-out records). Nil for a duplicate.
	Due []Candidate
}

// EventInfo is what the store knows about one event.
type EventInfo struct {
	ID      string `json:"id"`
	EventID string `json:"event_id"`
	Source  string `json:"source"`
	// Destination is the destination of a delivery reported alone (replay
	// listings, a delivery of EventInfo.Deliveries): "" for the default.
	Destination string `json:"destination,omitempty"`
	EventType   string `json:"event_type,omitempty"`
	// Tenant is the customer account of the event ("": none).
	Tenant string `json:"tenant,omitempty"`
	// RequestID is the id of the ingress request that accepted the event.
	RequestID   string    `json:"request_id,omitempty"`
	Status      Status    `json:"status"`
	ReceivedAt  time.Time `json:"received_at"`
	NextAttempt time.Time `json:"next_attempt_at,omitzero"`
	FinishedAt  time.Time `json:"finished_at,omitzero"`
	Attempts    []Attempt `json:"attempts"`
	// Deliveries reports each delivery of an event with several (or with
	// a non-default one); the fields above are then their aggregate
	// (CombineEventInfo).
	Deliveries []DeliveryInfo `json:"deliveries,omitempty"`
}

// Counts is a snapshot of queue sizes.
type Counts struct {
	Queued   int `json:"queued"`
	InFlight int `json:"in_flight"`
	Dead     int `json:"dead"` // DLQ entries in pending or investigating state
}

// Store is implemented by every storage backend: the eight roles below,
// each of which a caller can depend on alone (the delivery engine needs
// only Queue). All methods are safe for concurrent use by several
// goroutines and, for shared backends, by several processes. Methods that
// write return only once the write is durable. A backend only persists:
// the rules (DLQ entries, transitions, claim keys, statuses) are the
// functions of this package, which every backend calls.
type Store interface {
	Queue
	DeadLetters
	Operations
	Replays
	Janitor
	Eraser
	Browser
	Rekeyer
	TenantErasures
	// Close releases the backend.
	Close() error
}

// Queue is the path of one event: claimed and stored by the ingress,
// leased and finished by the delivery workers.
type Queue interface {
	// Enqueue atomically claims (ev.Source, ev.EventID) until dedupeUntil
	// (when ev.Dedupe) and stores one job due now per delivery of ev
	// (DeliveriesOf: one per ev.Deliveries, or ev itself), all in the same
	// atomic step. A claim that has not expired makes it a duplicate:
	// nothing is stored. The result's ID is the event's (ev.ID). Deliveries
	// DeliveriesOf refuses (a destination not valid or listed twice, two
	// order keys) are its error, and nothing is stored. An ordered
	// delivery whose chain already has a head waits behind it, queued but
	// not due (see order.go).
	Enqueue(ctx context.Context, ev *Event, dedupeUntil time.Time) (EnqueueResult, error)

	// Lease hands out up to n jobs due at or before now, each leased until
	// now+lease: no other Lease returns it before then. The gate decides
	// which lanes may be leased and at what pace (see Gate): jobs of a
	// skipped or not-yet-due lane are not touched. Lanes take turns (see
	// PickFair), so one lane's backlog does not starve the others.
	Lease(ctx context.Context, now time.Time, n int, lease time.Duration, gate *Gate) ([]*Job, error)

	// LeaseNamed leases those of cands (from EnqueueResult.Due) that are
	// still due at now and not under a lease, each until now+lease, as
	// Lease would have, without looking for any other due job: the
	// delivery of an event just accepted does not wait for a scan of the
	// queue. It does not consult a gate: the caller leaves out the
	// candidates of lanes its gate skips, paces or caps (Lease takes
	// those in their turn).
	LeaseNamed(ctx context.Context, now time.Time, cands []Candidate, lease time.Duration) ([]*Job, error)

	// NextDue is the earliest time a job the gate lets through is due, or
	// its lane's next paced slot if later (ok false when there is none).
	NextDue(ctx context.Context, gate *Gate) (due time.Time, ok bool, err error)

	// Finish records the outcome of a leased job (a Dead outcome builds
	// its entry with NewDLQEntry); finishing an ordered chain's head lets
	// the next job of its chain go when PopsChain says so. ErrLeaseLost
	// means the lease expired and another worker took the job; the outcome
	// was not recorded. A store may record an outcome that neither dead
	// letters the job nor lets an ordered chain's next job go without
	// waiting for its disk: a crash soon after may then lose it, and the
	// job is leased and delivered again, as at-least-once allows.
	Finish(ctx context.Context, job *Job, out Outcome) error
}

// DeadLetters is the operator's side of the dead letter queue.
type DeadLetters interface {
	// DLQList lists entries, newest first, with their Waiting counts,
	// at most f.EffectiveLimit() of them, examining at most
	// f.ScanBudget() index entries (listindex.go). A cursor not made by
	// DLQList is ErrInvalidCursor.
	DLQList(ctx context.Context, f DLQFilter) (DLQPage, error)
	// DLQGet returns one entry with its payload and Waiting count, or
	// ErrDLQNotFound.
	DLQGet(ctx context.Context, id string) (*DLQEntry, error)
	// DLQCounts counts DLQ entries by source and status (from counters
	// the backend keeps, not by reading every entry).
	DLQCounts(ctx context.Context) (map[string]map[DLQStatus]int, error)
	// DLQRetry re-enqueues the entry's event, due at due (now for an
	// immediate retry, as a zero due is: RequeueDue; later to pace a bulk
	// retry), with a fresh attempt
	// budget; the entry becomes "retried". Entries already retried or
	// discarded give ErrConflict (CheckDLQTransition decides).
	DLQRetry(ctx context.Context, id string, due time.Time) error
	// DLQSetStatus moves an entry to investigating, resolved or discarded
	// (CheckDLQSettable), with the operator's text (resolution or reason);
	// an entry blocking its ordered chain releases it when ReleasesChain
	// says so.
	DLQSetStatus(ctx context.Context, id string, status DLQStatus, text string, now time.Time) error
}

// Operations is what operators and the app read and set beside the queue:
// event lookups, queue sizes, pauses and the stats counters.
type Operations interface {
	// Lookup returns what is known about (source, eventID) or ErrNotFound.
	Lookup(ctx context.Context, source, eventID string) (*EventInfo, error)

	// Counts returns current queue sizes.
	Counts(ctx context.Context) (Counts, error)
	// QueueBySource returns the queued and in-flight jobs of each source
	// (Dead is left zero: DLQCounts has it). A leased job whose lease ran
	// out is queued (EffectiveStatus). Backends read counters they keep
	// (Recounter), not every job: a scrape or a stats page may call it.
	QueueBySource(ctx context.Context) (map[string]Counts, error)
	// QueueByLane is QueueBySource by lane (LaneOf): a destination's
	// waiting deliveries are its lanes'.
	QueueByLane(ctx context.Context) (map[string]Counts, error)

	// Pauses are the operators' pauses, shared by every node (pause.go).
	Pauses

	// AddStats adds a batch of counter deltas atomically: b.Counters to the
	// all-time totals and to the minute and hour buckets of b.At, b.Window
	// to those buckets only, and sets b.Latest's values in the all-time
	// totals where they are larger than the stored ones. The deltas of every node sharing the store add
	// up; a batch whose ID the store applied within StatsBatchMemory is
	// not applied again (a writer whose reply was lost sends it again).
	AddStats(ctx context.Context, b StatsBatch) error
	// Stats returns the counters summed over the minute buckets since
	// since, and the all-time totals.
	Stats(ctx context.Context, since time.Time) (recent, allTime map[string]map[string]int64, err error)
	// StatsBuckets returns the buckets of resolution res starting in
	// [from, to) that hold a counter (StatsBucketRange), oldest first.
	StatsBuckets(ctx context.Context, res StatsResolution, from, to time.Time) ([]StatsBucket, error)
	// SetStatsGauges sets gauges (by source, then name) in the minute and
	// hour buckets of at: the value last set in a bucket is its value (a
	// store-wide reading, such as the DLQ size, is the same from every
	// node). Gauges are kept apart from AddStats' counters by their names:
	// the caller never uses one name for both.
	SetStatsGauges(ctx context.Context, at time.Time, gauges map[string]map[string]int64) error
	// QueueHeads returns the due time of the first job (queued or leased)
	// of every lane holding one: one read per lane, not per job. A lane's
	// head due before now has waited that long for a worker.
	QueueHeads(ctx context.Context) (map[string]time.Time, error)
}

// Replays re-sends events already delivered (still within retention).
// A delivered event keeps its payload until Cleanup removes it.
type Replays interface {
	// ListDelivered lists up to f.EffectiveLimit() delivered events
	// matching f (ReplayFilter.Matches), oldest delivery first (ties,
	// within the backend's time resolution, by id), after f.Cursor,
	// examining at most f.ScanBudget() index entries. A cursor not made
	// by ListDelivered is ErrInvalidCursor.
	ListDelivered(ctx context.Context, f ReplayFilter) (ReplayPage, error)
	// Replay atomically re-enqueues the delivered event ev (as listed by
	// ListDelivered: its ID, EventID and Source are read) due at due (a
	// zero due: now, RequeueDue), as
	// ReplayJob says: queued in its source's replay lane with a fresh
	// attempt budget. An event that is no longer delivered (replayed
	// meanwhile, by another caller too) gives ErrNotDelivered, an
	// ErrConflict (CheckReplayEvent); one past retention ErrNotFound.
	Replay(ctx context.Context, ev *EventInfo, due time.Time) error
}

// Janitor removes what has outlived its retention.
type Janitor interface {
	// Cleanup deletes finished events older than retention, expired
	// claims, and DLQ entries older than dlqRetention (0: keep); a removed
	// entry that blocked its ordered chain releases it, as if discarded.
	// It returns how many records it removed.
	Cleanup(ctx context.Context, now time.Time, retention, dlqRetention time.Duration) (int, error)
}

// Errors returned by backends.
var (
	ErrNotFound  = errors.New("event not found")
	ErrLeaseLost = errors.New("lease lost: the job was leased again")
	// ErrUnavailable wraps failures to reach or write the backend; the
	// ingress answers 503 for it.
	ErrUnavailable = errors.New("storage unavailable")
)

// Recounter is implemented by a backend whose QueueByLane and DLQCounts
// read counters it maintains with every write (both backends): Recount
// answers the same two questions by reading every queued job and every
// DLQ entry instead, O(jobs + entries). It is the oracle of the
// conformance suite's counter checks, not a path for operators.
type Recounter interface {
	Recount(ctx context.Context) (byLane map[string]Counts, dlq map[string]map[DLQStatus]int, err error)
}

// As finds the first store of type T in the chain that starts at s and
// goes on through each wrapper's Unwrap (encryption at rest, the spool, a
// module's own wrapping): s itself if it is a T, else what it wraps, and so
// on. ok is false when no store of the chain is a T.
func As[T any](s any) (t T, ok bool) {
	for s != nil {
		if t, ok = s.(T); ok {
			return t, true
		}
		u, isWrapper := s.(interface{ Unwrap() Store })
		if !isWrapper {
			break
		}
		s = u.Unwrap()
	}
	return t, false
}
