package operator

import (
	"time"

	"github.com/hookline/hookline/storage"
)

// The API's request and answer bodies, as the server writes them and the
// CLI decodes them. Two routes answer storage types as they are:
// GET /webhooks/dlq a storage.DLQPage (entries redacted, without payloads)
// and GET /webhooks/events/{source}/{event_id} a storage.EventInfo.

// ErrorAnswer is the body of every error answer.
type ErrorAnswer struct {
	// Error says what went wrong, never with internals.
	Error string `json:"error"`
	// Code names the error for programs, when it has one
	// (CodeKeyMissing, CodeEncryptionDisabled).
	Code string `json:"code,omitempty"`
}

// StatsAnswer answers GET /webhooks/stats.
type StatsAnswer struct {
	// PausedSources lists the sources paused as a whole (null when none
	// is); kept for compatibility: Pauses has every pause.
	PausedSources []string `json:"paused_sources"`
	// Pauses lists every pause in force, destinations' too, with the
	// deliveries waiting for each.
	Pauses []PauseInfo `json:"pauses"`
	// Queue is the queue's current sizes; its dead counts the DLQ
	// entries still pending or under investigation.
	Queue storage.Counts `json:"queue"`
	// Encryption says whether payloads are encrypted at rest.
	Encryption EncryptionInfo `json:"encryption"`
	// Sources has each webhook source's queue and counters.
	Sources map[string]SourceStats `json:"sources"`
	// Total sums the counters of every source.
	Total Windows `json:"total"`
	// Store says whether the store answered. When it did not, and this
	// node spools what it cannot store, the answer still comes: queue,
	// sources and total are then empty, not counts.
	Store StoreState `json:"store"`
	// Spool is what this node holds in its spool (absent without one).
	Spool *SpoolInfo `json:"spool,omitempty"`
	// SignatureFailures are, by source, the last failed signature checks
	// this node answered (newest first, at most 10 a source; absent when
	// none): why a provider's requests fail, kept in memory.
	SignatureFailures map[string][]SignatureFailure `json:"signature_failures,omitempty"`
}

// SignatureFailure is one failed signature check.
type SignatureFailure struct {
	// At is when it was answered.
	At time.Time `json:"at"`
	// Reason is why the check failed: missing (a header the scheme needs
	// is absent), malformed (present, unreadable), timestamp (outside the
	// tolerance), mismatch (no configured secret produces the signature),
	// body (the signature covers other bytes than those received), other.
	Reason string `json:"reason"`
	// SkewSeconds is, for reason timestamp, the signed timestamp minus the
	// time of the check: positive when the sender's clock is ahead,
	// negative when it is behind (or the request is a replay).
	SkewSeconds *int64 `json:"skew_seconds,omitempty"`
	// ClientIP is the client's address (Caddy's client_ip).
	ClientIP string `json:"client_ip"`
}

// StoreState is StatsAnswer's store.
type StoreState struct {
	// Available is false when the store did not answer.
	Available bool `json:"available"`
}

// SpoolInfo is what a node's spool holds: the events it accepted while
// its store was unreachable, not yet moved into it.
type SpoolInfo struct {
	// Events is how many events wait in the spool.
	Events int64 `json:"events"`
	// Bytes is their size on disk.
	Bytes int64 `json:"bytes"`
	// Oldest is when the first of them was spooled (absent: none).
	Oldest time.Time `json:"oldest,omitzero"`
}

// SourceStats is one source of StatsAnswer.
type SourceStats struct {
	// Queue is the source's queued and in-flight jobs and open DLQ entries.
	Queue storage.Counts `json:"queue"`
	// Windows are the source's counters (last_hour, all_time).
	Windows
	// Types has the source's counters by event type (absent when no event
	// had one).
	Types map[string]TypeStats `json:"types,omitempty"`
	// Destinations has the source's delivery results by destination
	// ("default" for forward_to's; absent when none was counted).
	Destinations map[string]DestinationStats `json:"destinations,omitempty"`
	// Secrets has, by position, which of the source's secrets verified
	// its requests and when each last did: every secret its scheme has
	// configured, so that an operator rotating one sees the old one stop
	// matching (absent when the scheme has no secret).
	Secrets []SecretStats `json:"secrets,omitempty"`
	// Tenants are the source's busiest tenants of the last hour, busiest
	// first, at most MaxTenantsListed, then "(other)" with every other
	// tenant (absent when no event of the hour had a tenant).
	Tenants []TenantStats `json:"tenants,omitempty"`
}

