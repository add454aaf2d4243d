package delivery

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// almostOne is the largest value rnd may return (rnd is in [0, 1)).
var almostOne = math.Nextafter(1, 0)

func constRnd(v float64) func() float64 { return func() float64 { return v } }

func TestPolicyDelayBackoff(t *testing.T) {
	p := Policy{Initial: time.Second, Max: time.Minute, Multiplier: 2}
	for i, tc := range []struct {
		policy  Policy
		attempt int
		expect  time.Duration
	}{
		{policy: p, attempt: 1, expect: time.Second},
		{policy: p, attempt: 2, expect: 2 * time.Second},
		{policy: p, attempt: 3, expect: 4 * time.Second},
		{policy: p, attempt: 6, expect: 32 * time.Second},
		{policy: p, attempt: 7, expect: time.Minute}, // 64s capped
		{policy: p, attempt: 8, expect: time.Minute},
		{policy: p, attempt: 50, expect: time.Minute},
		// attempts below 1 count as the first one
		{policy: p, attempt: 0, expect: time.Second},
		{policy: p, attempt: -3, expect: time.Second},
		// other multipliers
		{policy: Policy{Initial: 100 * time.Millisecond, Max: time.Hour, Multiplier: 3}, attempt: 3, expect: 900 * time.Millisecond},
		{policy: Policy{Initial: time.Second, Max: time.Hour, Multiplier: 1.5}, attempt: 3, expect: 2250 * time.Millisecond},
		{policy: Policy{Initial: time.Second, Max: time.Hour, Multiplier: 1}, attempt: 40, expect: time.Second},
		// the exact cap is reached, not overshot
		{policy: Policy{Initial: time.Second, Max: 8 * time.Second, Multiplier: 2}, attempt: 4, expect: 8 * time.Second},
		// never below a millisecond
		{policy: Policy{Initial: time.Microsecond, Max: time.Microsecond, Multiplier: 2}, attempt: 1, expect: time.Millisecond},
		// defaults: 1s, 2s, 4s … capped at 15m
		{policy: Policy{}.WithDefaults(), attempt: 1, expect: time.Second},
		{policy: Policy{}.WithDefaults(), attempt: 10, expect: 512 * time.Second},
		{policy: Policy{}.WithDefaults(), attempt: 11, expect: 15 * time.Minute},
	} {
		// a nil rnd means no jitter
		if actual := tc.policy.Delay(tc.attempt, nil); actual != tc.expect {
			t.Errorf("Test %d: %+v Delay(%d) = %v, expected %v", i, tc.policy, tc.attempt, actual, tc.expect)
		}
		// Jitter 0 ignores rnd
		if actual := tc.policy.Delay(tc.attempt, constRnd(0)); actual != tc.expect {
			t.Errorf("Test %d: %+v Delay(%d) with jitter 0 and rnd 0 = %v, expected %v", i, tc.policy, tc.attempt, actual, tc.expect)
		}
	}
}

func TestPolicyDelayJitter(t *testing.T) {
	p := Policy{Initial: time.Second, Max: time.Minute, Multiplier: 2, Jitter: 0.1}
	for i, tc := range []struct {
		policy  Policy
		attempt int
		rnd     float64
		expect  time.Duration
	}{
		{policy: p, attempt: 1, rnd: 0, expect: 900 * time.Millisecond},
		{policy: p, attempt: 1, rnd: 0.5, expect: time.Second},
		{policy: p, attempt: 1, rnd: almostOne, expect: 1100 * time.Millisecond},
		{policy: p, attempt: 3, rnd: 0, expect: 3600 * time.Millisecond},
		{policy: p, attempt: 3, rnd: almostOne, expect: 4400 * time.Millisecond},
		// jitter applies after the cap: the cap is not a hard ceiling
		{policy: p, attempt: 20, rnd: 0, expect: 54 * time.Second},
		{policy: p, attempt: 20, rnd: almostOne, expect: 66 * time.Second},
		// and to schedule delays
		{policy: Policy{Schedule: []time.Duration{time.Minute}, Jitter: 0.5}, attempt: 1, rnd: 0, expect: 30 * time.Second},
		{policy: Policy{Schedule: []time.Duration{time.Minute}, Jitter: 0.5}, attempt: 1, rnd: almostOne, expect: 90 * time.Second},
	} {
		actual := tc.policy.Delay(tc.attempt, constRnd(tc.rnd))
		if diff := actual - tc.expect; diff < -time.Microsecond || diff > time.Microsecond {
			t.Errorf("Test %d: %+v Delay(%d) with rnd %v = %v, expected %v", i, tc.policy, tc.attempt, tc.rnd, actual, tc.expect)
		}
	}

	// whatever rnd returns in [0, 1), the delay stays within ±Jitter
	r := rand.New(rand.NewPCG(1, 2))
	var below, above bool
	for range 1000 {
		d := p.Delay(2, r.Float64)
		if d < 1800*time.Millisecond || d > 2200*time.Millisecond {
			t.Fatalf("Delay(2) with jitter 0.1 = %v, expected within [1.8s, 2.2s]", d)
		}
		below = below || d < 2*time.Second
		above = above || d > 2*time.Second
	}
	if !below || !above {
		t.Errorf("1000 jittered delays were not spread around 2s (some below: %v, some above: %v)", below, above)
	}
}

