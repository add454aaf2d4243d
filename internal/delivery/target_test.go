package delivery

import (
	"crypto/tls"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

// NewTarget is the one place a destination's options become its target:
// the timeout fitted to the lease (an explicit one that does not fit
// refused), the policy's defaults, and a TLS upstream's own connection
// pool sized to the workers.
func TestNewTarget(t *testing.T) {
	rate := storage.Rate{Events: 3, Per: time.Second}
	for _, tc := range []struct {
		name        string
		o           Options
		lease       time.Duration
		workers     int
		err         string
		timeout     time.Duration
		maxAttempts int
		idle        int // the own transport's idle connections per host (0: no own transport)
	}{
		{name: "defaults", o: Options{URL: "http://up/"}, lease: time.Minute, workers: 16, timeout: DefaultTimeout, maxAttempts: DefaultMaxAttempts},
		{name: "no lease: the default lease", o: Options{URL: "http://up/"}, timeout: DefaultTimeout, maxAttempts: DefaultMaxAttempts},
		{name: "short lease: half of it", o: Options{URL: "http://up/"}, lease: 5 * time.Second, workers: 16, timeout: 2500 * time.Millisecond, maxAttempts: DefaultMaxAttempts},
		{name: "the shortest lease", o: Options{URL: "http://up/"}, lease: time.Second, workers: 16, timeout: 500 * time.Millisecond, maxAttempts: DefaultMaxAttempts},
		{name: "explicit timeout kept", o: Options{URL: "http://up/", Timeout: 3 * time.Second, Policy: Policy{MaxAttempts: 4}, Rate: rate},
			lease: 5 * time.Second, workers: 16, timeout: 3 * time.Second, maxAttempts: 4},
		{name: "explicit timeout beyond the lease", o: Options{URL: "http://up/", Timeout: 10 * time.Second}, lease: 5 * time.Second,
			err: "timeout 10s must be shorter than the webhooks lease 5s"},
		{name: "explicit timeout leaving no start window", o: Options{URL: "http://up/", Timeout: 950 * time.Millisecond}, lease: time.Second,
			err: "leaves too little of the webhooks lease"},
		{name: "TLS: a pool of its own, sized to the workers", o: Options{URL: "https://up/", TLS: &tls.Config{ServerName: "up"}},
			lease: time.Minute, workers: 300, timeout: DefaultTimeout, maxAttempts: DefaultMaxAttempts, idle: 300},
		{name: "TLS, few workers: the pool's floor", o: Options{URL: "https://up/", TLS: &tls.Config{}},
			lease: time.Minute, workers: 2, timeout: DefaultTimeout, maxAttempts: DefaultMaxAttempts, idle: 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NewTarget(tc.o, tc.lease, tc.workers)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(got.Transport.Close)
			if got.URL != tc.o.URL || got.Timeout != tc.timeout || got.Policy.MaxAttempts != tc.maxAttempts || got.Rate != tc.o.Rate {
				t.Errorf("target %+v, want timeout %s, %d attempts", got, tc.timeout, tc.maxAttempts)
			}
			if got.Policy.Initial != DefaultInitial || got.Policy.Multiplier != DefaultMultiplier {
				t.Errorf("policy %+v: defaults not filled in", got.Policy)
			}
			if tc.idle == 0 {
				if got.Transport != nil {
					t.Errorf("a transport of its own without TLS options")
				}
				return
			}
			tr := got.Transport.client.Transport.(*http.Transport)
			if tr.MaxIdleConnsPerHost != tc.idle || tr.TLSClientConfig != tc.o.TLS {
				t.Errorf("own transport: %d idle per host, TLS %p; want %d and the options' %p", tr.MaxIdleConnsPerHost, tr.TLSClientConfig, tc.idle, tc.o.TLS)
			}
		})
	}
}
