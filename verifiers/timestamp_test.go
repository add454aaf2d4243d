package verifiers

import (
	"errors"
	"testing"
	"time"
)

func TestParseUnixSeconds(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1700000000", 1700000000, true},
		{"0", 0, true},
		{"0001700000000", 1700000000, true},
		{"999999999999999999", 999999999999999999, true},
		{"9999999999999999999", 0, false}, // 19 digits: no overflow possible
		{"", 0, false},
		{"-1", 0, false},
		{"+1700000000", 0, false},
		{" 1700000000", 0, false},
		{"1700000000 ", 0, false},
		{"1700000000.5", 0, false},
		{"1.7e9", 0, false},
		{"abc", 0, false},
		{"1700000000000", 1700000000000, true}, // milliseconds parse, then fail the tolerance
	} {
		got, err := ParseUnixSeconds(tc.in)
		if tc.ok {
			if err != nil || got != tc.want {
				t.Errorf("ParseUnixSeconds(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			}
		} else if !errors.Is(err, ErrFormat) {
			t.Errorf("ParseUnixSeconds(%q) = %d, %v; want ErrFormat", tc.in, got, err)
		}
	}
}

func TestCheckTimestamp(t *testing.T) {
	const ts = 1700000000
	tol := 5 * time.Minute
	for _, tc := range []struct {
		name string
		now  time.Time
		tol  time.Duration
		want error
	}{
		{"same second", time.Unix(ts, 0), tol, nil},
		{"exactly tolerance in the past", time.Unix(ts+300, 0), tol, nil},
		{"exactly tolerance in the future", time.Unix(ts-300, 0), tol, nil},
		{"sub-second part of now ignored", time.Unix(ts+300, 999999999), tol, nil},
		{"one second too old", time.Unix(ts+301, 0), tol, ErrTimestamp},
		{"one second too far ahead", time.Unix(ts-301, 0), tol, ErrTimestamp},
		{"zero tolerance, same second", time.Unix(ts, 500), 0, nil},
		{"zero tolerance, next second", time.Unix(ts+1, 0), 0, ErrTimestamp},
		{"fractional tolerance rounds down", time.Unix(ts+2, 0), 1500 * time.Millisecond, ErrTimestamp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkErr(t, CheckTimestamp(ts, tc.now, tc.tol), tc.want)
		})
	}
	checkErr(t, CheckTimestamp(ts*1000, time.Unix(ts, 0), tol), ErrTimestamp)
	checkErr(t, CheckTimestamp(999999999999999999, time.Unix(ts, 0), tol), ErrTimestamp)
}
