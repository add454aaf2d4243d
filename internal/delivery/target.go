package delivery

import (
	"crypto/tls"
	"time"

	"github.com/hookline/hookline/storage"
)

// Options are one destination's delivery settings as configured: a
// source's, with a destination's own over them. NewTarget builds them into
// the Target the dispatcher delivers to.
type Options struct {
	// URL is the http(s) URL the deliveries are POSTed to.
	URL string
	// Timeout bounds each attempt (0: DefaultTimeout, or half the lease
	// when that is shorter).
	Timeout time.Duration
	// Policy is the retry policy of failed deliveries (its zero fields:
	// the defaults, Policy.WithDefaults).
	Policy Policy
	// Rate paces the deliveries to the upstream (zero: unlimited).
	Rate storage.Rate
	// Signer, when set, signs every attempt with fresh Standard Webhooks
	// headers (sign_forwarded).
	Signer *Signer
	// TLS, when set, is the upstream's own TLS configuration (CAs, client
	// certificate, server name): its deliveries get a connection pool of
	// their own.
	TLS *tls.Config
}

// Target is how to deliver one destination's deliveries, as NewTarget
// built it from the destination's Options.
type Target struct {
	// URL is the upstream the deliveries are POSTed to.
	URL string
	// Timeout bounds each attempt; it fits the lease (CheckTimeout).
	// NewTarget sets it; the dispatcher uses it as it is (a Target made
	// otherwise must set it, or its attempts time out at once).
	Timeout time.Duration
	// Policy is the retry policy, its defaults filled in.
	Policy Policy
	// Rate paces deliveries to the upstream (zero: unlimited). It is
	// applied when jobs are leased, by the store, so that with a shared
	// store it holds for all nodes together and no worker ever waits for it.
	Rate storage.Rate
	// Signer, when set, signs every attempt with fresh Standard Webhooks
	// headers (sign_forwarded).
	Signer *Signer
	// Transport, when set, carries the deliveries: an upstream with TLS
	// options of its own (nil: the dispatcher's client).
	Transport *Transport
}

// NewTarget builds a destination's target for a dispatcher of workers
// workers leasing jobs for lease (<= 0: the defaults): the one place where
// an attempt's timeout is fitted to the lease (an explicit one that does
// not fit is an error, CheckTimeout; none gets EffectiveTimeout's, and
// then NewTarget never fails), the
// retry policy gets its defaults and an upstream with TLS options of its
// own gets its connection pool, sized to the workers. Close the target's
// Transport once the config that built it is unloaded.
func NewTarget(o Options, lease time.Duration, workers int) (*Target, error) {
	if lease <= 0 {
		lease = DefaultLease
	}
	if workers <= 0 {
		workers = DefaultWorkers
	}
	if o.Timeout > 0 {
		if err := CheckTimeout(o.Timeout, lease); err != nil {
			return nil, err
		}
	}
	t := &Target{URL: o.URL, Timeout: EffectiveTimeout(o.Timeout, lease), Policy: o.Policy.WithDefaults(), Rate: o.Rate, Signer: o.Signer}
	if o.TLS != nil {
		t.Transport = NewTransport(o.TLS, workers)
	}
	return t, nil
}

// fallback is the target of a job whose source or destination is no
// longer configured: its stored upstream, with the defaults.
func (d *Dispatcher) fallback(job *storage.Job) *Target {
	t, _ := NewTarget(Options{URL: job.Upstream}, d.cfg.Lease, d.cfg.Workers) // no timeout set: no error
	return t
}
