package delivery

import (
	"strings"
	"testing"
	"time"
)

func TestEffectiveTimeout(t *testing.T) {
	for _, tc := range []struct{ configured, lease, want time.Duration }{
		{0, time.Minute, DefaultTimeout},
		{0, 20 * time.Second, DefaultTimeout},
		{0, 5 * time.Second, 2500 * time.Millisecond},
		{0, time.Second, 500 * time.Millisecond},
		{0, 0, DefaultTimeout}, // no lease: DefaultLease
		{3 * time.Second, 5 * time.Second, 3 * time.Second},
		{30 * time.Second, 5 * time.Second, 30 * time.Second}, // explicit: kept (CheckTimeout refuses it)
	} {
		if got := EffectiveTimeout(tc.configured, tc.lease); got != tc.want {
			t.Errorf("EffectiveTimeout(%s, %s) = %s, want %s", tc.configured, tc.lease, got, tc.want)
		}
	}
}

// TestCheckTimeout: every accepted (timeout, lease) leaves a freshly leased
// job at least MinStartWindow to start before the dispatcher's release
// rule (time left < timeout + AttemptMargin) hands it back; the default
// timeout always fits; an explicit conflict is refused with a clear error.
func TestCheckTimeout(t *testing.T) {
	for _, lease := range []time.Duration{time.Second, 1500 * time.Millisecond, 5 * time.Second, 20 * time.Second, time.Minute, time.Hour} {
		if err := CheckTimeout(0, lease); err != nil {
			t.Errorf("default timeout under lease %s: %v", lease, err)
		}
		for timeout := 10 * time.Millisecond; timeout <= lease+time.Second; timeout += lease / 50 {
			err := CheckTimeout(timeout, lease)
			startable := lease-(timeout+AttemptMargin(timeout, lease)) >= MinStartWindow
			if (err == nil) != startable {
				t.Errorf("CheckTimeout(%s, %s) = %v; a fresh lease leaves %s to start", timeout, lease, err,
					lease-timeout-AttemptMargin(timeout, lease))
			}
		}
	}
	err := CheckTimeout(10*time.Second, 5*time.Second)
	if err == nil || !strings.Contains(err.Error(), "timeout 10s must be shorter than the webhooks lease 5s") {
		t.Fatalf("timeout 10s, lease 5s: %v", err)
	}
	if err := CheckTimeout(5*time.Second, 5*time.Second); err == nil {
		t.Fatal("timeout equal to the lease accepted")
	}
	if err := CheckTimeout(4950*time.Millisecond, 5*time.Second); err == nil || !strings.Contains(err.Error(), "too little") {
		t.Fatalf("timeout 4.95s, lease 5s: %v", err)
	}
}
