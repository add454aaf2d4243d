package verifiers

import (
	"slices"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

func TestParseSecretsBlock(t *testing.T) {
	var seen []string
	option := func(d *caddyfile.Dispenser, name string) (bool, error) {
		if name != "flag" {
			return false, nil
		}
		seen = append(seen, name)
		return true, noArgs(d)
	}
	for _, tc := range []struct {
		name    string
		input   string
		option  blockOption
		want    []string
		wantErr string
	}{
		{name: "inline then lines, in order", input: "demo a b {\n secret c\n secret d e\n}", want: []string{"a", "b", "c", "d", "e"}},
		{name: "no secrets", input: "demo", want: nil},
		{name: "option through the hook", input: "demo a {\n flag\n secret b\n}", option: option, want: []string{"a", "b"}},
		{name: "secret without value", input: "demo {\n secret\n}", wantErr: "wrong argument count"},
		{name: "unknown option names the scheme", input: "demo a {\n flag\n}", wantErr: `unrecognized demo option "flag"`},
		{name: "hook declines", input: "demo a {\n other\n}", option: option, wantErr: `unrecognized demo option "other"`},
		{name: "hook error", input: "demo a {\n flag x\n}", option: option, wantErr: "wrong argument count"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen = nil
			var got []string
			err := parseSecretsBlock(caddyfile.NewTestDispenser(tc.input), &got, tc.option)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("secrets = %q, want %q", got, tc.want)
			}
			if tc.option != nil && len(seen) != 1 {
				t.Errorf("hook saw %q, want one flag", seen)
			}
		})
	}
}

func TestOneArgOnce(t *testing.T) {
	var v string
	opt := func(d *caddyfile.Dispenser, name string) (bool, error) {
		if name != "url" {
			return false, nil
		}
		return true, oneArgOnce(d, &v)
	}
	var secrets []string
	err := parseSecretsBlock(caddyfile.NewTestDispenser("demo s {\n url a\n url b\n}"), &secrets, opt)
	if err == nil || !strings.Contains(err.Error(), "url may appear only once") {
		t.Fatalf("got error %v, want url may appear only once", err)
	}
	if v != "a" {
		t.Errorf("url = %q, want the first one", v)
	}
}
