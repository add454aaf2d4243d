package delivery

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"
	"go.uber.org/zap"
)

// Breakers holds one circuit breaker per destination: per upstream URL
// (BreakerName), so that one failing path never holds another's
// deliveries on the same host:port (everything behind one local reverse
// proxy is the common case). While open, a breaker lets one trial through
// every open period (DefaultBreakerOpen: 2 s), so a recovered upstream gets
// its first delivery within that. The app keeps one Breakers per store in
// a caddy.UsagePool, so that a reload neither closes an open breaker nor
// lets two configs' dispatchers count failures apart.
type Breakers struct {
	failures uint32
	open     time.Duration
	log      *zap.Logger

	mu sync.Mutex
	m  map[string]*gobreaker.CircuitBreaker[int]

	// trials holds, for each open breaker, when it lets its next trial
	// through (NextTrial); leased, for a half-open breaker whose trial job
	// is leased but not yet tried, until when that holds its other jobs
	// back (leaseTrial). Their own lock: trials is written from the
	// breakers' state changes.
	trialMu sync.Mutex
	trials  map[string]time.Time
	leased  map[string]time.Time
	nLeased atomic.Int32 // len(leased), read without the lock by endTrial

	onChange atomic.Pointer[func(upstream string, open bool)]
}

// OnChange sets the function told when an upstream's breaker opens (open
// true) or closes, replacing the one set before: the breakers outlive a
// reload, and the newest config's app is the one to tell.
func (b *Breakers) OnChange(f func(upstream string, open bool)) { b.onChange.Store(&f) }

// NewBreakers makes a set of breakers that open after failures
// consecutive transient failures and stay open for open (zero values:
// DefaultBreakerFailures, DefaultBreakerOpen).
func NewBreakers(failures uint32, open time.Duration, log *zap.Logger) *Breakers {
	if failures == 0 {
		failures = DefaultBreakerFailures
	}
	if open <= 0 {
		open = DefaultBreakerOpen
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Breakers{failures: failures, open: open, log: log, m: make(map[string]*gobreaker.CircuitBreaker[int]),
		trials: make(map[string]time.Time), leased: make(map[string]time.Time)}
}

// BreakerName is the name of an upstream URL's breaker, the one rule for
// which deliveries share a breaker: one per scheme, host and path (a
// destination). The name is the scheme and host, then "#" and the first 8
// hex digits of the path's SHA-256 when there is a path: it reaches logs,
// metrics and Caddy events, and a path may hold a token (a chat service's
// incoming-webhook URL), as user info, query and fragment may (never part
// of it).
func BreakerName(upstream string) string {
	u, err := url.Parse(upstream)
	if err != nil || u.Host == "" {
		return "(invalid upstream)"
	}
	name := u.Scheme + "://" + u.Host
	if p := u.EscapedPath(); p != "" && p != "/" {
		sum := sha256.Sum256([]byte(p))
		name += "#" + hex.EncodeToString(sum[:4])
	}
	return name
}

// get returns the upstream's breaker, made on first use.
func (b *Breakers) get(upstream string) *gobreaker.CircuitBreaker[int] {
	key := BreakerName(upstream)
	b.mu.Lock()
	defer b.mu.Unlock()
	cb, ok := b.m[key]
	if !ok {
		failures, log, onChange := b.failures, b.log, &b.onChange
		cb = gobreaker.NewCircuitBreaker[int](gobreaker.Settings{
			Name:        key,
			MaxRequests: 1,
			Timeout:     b.open,
			ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= failures },
			OnStateChange: func(name string, from, to gobreaker.State) {
				b.trialMu.Lock()
				if to == gobreaker.StateOpen {
					b.trials[name] = time.Now().Add(b.open)
				} else {
					delete(b.trials, name)
				}
				b.trialMu.Unlock()
				log.Warn("upstream circuit breaker", zap.String("upstream", name),
					zap.String("from", from.String()), zap.String("to", to.String()))
				if f := onChange.Load(); f != nil && to != gobreaker.StateHalfOpen {
					go (*f)(name, to == gobreaker.StateOpen) // not under the breaker's lock: handlers may take time
				}
			},
		})
		b.m[key] = cb
	}
	return cb
}

