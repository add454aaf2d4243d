package delivery

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"strconv"
	"time"
)

// Class is what an upstream answer means for the job.
type Class int

// Classes of an attempt's result.
const (
	// Success: 2xx, the event is delivered.
	Success Class = iota
	// Transient: 408, 425, 429, 5xx, connection errors and timeouts; try again.
	Transient
	// Permanent: any other status (4xx, and 1xx/3xx which a webhook
	// endpoint never legitimately answers) and TLS certificate errors; the
	// event goes to the DLQ at once.
	Permanent
)

func (c Class) String() string {
	switch c {
	case Success:
		return "delivered"
	case Transient:
		return "transient"
	}
	return "permanent"
}

// Classify maps an attempt's response status (0 when there was no
// response) and error to its class.
func Classify(status int, err error) Class {
	if err != nil {
		if isCertError(err) {
			return Permanent
		}
		return Transient
	}
	switch {
	case status >= 200 && status < 300:
		return Success
	case status == http.StatusRequestTimeout, status == http.StatusTooEarly,
		status == http.StatusTooManyRequests, status >= 500:
		return Transient
	}
	return Permanent
}

func isCertError(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	var (
		verr *tls.CertificateVerificationError
		uerr x509.UnknownAuthorityError
		herr x509.HostnameError
		cerr x509.CertificateInvalidError
	)
	return errors.As(err, &verr) || errors.As(err, &uerr) || errors.As(err, &herr) || errors.As(err, &cerr)
}

// MaxRetryAfter caps how long an upstream's Retry-After can defer a job.
const MaxRetryAfter = time.Hour

// RetryAfter parses a Retry-After header (delay-seconds or HTTP-date) as a
// delay from now, capped at MaxRetryAfter. ok is false when absent or invalid.
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	var d time.Duration
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		if secs > int64(MaxRetryAfter/time.Second) {
			return MaxRetryAfter, true
		}
		d = time.Duration(secs) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
		if d < 0 {
			d = 0
		}
	} else {
		return 0, false
	}
	return min(d, MaxRetryAfter), true
}
