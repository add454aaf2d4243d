package storage

// Replay: re-sending events already delivered (still within retention).
// An operator lists delivered events (ListDelivered) and re-enqueues each
// (Replay) in its source's replay lane, so that a replay backlog takes
// turns with live traffic instead of holding it back. The rules are the
// functions below; the backends only persist.

import (
	"strings"
	"time"
)

// replayLaneSuffix marks a source's replay lane. Source names are letters,
// digits, '.', '_' and '-', so no source lane ends with it.
const replayLaneSuffix = "~replay"

// LaneOf is the lane of a job's event: its source, or its source's replay
// lane for a replayed event. Every lane name is decided here.
func LaneOf(ev *Event) string {
	if ev.Replay {
		return ev.Source + replayLaneSuffix
	}
	return ev.Source
}

// LanesOf lists the lanes of source's jobs (its own, then its replay
// lane): the gate treats them alike (skip, cap, pace).
func LanesOf(source string) []string {
	return []string{source, source + replayLaneSuffix}
}

// SourceOfLane is the source whose jobs lane holds.
func SourceOfLane(lane string) string {
	return strings.TrimSuffix(lane, replayLaneSuffix)
}

// PaceOf names the pace a lane takes its slots from (Gate.Pace holds
// each lane's rate): a source's lanes share one, so that its replays and
// its live traffic together stay within its rate_limit. The backends key
// their pacing state by it.
func PaceOf(lane string) string { return SourceOfLane(lane) }

// Limits of a replay: those of a bulk DLQ retry.
const (
	ReplayDefaultLimit = 100
	ReplayMaxLimit     = DLQMaxLimit
)

// ReplayFilter selects delivered events to replay. Zero fields match
// everything.
type ReplayFilter struct {
	Source string
	Type   string    // the event type, exactly
	Since  time.Time // delivered at or after
	Until  time.Time // delivered at or before
	Limit  int       // 0 means ReplayDefaultLimit; at most ReplayMaxLimit
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
	return (f.Source == "" || ev.Source == f.Source) && (f.Type == "" || ev.Type == f.Type)
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
