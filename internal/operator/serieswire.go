package operator

import "time"

// RangeStatsAnswer answers GET /webhooks/stats with from, to, source or
// type: the counters over the window, with getWebhookStats' fields (in
// snake case, rates in percent), in total and by source with each
// source's health.
type RangeStatsAnswer struct {
	// From is the window's start, rounded down to its buckets.
	From time.Time `json:"from"`
	// To is the window's end.
	To time.Time `json:"to"`
	// Resolution is the buckets read: "minute" (windows within the last
	// 48 hours) or "hour".
	Resolution string `json:"resolution"`
	// Source is the source asked for ("": every source).
	Source string `json:"source,omitempty"`
	// Type is the event type asked for ("": every type).
	Type string `json:"type,omitempty"`
	// Tenant is the tenant asked for, as the stores keep it ("": every
	// tenant); its counts are those of the hours it was among its
	// source's busiest, "(other)" counting the rest.
	Tenant string `json:"tenant,omitempty"`
	// RangeCounts sums the counters of the sources asked for.
	RangeCounts
	// Sources has each source's counters and health: the one asked
	// for, or every configured source and every source counted.
	Sources map[string]SourceRange `json:"sources"`
}

// RangeCounts is what was counted over a window, as getWebhookStats
// names it.
type RangeCounts struct {
	// Total counts the webhooks accepted (stored).
	Total int64 `json:"total"`
	// Completed counts the deliveries the upstream accepted.
	Completed int64 `json:"completed"`
	// Pending is the deliveries queued or in flight now.
	Pending int `json:"pending"`
	// Failed counts the failed delivery attempts (retried or dead; null
	// by type: attempts are not counted by type).
	Failed *int64 `json:"failed"`
	// DeadLetter counts the deliveries moved to the DLQ.
	DeadLetter int64 `json:"dead_letter"`
	// TotalRetries counts the attempts that were retried (null by type).
	TotalRetries *int64 `json:"total_retries"`
	// AverageRetries is TotalRetries per finished delivery (null when
	// none finished, or by type).
	AverageRetries *float64 `json:"average_retries"`
	// SuccessRate is Completed out of the finished deliveries (completed
	// or dead), in percent (null when none finished).
	SuccessRate *float64 `json:"success_rate"`
	// DeadLetterRate is DeadLetter out of Total, in percent (null when
	// nothing was accepted).
	DeadLetterRate *float64 `json:"dead_letter_rate"`
}

// SourceRange is one source of RangeStatsAnswer: its counters over the
// window and its health now.
type SourceRange struct {
	RangeCounts
	// ReceivedPerMinute is Total over the window's minutes.
	ReceivedPerMinute float64 `json:"received_per_minute"`
	// OpenDLQ is the source's DLQ entries pending or under investigation.
	OpenDLQ int `json:"open_dlq"`
	// OldestQueuedAgeSeconds is how long the source's longest-waiting
	// delivery has been due without being delivered (0: none waits).
	OldestQueuedAgeSeconds float64 `json:"oldest_queued_age_seconds"`
	// Paused says whether the source as a whole is paused.
	Paused bool `json:"paused"`
	// BreakerOpen says whether this node holds deliveries of the source
	// for an open (or half-open) circuit breaker of one of its upstreams.
	BreakerOpen bool `json:"breaker_open"`
}

// SeriesAnswer answers GET /webhooks/stats/series: one point per step
// over the window (every step, zeros included), and the window's
// attempts distribution and most frequent errors.
type SeriesAnswer struct {
	// Source is the source asked for ("": every source summed).
	Source string `json:"source,omitempty"`
	// From is the first point's start (from rounded down to the step).
	From time.Time `json:"from"`
	// To is the window's end.
	To time.Time `json:"to"`
	// StepSeconds is the width of a point.
	StepSeconds int64 `json:"step_seconds"`
	// StepRoundedFrom is the step the request asked for (a Go duration,
	// "10s") when it was rounded up to StepSeconds: to whole minutes, the
	// finest counters kept, or to whole hours for a window older than the
	// minute counters. Absent when the step was used as asked.
	StepRoundedFrom string `json:"step_rounded_from,omitempty"`
	// Resolution is the buckets read: "minute" or "hour".
	Resolution string `json:"resolution"`
	// LatencyBoundsSeconds are the latency buckets' upper bounds the
	// percentiles are interpolated in.
	LatencyBoundsSeconds []float64 `json:"latency_bounds_seconds"`
	// Points are the steps, oldest first.
	Points []SeriesPoint `json:"points"`
	// Attempts is the attempts distribution over the window: by result
	// (delivered, dead), how many deliveries ended at each attempt
	// number (the last, "10", counts 10 and more).
	Attempts map[string]map[string]int64 `json:"attempts"`
	// TopErrors are the most frequent failed attempts' errors over the
	// window (normalized: long digit runs read "N"), most frequent first.
	TopErrors []ErrorCount `json:"top_errors"`
}

// SeriesPoint is one step of SeriesAnswer.
type SeriesPoint struct {
	// Time is the step's start.
	Time time.Time `json:"t"`
	// Received counts the webhooks accepted.
	Received int64 `json:"received"`
	// Delivered counts the deliveries the upstream accepted.
	Delivered int64 `json:"delivered"`
	// Dead counts the deliveries moved to the DLQ.
	Dead int64 `json:"dead"`
	// Retries counts the failed attempts that were retried.
	Retries int64 `json:"retries"`
	// Failed counts the failed attempts by class: 4xx, 5xx, connection
	// (no answer: refused, reset, timeout) and other.
	Failed map[string]int64 `json:"failed"`
	// SuccessRate is Delivered out of Delivered and Dead, in percent
	// (null when none finished).
	SuccessRate *float64 `json:"success_rate"`
	// DLQSize is the open DLQ entries at the step's last sample (taken
	// every minute by each node; null when none was taken).
	DLQSize *int64 `json:"dlq_size"`
	// Latency is the delivery attempts' duration percentiles (null when
	// no attempt was made).
	Latency *Percentiles `json:"latency"`
}

// Percentiles are latency percentiles in seconds, interpolated within
// LatencyBoundsSeconds' buckets.
type Percentiles struct {
	// P50 is the median.
	P50 float64 `json:"p50"`
	// P95 is the 95th percentile.
	P95 float64 `json:"p95"`
	// P99 is the 99th percentile.
	P99 float64 `json:"p99"`
}

// ErrorCount is one error message of SeriesAnswer.TopErrors.
type ErrorCount struct {
	// Message is the normalized error.
	Message string `json:"message"`
	// Count is how many failed attempts had it.
	Count int64 `json:"count"`
}