// SecretStats is one of a source's secrets in StatsAnswer, named by its
// position, never by its value.
type SecretStats struct {
	// Position is the secret's place among those configured, 1 for the
	// first (one whose placeholder resolved to nothing keeps its place).
	Position int `json:"position"`
	// LastMatched is when it last verified a request on any node sharing
	// the store, to the second (absent: never since counting began).
	LastMatched time.Time `json:"last_matched,omitzero"`
	// MatchesLastHour counts the requests it verified in the last hour.
	MatchesLastHour int64 `json:"matches_last_hour"`
	// MatchesAllTime counts the requests it verified since counting
	// began.
	MatchesAllTime int64 `json:"matches_all_time"`
}

// DestinationStats is one destination of a source in StatsAnswer.
type DestinationStats struct {
	// AllTime is since counting began.
	AllTime DestinationCounts `json:"all_time"`
	// LastHour sums the minute buckets of the last hour.
	LastHour DestinationCounts `json:"last_hour"`
}

// DestinationCounts is what was counted of one destination's deliveries
// over one window.
type DestinationCounts struct {
	// Dead counts the destination's deliveries moved to the DLQ.
	Dead int64 `json:"dead"`
	// Delivered counts the destination's deliveries the upstream accepted.
	Delivered int64 `json:"delivered"`
}

// TypeStats is one event type of a source in StatsAnswer.
type TypeStats struct {
	// AllTime is since counting began.
	AllTime TypeCounts `json:"all_time"`
	// LastHour sums the minute buckets of the last hour.
	LastHour TypeCounts `json:"last_hour"`
}

// TypeCounts is what was counted of one event type over one window.
type TypeCounts struct {
	// Dead counts deliveries moved to the DLQ.
	Dead int64 `json:"dead"`
	// Delivered counts deliveries the upstream accepted.
	Delivered int64 `json:"delivered"`
	// Received counts accepted webhooks.
	Received int64 `json:"received"`
}

// add adds n to the counter of outcome (accepted, delivered, dead);
// false for another outcome, counted nowhere.
func (c *TypeCounts) add(outcome string, n int64) bool {
	switch outcome {
	case "accepted":
		c.Received += n
	case "delivered":
		c.Delivered += n
	case "dead":
		c.Dead += n
	default:
		return false
	}
	return true
}

// Windows are counters over the last hour and all-time.
type Windows struct {
	// LastHour sums the minute buckets of the last hour.
	LastHour WindowStats `json:"last_hour"`
	// AllTime is since counting began.
	AllTime WindowStats `json:"all_time"`
}

// WindowStats is what was counted over one window, with the rates derived
// from it.
type WindowStats struct {
	// Counters are the raw counters: outcomes of the ingress (accepted,
	// duplicate, ignored, handshake, error codes in lower case) and of deliveries
	// (delivered, dead, retry, attempts).
	Counters map[string]int64 `json:"counters"`
	// Received counts accepted webhooks.
	Received int64 `json:"received"`
	// Duplicates counts webhooks answered as duplicates.
	Duplicates int64 `json:"duplicates"`
	// Ignored counts verified webhooks no destination takes (answered 200
	// "ignored", not stored).
	Ignored int64 `json:"ignored"`
	// Rejected sums the error codes.
	Rejected int64 `json:"rejected"`
	// Delivered counts deliveries the upstream accepted.
	Delivered int64 `json:"delivered"`
	// Dead counts deliveries moved to the DLQ.
	Dead int64 `json:"dead"`
	// SuccessRate is delivered / (delivered + dead); absent when undefined.
	SuccessRate *float64 `json:"success_rate,omitempty"`
	// DLQRate is dead / received; absent when undefined.
	DLQRate *float64 `json:"dlq_rate,omitempty"`
	// AvgAttempts is attempts / (delivered + dead); absent when undefined.
	AvgAttempts *float64 `json:"avg_attempts,omitempty"`
}

// EntryView answers GET /webhooks/dlq/{id}: the entry with credentials
// redacted (RedactHeaders, RedactURL) and its payload as text.
type EntryView struct {
	storage.DLQEntry
	// Payload is the payload as text when it is UTF-8, base64 otherwise.
	Payload string `json:"payload"`
	// PayloadEncoding is "text" or "base64".
	PayloadEncoding string `json:"payload_encoding"`
}

