package verifiers

import (
	"fmt"
	"math"
	"net/http"
	"time"
)

// This file holds the timestamp pieces of the schemes that sign one. The
// gateway policy (docs/signatures.md): timestamps are integer Unix
// seconds checked as |now - ts| <= tolerance.

// ParseUnixSeconds reads a signed timestamp: 1 to 18 ASCII digits, the
// integer number of seconds since the Unix epoch. Anything else (a sign,
// spaces, a fraction, milliseconds beyond 18 digits) is an error wrapping
// ErrFormat.
func ParseUnixSeconds(s string) (int64, error) {
	if len(s) == 0 || len(s) > 18 {
		return 0, fmt.Errorf("%w: timestamp is not integer Unix seconds", ErrFormat)
	}
	var ts int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%w: timestamp is not integer Unix seconds", ErrFormat)
		}
		ts = ts*10 + int64(c-'0')
	}
	return ts, nil
}

// CheckTimestamp returns a *SkewError (ErrTimestamp) when ts (Unix
// seconds) is more than tolerance before or after now. The difference is
// taken in whole seconds (now is truncated to its Unix second), and a
// difference exactly equal to the tolerance is accepted.
func CheckTimestamp(ts int64, now time.Time, tolerance time.Duration) error {
	skew := ts - now.Unix()
	if diff := max(skew, -skew); diff > int64(tolerance/time.Second) {
		// a timestamp centuries off is told as the longest Duration
		limit := int64(math.MaxInt64 / int64(time.Second))
		return &SkewError{Skew: time.Duration(min(max(skew, -limit), limit)) * time.Second, Tolerance: tolerance}
	}
	return nil
}

// timestampHeader reads the timestamp header name of r: its value as
// received (the signed text) and that value as Unix seconds (see
// ParseUnixSeconds). A missing or unparsable timestamp is an error
// wrapping ErrFormat. The tolerance is not checked.
func timestampHeader(r *http.Request, name string) (string, int64, error) {
	ts := r.Header.Get(name)
	if ts == "" {
		return "", 0, errHeaderMissing(name)
	}
	t, err := ParseUnixSeconds(ts)
	if err != nil {
		return "", 0, fmt.Errorf("header %s: %w", name, err)
	}
	return ts, t, nil
}
