package operator

import (
	"context"
	"errors"
	"time"

	"github.com/hookline/hookline/storage"
)

// App is what the operator API needs of the webhooks app: the operations
// behind its routes, and nothing of the store. *webhooks.App implements it.
//
// Errors are the store's (storage.ErrDLQNotFound, storage.ErrNotFound,
// storage.ErrConflict, storage.ErrInvalidCursor) or wrap
// storage.ErrUnavailable; the API maps them to 404, 409, 400 and 503.
type App interface {
	// Available reports whether the app's store can be reached, opening
	// it if needed: nil, or an error wrapping storage.ErrUnavailable.
	Available() error

	// Stats reads the queue's sizes and, by webhook source, the counters
	// since since and all-time.
	Stats(ctx context.Context, since time.Time) (Stats, error)
	// StatsBuckets reads the webhook sources' stats buckets of res
	// starting in [from, to), oldest first (storage.Operations.StatsBuckets;
	// the app's internal sources left out).
	StatsBuckets(ctx context.Context, res storage.StatsResolution, from, to time.Time) ([]storage.StatsBucket, error)
	// Health reads, by webhook source (every configured one, and any
	// with queued deliveries), what the health table shows beside the
	// counters (Health).
	Health(ctx context.Context) (map[string]Health, error)
	// Pauses lists the pauses in force as this node knows them.
	Pauses() []storage.Pause
	// SetPause pauses a source, one of its destinations or one of its
	// tenants, or changes its pause, for every node
	// (storage.ErrUnknownDestination: the configured source has no such
	// destination).
	SetPause(ctx context.Context, p storage.Pause) error
	// Resume ends the pause of a source (destination "") or of one of its
	// destinations for every node; ok false: there was none.
	Resume(ctx context.Context, source, destination string) (p storage.Pause, ok bool, err error)
	// ResumeTenant ends the pause of one tenant of source for every node;
	// ok false: there was none.
	ResumeTenant(ctx context.Context, source, tenant string) (p storage.Pause, ok bool, err error)
	// LookupEvent says where the event eventID of source is.
	LookupEvent(ctx context.Context, source, eventID string) (*storage.EventInfo, error)
	// ListEvents lists the stored events matching f, newest first, a
	// page at a time (storage.Browser).
	ListEvents(ctx context.Context, f storage.EventFilter) (storage.EventPage, error)
	// EraseEvent erases the event eventID of source for good (GDPR):
	// everything stored of it but its claim (storage.Eraser);
	// storage.ErrNotFound when nothing of it is stored.
	EraseEvent(ctx context.Context, source, eventID string) (storage.EraseResult, error)
	// EraseTenant starts (or resumes) erasing every event of tenant of
	// source in the background (storage.EraseTenant); one running already
	// in this process is returned as it is (started false).
	EraseTenant(ctx context.Context, source, tenant string, o storage.TenantEraseOptions) (p storage.TenantErasure, started bool, err error)
	// TenantErasure is the progress of the erasure of tenant of source
	// (storage.ErrNotFound: none was started).
	TenantErasure(ctx context.Context, source, tenant string) (storage.TenantErasure, error)

	// ListDead lists DLQ entries matching f, newest first.
	ListDead(ctx context.Context, f storage.DLQFilter) (storage.DLQPage, error)
	// GetDead returns one DLQ entry with its payload.
	GetDead(ctx context.Context, id string) (*storage.DLQEntry, error)
	// RedactPayload returns a stored payload of source as the API shows
	// it: with the secrets its scheme carries in the body (Microsoft
	// Graph's clientState) replaced; payload itself is not modified.
	RedactPayload(source string, payload []byte) []byte
	// RetryDead re-enqueues the event of DLQ entry id, due now, with a
	// fresh attempt budget.
	RetryDead(ctx context.Context, id string) error
	// RedriveDead re-enqueues the DLQ entries matching f (one page of
	// them: at most f.EffectiveLimit(), after f.Cursor), paced, skipping
	// events delivered meanwhile; dryRun changes nothing. Its error is a
	// failure to list the entries.
	RedriveDead(ctx context.Context, f storage.DLQFilter, dryRun bool) (Redrive, error)
	// ReplayDelivered re-enqueues the delivered events matching f (one
	// page of them: at most f.EffectiveLimit(), after f.Cursor) in their
	// sources' replay lanes, paced as a bulk retry; dryRun changes
	// nothing. Its error is a failure to list the events.
	ReplayDelivered(ctx context.Context, f storage.ReplayFilter, dryRun bool) (Replay, error)
	// SetDeadStatus moves DLQ entry id to investigating, resolved or
	// discarded, with the operator's note, resolution or reason.
	SetDeadStatus(ctx context.Context, id string, status storage.DLQStatus, text string) error

	// Encryption says whether payloads are encrypted at rest.
	Encryption() EncryptionInfo
	// StartRekey starts re-encrypting every stored record under the
	// first key in the background, or returns the rekey running already
	// (started false); storage.ErrNoKey without a key.
	StartRekey(ctx context.Context, o storage.RekeyOptions) (p storage.RekeyProgress, started bool, err error)
	// RekeyStatus is the progress of the running or last rekey.
	RekeyStatus(ctx context.Context) (storage.RekeyProgress, error)
}