// StatusAnswer answers POST /webhooks/dlq/{id}/retry, resolve, discard
// and investigate.
type StatusAnswer struct {
	// ID is the DLQ entry's id.
	ID string `json:"id"`
	// Status is the entry's new status.
	Status storage.DLQStatus `json:"status"`
}

// PauseRequest is the optional body of POST
// /webhooks/sources/{source}/pause (and of a destination's or a tenant's);
// unknown fields
// are refused.
type PauseRequest struct {
	// Reason is shown wherever the pause is.
	Reason string `json:"reason"`
	// For is how long the pause lasts before it resumes by itself, a Go or
	// Caddy duration ("30m", "1d"); empty: until resumed.
	For string `json:"for"`
	// Accept true holds (202 and stored, deliveries wait); false refuses
	// with 503 + Retry-After. A destination's pause always holds.
	Accept bool `json:"accept"`
}

// PauseAnswer answers POST /webhooks/sources/{source}/pause and resume
// (and a destination's, and a tenant's).
type PauseAnswer struct {
	// Paused is the new state.
	Paused bool `json:"paused"`
	// Source is the source's name.
	Source string `json:"source"`
	// Destination is the destination's name (absent: the whole source).
	Destination string `json:"destination,omitempty"`
	// Tenant is the tenant's name (a tenant's pause only).
	Tenant string `json:"tenant,omitempty"`
	// Pause is the pause now in force (pause only).
	Pause *PauseInfo `json:"pause,omitempty"`
	// Resumed is the pause that ended (resume only; absent when there was
	// none).
	Resumed *PauseInfo `json:"resumed,omitempty"`
}

// PauseInfo is one pause as the API shows it.
type PauseInfo struct {
	// Source is the paused source.
	Source string `json:"source"`
	// Destination is the paused destination (absent: the whole source).
	Destination string `json:"destination,omitempty"`
	// Tenant is the paused tenant of the source (absent: not a tenant's
	// pause): its deliveries to every destination wait.
	Tenant string `json:"tenant,omitempty"`
	// Mode is "hold" (the ingress accepts, deliveries wait) or "refuse"
	// (503 + Retry-After).
	Mode string `json:"mode"`
	// Accept is true for a hold.
	Accept bool `json:"accept"`
	// Reason is the operator's text.
	Reason string `json:"reason,omitempty"`
	// Since is when the pause was set (absent for a pause made before
	// pause modes existed).
	Since time.Time `json:"since,omitzero"`
	// Until is when it resumes by itself (absent: when resumed).
	Until time.Time `json:"until,omitzero"`
	// Waiting counts the deliveries queued for it (stats only); for a
	// tenant, those already held in its own lanes (a delivery queued
	// before the pause moves there when its turn comes).
	Waiting int `json:"waiting"`
}

// BulkRetryRequest is the body of POST /webhooks/dlq/retry; every field
// is optional and unknown fields are refused.
type BulkRetryRequest struct {
	// Source selects the entries of one source.
	Source string `json:"source"`
	// Destination selects the entries of one destination ("default": the
	// source's forward_to); empty selects every destination's.
	Destination string `json:"destination,omitempty"`
	// Type selects the entries of one event type, exactly.
	Type string `json:"type,omitempty"`
	// Tenant selects the entries of one tenant (the account tenant_from
	// found), exactly.
	Tenant string `json:"tenant,omitempty"`
	// Status selects the entries in one status (default pending).
	Status string `json:"status"`
	// Since selects the entries dead-lettered since: an RFC 3339 time or
	// a duration ("24h": that long ago).
	Since string `json:"since"`
	// Limit is how many entries at most (default 100, at most 1000).
	Limit int `json:"limit"`
	// Cursor goes on where an earlier answer's next_cursor left off.
	Cursor string `json:"cursor,omitempty"`
	// DryRun changes nothing and says what would be re-enqueued.
	DryRun bool `json:"dry_run"`
}