func TestPolicyDelaySchedule(t *testing.T) {
	p := Policy{
		// backoff fields are ignored when a schedule is given
		Initial: time.Hour, Max: 2 * time.Hour, Multiplier: 2,
		Schedule: []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute},
	}
	for i, tc := range []struct {
		attempt int
		expect  time.Duration
	}{
		{attempt: -1, expect: time.Minute},
		{attempt: 0, expect: time.Minute},
		{attempt: 1, expect: time.Minute},
		{attempt: 2, expect: 5 * time.Minute},
		{attempt: 3, expect: 30 * time.Minute},
		// the last delay repeats
		{attempt: 4, expect: 30 * time.Minute},
		{attempt: 1000, expect: 30 * time.Minute},
		{attempt: math.MaxInt, expect: 30 * time.Minute},
	} {
		if actual := p.Delay(tc.attempt, nil); actual != tc.expect {
			t.Errorf("Test %d: Delay(%d) = %v, expected %v", i, tc.attempt, actual, tc.expect)
		}
	}
}

// Huge attempt numbers (and huge caps) must give the cap, never an
// overflowed, negative or tiny delay.
func TestPolicyDelayOverflow(t *testing.T) {
	const maxDuration = time.Duration(math.MaxInt64)
	for i, tc := range []struct {
		policy  Policy
		attempt int
		rnd     float64
		expect  time.Duration
	}{
		{policy: Policy{}.WithDefaults(), attempt: 64, expect: DefaultMax},
		{policy: Policy{}.WithDefaults(), attempt: 1100, expect: DefaultMax}, // 2^1099: +Inf
		{policy: Policy{}.WithDefaults(), attempt: math.MaxInt, expect: DefaultMax},
		{policy: Policy{Initial: time.Second, Max: time.Hour, Multiplier: 1000}, attempt: math.MaxInt32, expect: time.Hour},
		// a cap at the largest Duration is kept exactly
		{policy: Policy{Initial: time.Second, Max: maxDuration, Multiplier: 2}, attempt: 1000, expect: maxDuration},
		{policy: Policy{Initial: time.Second, Max: maxDuration, Multiplier: 2}, attempt: math.MaxInt, expect: maxDuration},
		// jitter on top of a huge delay saturates instead of wrapping around
		{policy: Policy{Initial: time.Second, Max: maxDuration, Multiplier: 2, Jitter: 0.5}, attempt: 1000, rnd: almostOne, expect: maxDuration},
		{policy: Policy{Initial: time.Second, Max: 290 * 365 * 24 * time.Hour, Multiplier: 2, Jitter: 0.5}, attempt: 1000, rnd: almostOne, expect: maxDuration},
		{policy: Policy{Schedule: []time.Duration{maxDuration}, Jitter: 0.9}, attempt: 1, rnd: almostOne, expect: maxDuration},
	} {
		actual := tc.policy.Delay(tc.attempt, constRnd(tc.rnd))
		if actual != tc.expect {
			t.Errorf("Test %d: %+v Delay(%d) = %v, expected %v", i, tc.policy, tc.attempt, actual, tc.expect)
		}
	}
}

