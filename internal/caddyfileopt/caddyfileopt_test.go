package caddyfileopt

import (
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// on returns a dispenser on the option of the one line input.
func on(t *testing.T, input string) *caddyfile.Dispenser {
	t.Helper()
	d := caddyfile.NewTestDispenser(input)
	if !d.Next() {
		t.Fatalf("no token in %q", input)
	}
	return d
}

func TestShapes(t *testing.T) {
	for _, tc := range []struct {
		input   string
		read    func(d *caddyfile.Dispenser) (any, error)
		want    any
		wantErr string
	}{
		{input: "forward_to http://a/", read: func(d *caddyfile.Dispenser) (any, error) { return OneArg(d) }, want: "http://a/"},
		{input: "forward_to", read: func(d *caddyfile.Dispenser) (any, error) { return OneArg(d) }, wantErr: "wrong argument count"},
		{input: "forward_to a b", read: func(d *caddyfile.Dispenser) (any, error) { return OneArg(d) }, wantErr: "wrong argument count"},

		{input: "workers 16", read: func(d *caddyfile.Dispenser) (any, error) { return Int(d, 1) }, want: 16},
		{input: "workers 0", read: func(d *caddyfile.Dispenser) (any, error) { return Int(d, 1) }, wantErr: `workers: want a positive integer, got "0"`},
		{input: "db 0", read: func(d *caddyfile.Dispenser) (any, error) { return Int(d, 0) }, want: 0},
		{input: "db -1", read: func(d *caddyfile.Dispenser) (any, error) { return Int(d, 0) }, wantErr: `db: want a non-negative integer, got "-1"`},
		{input: "db x", read: func(d *caddyfile.Dispenser) (any, error) { return Int(d, 0) }, wantErr: `db: want a non-negative integer, got "x"`},
		{input: "db 1 2", read: func(d *caddyfile.Dispenser) (any, error) { return Int(d, 0) }, wantErr: "wrong argument count"},

		{input: "lease 1d", read: func(d *caddyfile.Dispenser) (any, error) { return Duration(d, false) }, want: caddy.Duration(24 * time.Hour)},
		{input: "lease 0", read: func(d *caddyfile.Dispenser) (any, error) { return Duration(d, true) }, want: caddy.Duration(0)},
		{input: "lease 0s", read: func(d *caddyfile.Dispenser) (any, error) { return Duration(d, false) }, wantErr: `lease: invalid duration "0s"`},
		{input: "lease -1m", read: func(d *caddyfile.Dispenser) (any, error) { return Duration(d, true) }, wantErr: `lease: invalid duration "-1m"`},
		{input: "lease soon", read: func(d *caddyfile.Dispenser) (any, error) { return Duration(d, true) }, wantErr: `lease: invalid duration "soon"`},

		{input: "max_size 64MiB", read: func(d *caddyfile.Dispenser) (any, error) { return Size(d, "", 1, 1<<30) }, want: int64(64 << 20)},
		{input: "max_size 1GB", read: func(d *caddyfile.Dispenser) (any, error) { return Size(d, "", 1, 1<<30) }, want: int64(1e9)},
		{input: "max_size 512", read: func(d *caddyfile.Dispenser) (any, error) { return Size(d, "", 1, 1<<30) }, want: int64(512)},
		{input: "max_size 0", read: func(d *caddyfile.Dispenser) (any, error) { return Size(d, "", 1, 1<<30) }, wantErr: `max_size: invalid size "0" (want 1 B to 1.0 GiB)`},
		{input: "max_size 2GiB", read: func(d *caddyfile.Dispenser) (any, error) { return Size(d, "spool max_size", 1, 1<<30) }, wantErr: `spool max_size: invalid size "2GiB"`},
		{input: "max_size lots", read: func(d *caddyfile.Dispenser) (any, error) { return Size(d, "", 1, 1<<30) }, wantErr: `max_size: invalid size "lots"`},
		{input: "max_size 1 2", read: func(d *caddyfile.Dispenser) (any, error) { return Size(d, "", 1, 1<<30) }, wantErr: "wrong argument count"},

		{input: "storage", read: func(d *caddyfile.Dispenser) (any, error) { return Module(d, "webhooks.storage", "module") }, wantErr: "wrong argument count"},
		{input: "storage nosuch", read: func(d *caddyfile.Dispenser) (any, error) { return Module(d, "webhooks.storage", "module") }, wantErr: "webhooks.storage.nosuch"},
	} {
		t.Run(tc.input, func(t *testing.T) {
			got, err := tc.read(on(t, tc.input))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %v (%T), %v; want %v (%T)", got, got, err, tc.want, tc.want)
			}
		})
	}
}

func TestPositiveDuration(t *testing.T) {
	for s, want := range map[string]time.Duration{"90s": 90 * time.Second, "1d": 24 * time.Hour, "0s": 0, "-1s": 0, "x": 0} {
		got, ok := PositiveDuration(s)
		if ok != (want > 0) || (ok && got != want) {
			t.Errorf("PositiveDuration(%q) = %v, %v", s, got, ok)
		}
	}
}
