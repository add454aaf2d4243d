package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Pauses. An operator pauses a whole source or one destination of it. The
// record is kept in the store (every node sees it, a restart keeps it);
// its rules are decided here and the backends only persist the bytes
// EncodePause makes. Records written before pause modes existed (a bare
// source name, no value) decode as a refuse-mode pause of the source with
// no reason, since or end.

// Pause is one operator pause of a source (Destination and Tenant ""),
// of one destination of it, or of one tenant of it.
type Pause struct {
	// Source is the paused source.
	Source string `json:"source"`
	// Destination is the paused destination ("" : the whole source).
	Destination string `json:"destination,omitempty"`
	// Tenant is the paused customer account of Source ("": not a
	// tenant's pause): its deliveries, to every destination, wait in its
	// own lanes (TenantLane), and a refusing pause answers its new
	// events 503. Such a pause has no Destination.
	Tenant string `json:"tenant,omitempty"`
	// Accept true holds: the ingress keeps answering 202 and storing while
	// deliveries wait. False refuses: the ingress answers 503 with
	// Retry-After. A destination's pause always holds at the ingress.
	Accept bool `json:"accept"`
	// Reason is the operator's text, shown wherever the pause is.
	Reason string `json:"reason,omitempty"`
	// Since is when the pause was set (zero for a legacy record).
	Since time.Time `json:"since,omitzero"`
	// Until is when the pause ends by itself (zero: when resumed).
	Until time.Time `json:"until,omitzero"`
}

// Mode names the pause's mode: "hold" or "refuse".
func (p Pause) Mode() string {
	if p.Holds() {
		return PauseHold
	}
	return PauseRefuse
}

// The pause modes as Mode names them.
const (
	PauseHold   = "hold"
	PauseRefuse = "refuse"
)

// Holds reports whether the ingress keeps accepting during the pause: a
// hold, or any destination's pause (the other destinations keep flowing).
func (p Pause) Holds() bool { return p.Accept || p.Destination != "" }

// WholeSource reports whether p pauses its whole source (not one
// destination or one tenant of it).
func (p Pause) WholeSource() bool { return p.Destination == "" && p.Tenant == "" }

// Expired reports whether the pause ended by itself at now.
func (p Pause) Expired(now time.Time) bool { return !p.Until.IsZero() && !now.Before(p.Until) }

// DefaultPauseRetryAfter is the Retry-After of a refusing pause with no end.
const DefaultPauseRetryAfter = 60 * time.Second

// RetryAfter is the Retry-After, in whole seconds, of the ingress's 503
// during a refusing pause: the time left until it ends (at least 1), or
// DefaultPauseRetryAfter when it has no end.
func (p Pause) RetryAfter(now time.Time) int {
	if p.Until.IsZero() {
		return int(DefaultPauseRetryAfter / time.Second)
	}
	return max(1, int(math.Ceil(p.Until.Sub(now).Seconds())))
}

// Key is the pause's key in the store: its source, source/destination or
// source#tenant.
func (p Pause) Key() string {
	if p.Tenant != "" {
		return TenantPauseKey(p.Source, p.Tenant)
	}
	return PauseKey(p.Source, p.Destination)
}

// pauseTenantSep separates a source from a tenant in a tenant's pause key
// (no source name holds it).
const pauseTenantSep = "#"

// TenantPauseKey is the store key of the pause of one tenant of source.
func TenantPauseKey(source, tenant string) string { return source + pauseTenantSep + tenant }

// IsTenantPauseKey reports whether key (Pause.Key) names a tenant's pause.
// The backends keep tenants' pauses apart from the others, where a build
// from before tenants' pauses, which would read one as a pause of its
// whole source, never looks (a rolling upgrade, a downgrade).
func IsTenantPauseKey(key string) bool { return strings.Contains(key, pauseTenantSep) }

// PauseKey is the store key of the pause of source (destination "") or of
// one of its destinations ("default" is the forward_to destination).
func PauseKey(source, destination string) string {
	if destination == "" {
		return source
	}
	return source + destinationLaneSep + destination
}

// NewPause builds a pause of source (destination "": the whole source) set
// at now, ending after forDur (0: when resumed). A negative duration is an
// error.
func NewPause(source, destination string, accept bool, reason string, forDur time.Duration, now time.Time) (Pause, error) {
	if forDur < 0 {
		return Pause{}, errors.New("pause duration must not be negative")
	}
	p := Pause{Source: source, Destination: destination, Accept: accept, Reason: reason, Since: now.UTC().Truncate(time.Millisecond)}
	if forDur > 0 {
		p.Until = p.Since.Add(forDur)
	}
	return p, nil
}

// EncodePause is the stored value of p.
func EncodePause(p Pause) []byte {
	b, _ := json.Marshal(p) // plain fields: cannot fail
	return b
}

// DecodePause reads the value stored under key: empty (a legacy record,
// the source's name only) is a refuse-mode pause of source key.
func DecodePause(key string, value []byte) (Pause, error) {
	if len(value) == 0 {
		src, dest, _ := strings.Cut(key, destinationLaneSep)
		return Pause{Source: src, Destination: dest}, nil
	}
	var p Pause
	if err := json.Unmarshal(value, &p); err != nil {
		return Pause{}, fmt.Errorf("pause %q: %w", key, err)
	}
	return p, nil
}

// SortPauses orders pauses by source, the source's own pause first, then by
// destination, then by tenant.
func SortPauses(ps []Pause) {
	slices.SortFunc(ps, func(a, b Pause) int {
		if c := strings.Compare(a.Source, b.Source); c != 0 {
			return c
		}
		if c := strings.Compare(a.Destination, b.Destination); c != 0 {
			return c
		}
		return strings.Compare(a.Tenant, b.Tenant)
	})
}

// Pauses is what a store keeps of the operators' pauses.
type Pauses interface {
	// SetPause stores p, replacing the pause of the same source and
	// destination (a pause changed without resuming).
	SetPause(ctx context.Context, p Pause) error
	// Resume removes the pause stored under key (Pause.Key: PauseKey,
	// TenantPauseKey) and returns it (ok false: there was none).
	Resume(ctx context.Context, key string) (p Pause, ok bool, err error)
	// Pauses lists every stored pause, expired ones too, in SortPauses order.
	Pauses(ctx context.Context) ([]Pause, error)
	// ExpirePause removes p only if it is still stored exactly as read
	// (EncodePause): of the nodes that saw it expire, exactly one gets
	// true and announces the automatic resume.
	ExpirePause(ctx context.Context, p Pause) (bool, error)
}

// ErrUnknownDestination is the error of pausing a destination its
// configured source does not have.
var ErrUnknownDestination = errors.New("the source has no such destination")

// DefaultCatchUpRate paces the deliveries of a resumed pause whose
// destination has no rate_limit while the backlog it held drains, so
// that resuming a long hold does not flatten the upstream.
var DefaultCatchUpRate = Rate{Events: 100, Per: time.Second}

// CatchUpFor is how long a resumed pause's catch-up pace holds: the time
// its waiting deliveries take at rate, plus a margin of two seconds.
func CatchUpFor(waiting int, rate Rate) time.Duration {
	return time.Duration(waiting)*rate.Interval() + 2*time.Second
}