// BulkRetryAnswer answers POST /webhooks/dlq/retry.
type BulkRetryAnswer struct {
	// DryRun is the request's dry_run.
	DryRun bool `json:"dry_run"`
	// Matched counts the entries the filter selected.
	Matched int `json:"matched"`
	// Retried are the entries re-enqueued (dry: that would be).
	Retried []string `json:"retried"`
	// SkippedDelivered are entries whose event was delivered meanwhile.
	SkippedDelivered []string `json:"skipped_delivered"`
	// Failed are the entries whose retry failed, with why.
	Failed map[string]string `json:"failed,omitempty"`
	// Spread is how long the re-enqueued events are spread over.
	Spread string `json:"spread,omitempty"`
	// NextCursor, when present, goes on with the entries this request did
	// not reach: it stopped at its limit or at its scan budget (20 index
	// entries per entry of limit), so a narrow filter over a large DLQ
	// answers in bounded time.
	NextCursor string `json:"next_cursor,omitempty"`
}

// ReplayRequest is the body of POST /webhooks/events/replay; every field
// is optional and unknown fields are refused.
type ReplayRequest struct {
	// Source selects the events of one source.
	Source string `json:"source"`
	// Destination selects the deliveries of one destination ("default":
	// the source's forward_to); empty selects every destination's.
	Destination string `json:"destination,omitempty"`
	// Type selects the events of one event type, exactly.
	Type string `json:"type,omitempty"`
	// Tenant selects the events of one tenant (the account tenant_from
	// found), exactly.
	Tenant string `json:"tenant,omitempty"`
	// ID selects one event by its internal id (its deliveries).
	ID string `json:"id,omitempty"`
	// Since selects the events delivered since: an RFC 3339 time or a
	// duration ("24h": that long ago).
	Since string `json:"since,omitempty"`
	// Until selects the events delivered until, as Since.
	Until string `json:"until,omitempty"`
	// Limit is how many events at most (default 100, at most 1000).
	Limit int `json:"limit,omitempty"`
	// Cursor goes on where an earlier answer's next_cursor left off.
	Cursor string `json:"cursor,omitempty"`
	// DryRun changes nothing and names the events that would be replayed.
	DryRun bool `json:"dry_run"`
}

// ReplayedEvent names one replayed delivery of ReplayAnswer.
type ReplayedEvent struct {
	// ID is the delivery's internal id (the event's own for the default
	// destination, <id>~<destination> for another).
	ID string `json:"id"`
	// EventID is the provider's event id (or the generated one).
	EventID string `json:"event_id"`
	// Source is the event's source.
	Source string `json:"source"`
	// Destination is the name of the destination the delivery is sent to
	// again ("default": the source's forward_to).
	Destination string `json:"destination,omitempty"`
	// Type is the event's type, if its source found one.
	Type string `json:"type,omitempty"`
	// Tenant is the event's tenant, if its source found one.
	Tenant string `json:"tenant,omitempty"`
}

// ReplayAnswer answers POST /webhooks/events/replay.
type ReplayAnswer struct {
	// DryRun is the request's dry_run.
	DryRun bool `json:"dry_run"`
	// Matched counts the delivered events the filter selected.
	Matched int `json:"matched"`
	// Replayed are the events re-enqueued (dry: that would be), in order.
	Replayed []ReplayedEvent `json:"replayed"`
	// Failed are the events (by internal id) whose replay failed, with why.
	Failed map[string]string `json:"failed,omitempty"`
	// Spread is how long the re-enqueued events are spread over.
	Spread string `json:"spread,omitempty"`
	// NextCursor, when present, goes on with the events this request did
	// not reach: it stopped at its limit or at its scan budget (20 index
	// entries per event of limit).
	NextCursor string `json:"next_cursor,omitempty"`
}

// EraseAnswer answers DELETE /webhooks/events/{source}/{event_id}.
type EraseAnswer struct {
	// Erased is true: the event is gone (a refusal is an ErrorAnswer).
	Erased bool `json:"erased"`
	// Source is the erased event's source, as named in the path.
	Source string `json:"source"`
	// EventID is the erased event's id, as named in the path.
	EventID string `json:"event_id"`
	// ID is the erased event's internal id.
	ID string `json:"id"`
	// Deliveries counts the deliveries removed (each with its job, its
	// DLQ entry, or both).
	Deliveries int `json:"deliveries"`
	// DLQEntries counts the DLQ entries removed.
	DLQEntries int `json:"dlq_entries"`
	// DedupeUntil is when the claim kept on (source, event id) expires:
	// until then a resend is answered 200 duplicate, status "erased", and
	// not stored (absent: no claim is kept).
	DedupeUntil time.Time `json:"dedupe_until,omitzero"`
}
