package verifiers

import (
	"errors"
	"fmt"
	"time"
)

// This file says why a check failed, for the operator (the sender's 401
// stays the documented code): a reason for the metrics and the logs, and,
// for a timestamp out of tolerance, the skew measured.

// The reasons a signature check fails (Reason).
const (
	// ReasonMissing: a header the scheme needs is absent (or, for most
	// schemes, empty; some read an empty one as malformed).
	ReasonMissing = "missing"
	// ReasonMalformed: a header is present but cannot be read (or the
	// body is not what the scheme signs: no form, no JSON notification).
	ReasonMalformed = "malformed"
	// ReasonTimestamp: the signed timestamp is outside the tolerance.
	ReasonTimestamp = "timestamp"
	// ReasonMismatch: no configured secret (or key) produces the signature.
	ReasonMismatch = "mismatch"
	// ReasonBody: the signature is good for other bytes than the body
	// received (the scheme can tell: Twilio's bodySHA256); something on
	// the way changed the body.
	ReasonBody = "body"
	// ReasonOther: an error of a scheme that says none of the above.
	ReasonOther = "other"
)

// Reasons lists every reason, in a stable order.
var Reasons = []string{ReasonMissing, ReasonMalformed, ReasonTimestamp, ReasonMismatch, ReasonBody, ReasonOther}

// errMissing marks ErrFormat errors of an absent header; errBodyChanged
// marks ErrMismatch errors where the signature covers other bytes.
var (
	errMissing     = errors.New("missing")
	errBodyChanged = errors.New("body changed")
)

// reasonError is a check failure that carries its reason's mark: it is
// its base error (ErrFormat, ErrMismatch) for errors.Is, and its mark too.
type reasonError struct {
	base, mark error
	msg        string
}

func (e *reasonError) Error() string { return e.base.Error() + ": " + e.msg }

func (e *reasonError) Is(target error) bool { return target == e.base || target == e.mark }

// SkewError is a timestamp outside the tolerance (it is ErrTimestamp for
// errors.Is), with the skew measured: Skew is the signed timestamp minus
// the time it was checked at, so a sender whose clock is ahead shows a
// positive skew, one whose clock is behind (or a replay) a negative one.
type SkewError struct {
	Skew      time.Duration
	Tolerance time.Duration
}

func (e *SkewError) Error() string {
	return fmt.Sprintf("%s: timestamp is %ds from now, tolerance is %s", ErrTimestamp, int64(e.Skew/time.Second), e.Tolerance)
}

// Is makes a SkewError ErrTimestamp.
func (e *SkewError) Is(target error) bool { return target == ErrTimestamp }

// Reason is why err, an error of Verifier.Verify, failed the check: one of
// the Reason constants ("" for nil).
func Reason(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, errMissing):
		return ReasonMissing
	case errors.Is(err, ErrFormat):
		return ReasonMalformed
	case errors.Is(err, ErrTimestamp):
		return ReasonTimestamp
	case errors.Is(err, errBodyChanged):
		return ReasonBody
	case errors.Is(err, ErrMismatch):
		return ReasonMismatch
	}
	return ReasonOther
}

// Skew is the skew of a timestamp out of tolerance (see SkewError), and
// whether err is one. It walks err's chain itself (errors.As would
// allocate on every failed request).
func Skew(err error) (time.Duration, bool) {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if se, ok := e.(*SkewError); ok {
			return se.Skew, true
		}
	}
	return 0, false
}
