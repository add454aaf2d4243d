package delivery

import (
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"
	"go.uber.org/zap"
)

// Breakers holds one circuit breaker per upstream host. The app keeps one
// Breakers per store in a caddy.UsagePool, so that a reload neither closes
// an open breaker nor lets two configs' dispatchers count failures apart.
type Breakers struct {
	failures uint32
	open     time.Duration
	log      *zap.Logger

	mu sync.Mutex
	m  map[string]*gobreaker.CircuitBreaker[int]

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
	return &Breakers{failures: failures, open: open, log: log, m: make(map[string]*gobreaker.CircuitBreaker[int])}
}

// Destruct implements caddy.Destructor (nothing to release).
func (b *Breakers) Destruct() error { return nil }

// breakerKey is the breaker's name for an upstream: its scheme and host,
// never the path or the user info.
func breakerKey(upstream string) string {
	if u, err := url.Parse(upstream); err == nil {
		return u.Scheme + "://" + u.Host
	}
	return upstream
}

// get returns the breaker of the upstream's host, made on first use.
func (b *Breakers) get(upstream string) *gobreaker.CircuitBreaker[int] {
	key := breakerKey(upstream)
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
	b.mu.Lock()
	cb, ok := b.m[breakerKey(upstream)]
	b.mu.Unlock()
	if !ok {
		return false, false
	}
	switch cb.State() { // State also moves an expired open breaker to half-open
	case gobreaker.StateOpen:
		return true, false
	case gobreaker.StateHalfOpen:
		return cb.Counts().Requests > 0, true
	}
	return false, false
}

// States reports each upstream host's breaker known so far (scheme://host)
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