func TestPolicyWithDefaults(t *testing.T) {
	for i, tc := range []struct {
		input  Policy
		expect Policy
	}{
		{
			input:  Policy{},
			expect: Policy{MaxAttempts: 10, Initial: time.Second, Max: 15 * time.Minute, Multiplier: 2},
		},
		{
			// a schedule of n delays gives n+1 attempts (the first is not a retry)
			input: Policy{Schedule: []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute}},
			expect: Policy{MaxAttempts: 4, Initial: time.Second, Max: 15 * time.Minute, Multiplier: 2,
				Schedule: []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute}},
		},
		{
			// an explicit max_attempts wins over the schedule's length
			input: Policy{MaxAttempts: 2, Schedule: []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute}},
			expect: Policy{MaxAttempts: 2, Initial: time.Second, Max: 15 * time.Minute, Multiplier: 2,
				Schedule: []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute}},
		},
		{
			// the default cap is raised to an initial delay above it
			input:  Policy{Initial: 30 * time.Minute},
			expect: Policy{MaxAttempts: 10, Initial: 30 * time.Minute, Max: 30 * time.Minute, Multiplier: 2},
		},
		{
			// set fields are kept, jitter included
			input:  Policy{MaxAttempts: 3, Initial: 2 * time.Second, Max: time.Minute, Multiplier: 3, Jitter: 0.25},
			expect: Policy{MaxAttempts: 3, Initial: 2 * time.Second, Max: time.Minute, Multiplier: 3, Jitter: 0.25},
		},
		{
			// zero jitter means none: it is not defaulted
			input:  Policy{MaxAttempts: 1, Jitter: 0},
			expect: Policy{MaxAttempts: 1, Initial: time.Second, Max: 15 * time.Minute, Multiplier: 2, Jitter: 0},
		},
	} {
		actual := tc.input.WithDefaults()
		if !reflect.DeepEqual(actual, tc.expect) {
			t.Errorf("Test %d: %+v.WithDefaults() = %+v, expected %+v", i, tc.input, actual, tc.expect)
		}
		if err := actual.Validate(); err != nil {
			t.Errorf("Test %d: a policy with defaults does not validate: %v", i, err)
		}
	}
}

func TestPolicyValidate(t *testing.T) {
	valid := Policy{MaxAttempts: 5, Initial: time.Second, Max: time.Minute, Multiplier: 2, Jitter: 0.1}
	with := func(f func(*Policy)) Policy {
		p := valid
		f(&p)
		return p
	}
	for i, tc := range []struct {
		policy Policy
		expect string // substring of the error; "" for valid
	}{
		{policy: valid},
		{policy: with(func(p *Policy) { p.MaxAttempts = 1 })},
		{policy: with(func(p *Policy) { p.Initial, p.Max = time.Second, time.Second })},
		{policy: with(func(p *Policy) { p.Multiplier = 1 })},
		{policy: with(func(p *Policy) { p.Jitter = 0 })},
		{policy: with(func(p *Policy) { p.Jitter = 0.99 })},
		{policy: with(func(p *Policy) { p.Schedule = []time.Duration{time.Millisecond, time.Hour} })},

		{policy: with(func(p *Policy) { p.MaxAttempts = 0 }), expect: "max_attempts"},
		{policy: with(func(p *Policy) { p.MaxAttempts = -1 }), expect: "max_attempts"},
		{policy: with(func(p *Policy) { p.Initial = 0 }), expect: "initial"},
		{policy: with(func(p *Policy) { p.Initial = -time.Second }), expect: "initial"},
		{policy: with(func(p *Policy) { p.Max = 500 * time.Millisecond }), expect: "initial <= max"},
		{policy: with(func(p *Policy) { p.Multiplier = 0.5 }), expect: "multiplier"},
		{policy: with(func(p *Policy) { p.Multiplier = 0 }), expect: "multiplier"},
		{policy: with(func(p *Policy) { p.Jitter = -0.1 }), expect: "jitter"},
		{policy: with(func(p *Policy) { p.Jitter = 1 }), expect: "jitter"},
		{policy: with(func(p *Policy) { p.Schedule = []time.Duration{time.Minute, 0} }), expect: "schedule"},
		{policy: with(func(p *Policy) { p.Schedule = []time.Duration{-time.Minute} }), expect: "schedule"},
	} {
		err := tc.policy.Validate()
		if tc.expect == "" {
			if err != nil {
				t.Errorf("Test %d: %+v: expected no error, got: %v", i, tc.policy, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("Test %d: %+v: expected an error about %q, got none", i, tc.policy, tc.expect)
			continue
		}
		if !strings.Contains(err.Error(), tc.expect) {
			t.Errorf("Test %d: %+v: expected an error about %q, got: %v", i, tc.policy, tc.expect, err)
		}
	}
}
