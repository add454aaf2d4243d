// Package caddyfiletest holds the checks the table tests of hookline's
// Caddyfile parsers share: parse a block into a fresh module value, expect
// an error or none, compare a guest module's raw JSON. Test code only.
package caddyfiletest

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// Parse runs UnmarshalCaddyfile of a new T on input. With wantErr set, it
// checks that parsing fails with an error containing it and returns nil;
// otherwise any error fails the test.
func Parse[T any, P interface {
	*T
	caddyfile.Unmarshaler
}](t *testing.T, input, wantErr string) P {
	t.Helper()
	got := P(new(T))
	err := got.UnmarshalCaddyfile(caddyfile.NewTestDispenser(input))
	if wantErr != "" {
		if err == nil {
			t.Fatalf("want an error containing %q, got none (parsed %+v)", wantErr, got)
		}
		if !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error %q does not contain %q", err, wantErr)
		}
		return nil
	}
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	return got
}

// CheckRaw checks a guest module's raw JSON (the field named name): none
// when want is "", otherwise the same JSON as want.
func CheckRaw(t *testing.T, name string, got json.RawMessage, want string) {
	t.Helper()
	switch {
	case want == "" && got != nil:
		t.Errorf("%s = %s, want none", name, got)
	case want != "" && got == nil:
		t.Errorf("%s is empty, want %s", name, want)
	case want != "" && !JSONEqual(t, got, []byte(want)):
		t.Errorf("%s = %s, want %s", name, got, want)
	}
}

// JSONEqual reports whether a and b hold the same JSON value; invalid
// JSON fails the test.
func JSONEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("bad JSON %s: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("bad JSON %s: %v", b, err)
	}
	return reflect.DeepEqual(va, vb)
}