// holds reports whether deliveries to the upstream must wait (its
// breaker is open, or half-open with its one trial request under way) and
// whether at most one may go (half-open, trial not started). It makes no
// breaker for an upstream never tried.
func (b *Breakers) holds(upstream string) (wait, trial bool) {
	name := BreakerName(upstream)
	b.mu.Lock()
	cb, ok := b.m[name]
	b.mu.Unlock()
	if !ok {
		return false, false
	}
	switch cb.State() { // State also moves an expired open breaker to half-open
	case gobreaker.StateOpen:
		return true, false
	case gobreaker.StateHalfOpen:
		if cb.Counts().Requests > 0 || b.trialLeased(name) {
			return true, false
		}
		return false, true
	}
	return false, false
}

// leaseTrial records that the trial job of a half-open breaker was
// leased: until it is tried (endTrial), or for one open period at most
// (a trial job handed back untried must not hold the others for good), the
// breaker's other jobs are held instead of leased one by one and handed
// back (gobreaker lets one request through at a time, and a leased job
// may wait for a worker before it gets there).
func (b *Breakers) leaseTrial(name string) {
	b.trialMu.Lock()
	if _, ok := b.leased[name]; !ok {
		b.nLeased.Add(1)
	}
	b.leased[name] = time.Now().Add(b.open)
	b.trialMu.Unlock()
}

// endTrial ends what leaseTrial began, once the upstream's job is tried
// or handed back, and reports whether a trial was leased: cheap when none
// is (every attempt calls it).
func (b *Breakers) endTrial(upstream string) bool {
	if b.nLeased.Load() == 0 {
		return false
	}
	name := BreakerName(upstream)
	b.trialMu.Lock()
	defer b.trialMu.Unlock()
	if _, ok := b.leased[name]; !ok {
		return false
	}
	delete(b.leased, name)
	b.nLeased.Add(-1)
	return true
}

// closed reports whether the upstream's breaker is closed (or not made).
func (b *Breakers) closed(upstream string) bool {
	b.mu.Lock()
	cb, ok := b.m[BreakerName(upstream)]
	b.mu.Unlock()
	return !ok || cb.State() == gobreaker.StateClosed
}

// trialLeased reports whether a trial job of the breaker is leased and not
// yet tried (leaseTrial).
func (b *Breakers) trialLeased(name string) bool {
	b.trialMu.Lock()
	defer b.trialMu.Unlock()
	until, ok := b.leased[name]
	return ok && time.Now().Before(until)
}

// NextTrial is the earliest time still to come at which an open breaker
// lets a trial through (false when there is none): the lease loop, which
// holds an open breaker's lanes, looks again then, so that a recovered
// upstream's first delivery waits for no idle interval on top of the open
// period. A time already past is not reported (the gate's next look finds
// that breaker half-open; one no destination uses any more must not keep
// the loop awake) and is forgotten.
func (b *Breakers) NextTrial() (time.Time, bool) {
	now := time.Now()
	b.trialMu.Lock()
	defer b.trialMu.Unlock()
	var next time.Time
	for name, t := range b.trials {
		if !t.After(now) {
			delete(b.trials, name)
			continue
		}
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	return next, !next.IsZero()
}

// States reports each upstream's breaker known so far (by BreakerName)
// and whether it is not closed: open, or half-open with deliveries held
// but for one trial. Reading it moves an expired open breaker to
// half-open, as a delivery would.
func (b *Breakers) States() map[string]bool {
	b.mu.Lock()
	cbs := make(map[string]*gobreaker.CircuitBreaker[int], len(b.m))
	for k, cb := range b.m {
		cbs[k] = cb
	}
	b.mu.Unlock()
	out := make(map[string]bool, len(cbs))
	for k, cb := range cbs {
		out[k] = cb.State() != gobreaker.StateClosed
	}
	return out
}
