package delivery

import (
	"fmt"
	"time"
)

// MinStartWindow is the least time a leased job must have, after its lease
// is taken, to start its attempt: the dispatcher hands a job back (no
// attempt) when less than its timeout plus AttemptMargin is left on the
// lease, so with a smaller window any wait for a worker or a rate limiter
// turns into lease, release, lease again.
const MinStartWindow = 100 * time.Millisecond

// maxAttemptMargin is the most lease time, beyond an attempt's timeout,
// that must be left for the attempt to start.
const maxAttemptMargin = time.Second

// AttemptMargin is the lease time, beyond an attempt's timeout, that must
// be left for the attempt to start: 1s, less with short leases (half of
// what the lease leaves beyond the timeout).
func AttemptMargin(timeout, lease time.Duration) time.Duration {
	return min(maxAttemptMargin, (lease-timeout)/2)
}

// EffectiveTimeout is the per-attempt timeout of a target under lease: the
// configured one when set (> 0), else DefaultTimeout capped at half the
// lease, so that a short lease without a timeout still works. It is the
// one rule for every target: sources, the alert target, and jobs whose
// source left the config. A lease <= 0 means DefaultLease.
func EffectiveTimeout(configured, lease time.Duration) time.Duration {
	if configured > 0 {
		return configured
	}
	if lease <= 0 {
		lease = DefaultLease
	}
	return min(DefaultTimeout, lease/2)
}

// CheckTimeout reports whether an attempt timeout fits the lease: shorter
// than the lease by enough to leave the attempt at least MinStartWindow to
// start once the dispatcher's AttemptMargin is kept. A timeout <= 0 stands
// for EffectiveTimeout's default, which always fits a lease of 1s or more.
func CheckTimeout(timeout, lease time.Duration) error {
	if lease <= 0 {
		lease = DefaultLease
	}
	timeout = EffectiveTimeout(timeout, lease)
	if timeout >= lease {
		return fmt.Errorf("timeout %s must be shorter than the webhooks lease %s (a delivery attempt must end before its lease does; raise lease or lower timeout)", timeout, lease)
	}
	if window := lease - timeout - AttemptMargin(timeout, lease); window < MinStartWindow {
		return fmt.Errorf("timeout %s leaves too little of the webhooks lease %s to start an attempt (%s, want at least %s; raise lease or lower timeout)",
			timeout, lease, window, MinStartWindow)
	}
	return nil
}
