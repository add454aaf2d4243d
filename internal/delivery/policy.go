// Package delivery delivers queued webhooks to the upstream app: the
// retry policy (exponential backoff with jitter, or an explicit schedule),
// the classification of upstream answers, and the worker pool that leases
// due jobs from a storage.Queue. It has no Caddy imports.
package delivery

import (
	"fmt"
	"math"
	"time"
)

// Policy decides how often and when a failed delivery is tried again. It
// is the runtime form of a source's retry config (the webhook_ingress
// handler's RetryConfig, its Caddyfile retry block, compiles into it).
type Policy struct {
	// MaxAttempts is the number of attempts, the first included.
	MaxAttempts int
	// Initial is the first backoff delay; each next one is Multiplier
	// times longer, up to Max.
	Initial    time.Duration
	Max        time.Duration
	Multiplier float64
	// Jitter spreads every delay by ±Jitter (a fraction; 0: none).
	Jitter float64
	// Schedule, when set, is the delay after each failed attempt in place
	// of the backoff (the last one repeats).
	Schedule []time.Duration
}

// Defaults: ten attempts over about 17 minutes (1s, 2s, 4s … capped at
// 15m), ±10% jitter. Long enough to ride out an upstream deploy, short
// enough that a broken upstream shows up in the DLQ the same hour.
const (
	DefaultMaxAttempts = 10
	DefaultInitial     = time.Second
	DefaultMax         = 15 * time.Minute
	DefaultMultiplier  = 2.0
	DefaultJitter      = 0.1
)

// WithDefaults fills zero fields (Jitter excepted: zero means none).
func (p Policy) WithDefaults() Policy {
	if p.MaxAttempts == 0 {
		p.MaxAttempts = DefaultMaxAttempts
		if len(p.Schedule) > 0 {
			p.MaxAttempts = len(p.Schedule) + 1
		}
	}
	if p.Initial == 0 {
		p.Initial = DefaultInitial
	}
	if p.Max == 0 {
		p.Max = DefaultMax
		if p.Max < p.Initial {
			p.Max = p.Initial
		}
	}
	if p.Multiplier == 0 {
		p.Multiplier = DefaultMultiplier
	}
	return p
}

// Validate reports a policy that cannot work.
func (p Policy) Validate() error {
	switch {
	case p.MaxAttempts < 1:
		return fmt.Errorf("max_attempts must be at least 1")
	case p.Initial <= 0 || p.Max < p.Initial:
		return fmt.Errorf("backoff needs 0 < initial <= max")
	case p.Multiplier < 1:
		return fmt.Errorf("backoff multiplier must be >= 1")
	case p.Jitter < 0 || p.Jitter >= 1:
		return fmt.Errorf("backoff jitter must be in [0, 1)")
	}
	for _, d := range p.Schedule {
		if d <= 0 {
			return fmt.Errorf("schedule delays must be positive")
		}
	}
	return nil
}

// Delay is the wait after the failed attempt number attempt (1-based).
// rnd returns a number in [0, 1); it spreads the delay by ±Jitter so that
// many jobs failing together do not come back together.
func (p Policy) Delay(attempt int, rnd func() float64) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	var d time.Duration
	if n := len(p.Schedule); n > 0 {
		d = p.Schedule[min(attempt, n)-1]
	} else {
		f := float64(p.Initial) * math.Pow(p.Multiplier, float64(attempt-1))
		if f >= float64(p.Max) || math.IsNaN(f) {
			d = p.Max // not via float64: a Max near MaxInt64 would overflow
		} else {
			d = time.Duration(f)
		}
	}
	if p.Jitter > 0 && rnd != nil {
		f := float64(d) * (1 + p.Jitter*(2*rnd()-1))
		if f >= math.MaxInt64 { // float64(MaxInt64) is 2^63: out of range
			d = math.MaxInt64
		} else {
			d = time.Duration(f)
		}
	}
	return max(d, time.Millisecond)
}
