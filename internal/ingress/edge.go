package ingress

// Edge protection before the body is read (README.md, "Caddyfile": edge protection):
// allow_ips, the client IPs a source takes webhooks from, and accept_rate,
// how many requests a source takes per window. Both answer before a byte
// of the body is read; schema.go checks the body once verified.

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
	"golang.org/x/time/rate"
)

// compileAllowIPs resolves the placeholders of allow_ips ({env.*},
// {file.*}; a placeholder may hold several ranges, separated by spaces or
// commas) and compiles them into Caddy's own client_ip matcher, so that
// the client IP is Caddy's (trusted_proxies apply) and ranges are read as
// Caddy reads them. None configured: nil.
func compileAllowIPs(ctx caddy.Context, ranges []string) (*caddyhttp.MatchClientIP, error) {
	if len(ranges) == 0 {
		return nil, nil
	}
	repl := caddy.NewReplacer()
	var resolved []string
	for _, r := range ranges {
		v, err := repl.ReplaceOrErr(r, true, true)
		if err != nil {
			return nil, fmt.Errorf("allow_ips %q: %v", r, err)
		}
		resolved = append(resolved, strings.FieldsFunc(v, func(c rune) bool { return c == ',' || c == ' ' || c == '\t' || c == '\n' })...)
	}
	if len(resolved) == 0 {
		return nil, fmt.Errorf("allow_ips: no IP or CIDR range after resolving placeholders (an empty list would refuse everyone)")
	}
	m := &caddyhttp.MatchClientIP{Ranges: resolved}
	if err := m.Provision(ctx); err != nil {
		return nil, fmt.Errorf("allow_ips: %v", err)
	}
	return m, nil
}

// allowed reports whether the request's client IP may send to the source
// (true when allow_ips is not set). A client IP that cannot be trusted yet
// (TLS early data) is not allowed.
func (h *Ingress) allowed(r *http.Request) bool {
	if h.allow == nil {
		return true
	}
	ok, err := h.allow.MatchWithError(r)
	return ok && err == nil
}

// forbid answers a client outside allow_ips: 403 FORBIDDEN, counted, with
// an info log line naming the client IP (never the body, unread).
func (h *Ingress) forbid(w http.ResponseWriter, r *http.Request) {
	h.log.Info("webhook refused: client IP not in allow_ips", zap.String("source", h.Source), zap.String("client_ip", clientIP(r)))
	h.reject(w, http.StatusForbidden, CodeForbidden, "this client is not allowed to send webhooks here", 0, nil)
}

// acceptLimiter is a source's accept_rate on this node: a token bucket
// holding up to Events requests, refilled at Events per Interval (a full
// window's worth may arrive at once; beyond that, the rate). Shared across
// reloads in acceptPool, so that a reload does not refill it.
type acceptLimiter struct {
	lim    *rate.Limiter
	events int
	window time.Duration
}

// Destruct implements caddy.Destructor: a limiter holds only memory.
func (*acceptLimiter) Destruct() error { return nil }

// acceptPool shares each source's accept limiter across config reloads,
// keyed by source and rate: a changed rate gets a fresh limiter.
var acceptPool = caddy.NewUsagePool()

// acquireAcceptLimiter takes a reference on the source's shared limiter;
// the caller releases it with acceptPool.Delete(key).
func acquireAcceptLimiter(source string, rl *RateLimit) (*acceptLimiter, string, error) {
	window := time.Duration(rl.Interval)
	key := fmt.Sprintf("accept|%s|%d|%s", source, rl.Events, window)
	v, _, err := acceptPool.LoadOrNew(key, func() (caddy.Destructor, error) {
		every := window / time.Duration(rl.Events)
		return &acceptLimiter{lim: rate.NewLimiter(rate.Every(every), rl.Events), events: rl.Events, window: window}, nil
	})
	if err != nil {
		return nil, "", err
	}
	return v.(*acceptLimiter), key, nil
}

// take takes one request's token; when there is none, it returns how long
// until there is (whole seconds, at least 1) and ok false.
func (l *acceptLimiter) take(now time.Time) (retryAfter int, ok bool) {
	res := l.lim.ReserveN(now, 1)
	delay := res.DelayFrom(now)
	if delay == 0 {
		return 0, true
	}
	res.CancelAt(now) // the refused request does not use up a later token
	return int(math.Ceil(delay.Seconds())), false
}

// limitAccept answers a request beyond accept_rate: 429 RATE_LIMIT_EXCEEDED
// with Retry-After and the seed's details, counted.
func (h *Ingress) limitAccept(w http.ResponseWriter, retryAfter int) {
	h.reject(w, http.StatusTooManyRequests, CodeRateLimitExceeded, "Rate limit exceeded", retryAfter, map[string]any{
		"retry_after_seconds": retryAfter,
		"limit":               h.accept.events,
		"window_seconds":      int(math.Ceil(h.accept.window.Seconds())),
	})
}
