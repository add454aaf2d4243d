package operator

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The stats counters kept for the time series (GET /webhooks/stats/series),
// beside a source's plain counters, in the same minute and hour buckets:
//
//	fail:<class>              failed delivery attempts by FailureClass
//	latency:<i>               delivery attempts whose duration falls in
//	                          LatencyBounds' bucket i (len: over the last)
//	attempts:<result>:<n>     deliveries delivered or dead at their n-th
//	                          attempt (n capped at MaxAttemptsCounted)
//	error:<message>           failed attempts by NormalizeError(message)
//	gauge:dlq_open            the open DLQ entries, sampled (a gauge: the
//	                          last sample of a bucket is its value)
//
// None of them is a plain counter: the stats' windows leave them out.
const (
	failureCounterPrefix  = "fail:"
	latencyCounterPrefix  = "latency:"
	attemptsCounterPrefix = "attempts:"
	errorCounterPrefix    = "error:"
	gaugePrefix           = "gauge:"
)

// DLQSizeGauge is the stats gauge of a source's open DLQ entries (pending
// or investigating), sampled by every node (storage.SetStatsGauges).
const DLQSizeGauge = gaugePrefix + "dlq_open"

// SeriesOnly reports whether a source's counters c are all the time
// series' (a source with only a DLQ size sample is not one the plain stats
// list).
func SeriesOnly(c map[string]int64) bool {
	for name := range c {
		if !SeriesCounter(name) {
			return false
		}
	}
	return true
}

// SeriesCounter reports whether name is one of the time series' counters
// or gauges, kept apart from the plain ones: read over windows only, never
// as all-time totals (storage.StatsBatch.Window).
func SeriesCounter(name string) bool {
	for _, p := range []string{failureCounterPrefix, latencyCounterPrefix, attemptsCounterPrefix, errorCounterPrefix, gaugePrefix, tenantCounterPrefix} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// LatencyBounds are the upper bounds (seconds) of the delivery latency
// buckets counted for the time series; percentiles are interpolated
// linearly within a bucket (as Prometheus' histogram_quantile does), so
// they are estimates no finer than these bounds.
var LatencyBounds = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// LatencyCounter is the counter of the latency bucket holding d.
func LatencyCounter(d time.Duration) string {
	s := d.Seconds()
	i := 0
	for i < len(LatencyBounds) && s > LatencyBounds[i] {
		i++
	}
	return latencyCounterPrefix + strconv.Itoa(i)
}

// The failure classes of delivery attempts.
const (
	Failure4xx        = "4xx"
	Failure5xx        = "5xx"
	FailureConnection = "connection" // no answer: refused, reset, timeout
	FailureOther      = "other"      // any other status (1xx, 3xx)
)

// FailureClass is the class of a failed attempt answered status (0: none).
func FailureClass(status int) string {
	switch {
	case status == 0:
		return FailureConnection
	case status >= 400 && status < 500:
		return Failure4xx
	case status >= 500 && status < 600:
		return Failure5xx
	}
	return FailureOther
}

// FailureCounter is the counter of failed attempts answered status.
func FailureCounter(status int) string { return failureCounterPrefix + FailureClass(status) }

// MaxAttemptsCounted caps the attempt number of the attempts
// distribution: deliveries ending at a later attempt count as its.
const MaxAttemptsCounted = 10

// AttemptsCounter is the counter of the deliveries that ended (result
// "delivered" or "dead") at attempt n.
func AttemptsCounter(result string, n int) string {
	n = min(max(n, 1), MaxAttemptsCounted)
	return attemptsCounterPrefix + result + ":" + strconv.Itoa(n)
}

// maxErrorLen bounds a normalized error message, in bytes.
const maxErrorLen = 100

// NormalizeError is the message under which a failed attempt's error is
// counted: digit runs of four or more (ports, ids, byte counts) become
// "N", so that "dial tcp 10.0.0.7:41234: connection refused" counts once
// per host; three-digit statuses stay. Cut to maxErrorLen bytes.
func NormalizeError(msg string) string {
	var b strings.Builder
	for i := 0; i < len(msg); {
		j := i
		for j < len(msg) && msg[j] >= '0' && msg[j] <= '9' {
			j++
		}
		switch {
		case j-i >= 4:
			b.WriteByte('N')
			i = j
		case j > i:
			b.WriteString(msg[i:j])
			i = j
		default:
			b.WriteByte(msg[i])
			i++
		}
	}
	s := strings.TrimSpace(b.String())
	if len(s) > maxErrorLen {
		s = s[:maxErrorLen]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	if s == "" {
		s = "(no message)"
	}
	return s
}

// ErrorCounter is the counter of failed attempts whose error normalizes
// to msg (NormalizeError already applied: the caller bounds how many it
// counts apart).
func ErrorCounter(msg string) string { return errorCounterPrefix + msg }
