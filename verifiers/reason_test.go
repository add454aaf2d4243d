package verifiers

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestReason: each way a check fails gives its reason, through the
// schemes' own errors; a stale or future timestamp gives its skew, signed
// (the timestamp minus now); the errors are still the documented ones for
// errors.Is (the 401 codes do not change).
func TestReason(t *testing.T) {
	now := time.Unix(1767225600, 0)
	stripe := mustLoad(t, "stripe", `{"secrets":["whsec_k"]}`)
	signed := func(at time.Time, secret string) []string {
		h, _ := stripeFormat(StripeSignatureHeader)(secret, `{"id":"evt_1"}`, at)
		return h
	}
	tw := provision(t, Twilio{SecretsConfig: keyed(twToken)})
	jsonReq := twReq{https: true, host: twHost, uri: twURI + "&bodySHA256=" + twJSONHash, ct: "application/json", body: twJSON, sig: twSigJSON}
	for _, tc := range []struct {
		name   string
		err    error
		reason string
		base   error
		skew   time.Duration
	}{
		{"good", stripe.Verify(newRequest(signed(now, "whsec_k")...), []byte(`{"id":"evt_1"}`), now), "", nil, 0},
		{"header missing", stripe.Verify(newRequest(), []byte(`{}`), now), ReasonMissing, ErrFormat, 0},
		{"standard headers missing", mustLoad(t, "standard", `{"secrets":["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}`).Verify(newRequest(), []byte(`{}`), now), ReasonMissing, ErrFormat, 0},
		{"header unreadable", stripe.Verify(newRequest(StripeSignatureHeader, "garbage"), []byte(`{}`), now), ReasonMalformed, ErrFormat, 0},
		{"stale by 10 minutes", stripe.Verify(newRequest(signed(now.Add(-10*time.Minute), "whsec_k")...), []byte(`{"id":"evt_1"}`), now), ReasonTimestamp, ErrTimestamp, -10 * time.Minute},
		{"an hour ahead", stripe.Verify(newRequest(signed(now.Add(time.Hour), "whsec_k")...), []byte(`{"id":"evt_1"}`), now), ReasonTimestamp, ErrTimestamp, time.Hour},
		{"no secret matches", stripe.Verify(newRequest(signed(now, "whsec_other")...), []byte(`{"id":"evt_1"}`), now), ReasonMismatch, ErrMismatch, 0},
		{"twilio: the body is not the hashed one", tw.Verify(jsonReq.build(), []byte(twJSON+" "), now), ReasonBody, ErrMismatch, 0},
		{"another error", errors.New("boom"), ReasonOther, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Reason(tc.err); got != tc.reason {
				t.Errorf("Reason(%v) = %q, want %q", tc.err, got, tc.reason)
			}
			if tc.base != nil && !errors.Is(tc.err, tc.base) {
				t.Errorf("%v is not %v", tc.err, tc.base)
			}
			skew, ok := Skew(tc.err)
			if ok != (tc.skew != 0) || skew != tc.skew {
				t.Errorf("Skew(%v) = %v %v, want %v", tc.err, skew, ok, tc.skew)
			}
		})
	}
	// a timestamp centuries away: the skew is capped, not wrapped around
	if skew, _ := Skew(CheckTimestamp(999999999999999999, now, time.Minute)); skew <= 0 {
		t.Errorf("skew of a far future timestamp: %v", skew)
	}
	if got := fmt.Sprint(CheckTimestamp(now.Unix()-3600, now, 5*time.Minute)); got != "timestamp outside tolerance: timestamp is -3600s from now, tolerance is 5m0s" {
		t.Errorf("a skew error reads %q", got)
	}
}