// ErrNotRunning is the error of an app lookup when no webhooks app runs:
// the API answers it 404, with this text.
var ErrNotRunning = errors.New("the webhooks app is not running (no webhook_ingress and no webhooks option in the config)")

// Stats is what the app counts, as App.Stats reads it.
type Stats struct {
	// Queue is the queue's current sizes, Dead counting open DLQ entries.
	Queue storage.Counts
	// Lanes are the queued and in-flight jobs by lane (storage.LaneOf).
	Lanes map[string]storage.Counts
	// Sources are the webhook sources (the app's internal ones left out)
	// by name.
	Sources map[string]SourceCounts
	// Unavailable is true when the store did not answer and the node
	// spools: Queue, Lanes and Sources are then empty.
	Unavailable bool
	// Spool is the node's spool (nil: none).
	Spool *SpoolInfo
	// SignatureFailures are the last failed signature checks of this
	// node, by source.
	SignatureFailures map[string][]SignatureFailure
}

// SourceCounts is one source of Stats.
type SourceCounts struct {
	// Queue is the source's queued and in-flight jobs and open DLQ entries.
	Queue storage.Counts
	// Recent are the source's counters since the time given to App.Stats.
	Recent map[string]int64
	// AllTime are the source's counters since it was first counted.
	AllTime map[string]int64
	// Secrets is how many secrets the source's scheme has configured on
	// this node (0: it has none, or does not tell which matched).
	Secrets int
}

// Redrive is what a bulk retry did (or, dry, would do).
type Redrive struct {
	// Matched counts the entries the filter selected.
	Matched int
	// Retried are the entries re-enqueued (dry: that would be).
	Retried []string
	// SkippedDelivered are entries whose event was delivered meanwhile.
	SkippedDelivered []string
	// Failed are the entries whose retry failed, with the store's error.
	Failed map[string]error
	// Spread is how long the re-enqueued events are spread over.
	Spread time.Duration
	// NextCursor goes on with the entries the page did not reach ("":
	// none is left).
	NextCursor string
}

// Replay is what a replay of delivered events did (or, dry, would do).
type Replay struct {
	// Matched counts the delivered events the filter selected.
	Matched int
	// Replayed are the events re-enqueued (dry: that would be).
	Replayed []ReplayedEvent
	// Failed are the events (by internal id) whose replay failed, with
	// the store's error (storage.ErrConflict: replayed meanwhile).
	Failed map[string]error
	// Spread is how long the re-enqueued events are spread over.
	Spread time.Duration
	// NextCursor goes on with the events the page did not reach ("":
	// none is left).
	NextCursor string
}

// Health is one source's delivery health now, as App.Health reads it.
type Health struct {
	// OldestQueuedAge is how long the source's longest-waiting delivery
	// has been due (storage.QueueHeads; 0: none is due).
	OldestQueuedAge time.Duration
	// BreakerOpen says whether this node's circuit breaker of one of the
	// source's upstreams holds its deliveries.
	BreakerOpen bool
}
