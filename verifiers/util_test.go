package verifiers

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"errors"
	"hash"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
)

// testContext returns a Caddy context for provisioning modules in tests.
func testContext(t testing.TB) caddy.Context {
	t.Helper()
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	return ctx
}

// newRequest returns a POST request with the given header name/value pairs.
func newRequest(headers ...string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/hook", nil)
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Add(headers[i], headers[i+1])
	}
	return r
}

// checkErr fails unless err wraps want (nil: err must be nil), and unless
// the error text is free of every string in secret.
func checkErr(t *testing.T, err, want error, secret ...string) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Fatalf("got error %v, want success", err)
	case want != nil && !errors.Is(err, want):
		t.Fatalf("got error %v, want %v", err, want)
	}
	if err != nil {
		for _, s := range secret {
			if s != "" && strings.Contains(err.Error(), s) {
				t.Fatalf("error text %q leaks %q", err, s)
			}
		}
	}
}

func TestResolveSecrets(t *testing.T) {
	t.Setenv("HOOKLINE_TEST_SECRET", "from-env")
	t.Setenv("HOOKLINE_TEST_EMPTY", "")
	dir := t.TempDir()
	file := filepath.Join(dir, "secret")
	if err := os.WriteFile(file, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name    string
		in      []string
		want    []string
		wantErr bool
	}{
		{name: "literal", in: []string{"plain"}, want: []string{"plain"}},
		{name: "env", in: []string{"{env.HOOKLINE_TEST_SECRET}"}, want: []string{"from-env"}},
		{name: "file, trailing newline dropped", in: []string{"{file." + file + "}"}, want: []string{"from-file"}},
		{name: "mixed text and placeholder", in: []string{"whsec_{env.HOOKLINE_TEST_SECRET}"}, want: []string{"whsec_from-env"}},
		{name: "empty ones are dropped", in: []string{"{env.HOOKLINE_TEST_EMPTY}", "{env.HOOKLINE_TEST_SECRET}", ""}, want: []string{"from-env"}},
		{name: "order kept", in: []string{"b", "a"}, want: []string{"b", "a"}},
		{name: "escaped braces are literal", in: []string{`x\{y\}`}, want: []string{"x{y}"}},
		{name: "none configured", in: nil, wantErr: true},
		{name: "all empty", in: []string{"{env.HOOKLINE_TEST_EMPTY}", "{env.HOOKLINE_TEST_UNSET_XYZ}"}, wantErr: true},
		{name: "missing file", in: []string{"{file." + filepath.Join(dir, "nope") + "}"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResolveSecrets(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got %q, want error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d keys, want %d", len(got), len(tc.want))
			}
			for i := range got {
				if string(got[i]) != tc.want[i] {
					t.Errorf("key %d = %q, want %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestEncodingWellFormed(t *testing.T) {
	for _, tc := range []struct {
		enc  Encoding
		sig  string
		size int
		want bool
	}{
		{EncodingHex, "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79", 20, true},
		{EncodingHex, "EFFCDF6AE5EB2FA2D27416D5F184DF9C259A7C79", 20, true}, // well formed; refused by the comparison
		{EncodingHex, "effcdf6ae5eb2fa2d27416d5f184df9c259a7c7", 20, false},
		{EncodingHex, "effcdf6ae5eb2fa2d27416d5f184df9c259a7c", 20, false},
		{EncodingHex, "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79ab", 20, false},
		{EncodingHex, "gffcdf6ae5eb2fa2d27416d5f184df9c259a7c79", 20, false},
		{EncodingHex, "", 20, false},
		{EncodingBase64, "7/zfauXrL6LSdBbV8YTfnCWafHk=", 20, true},
		{EncodingBase64, "7/zfauXrL6LSdBbV8YTfnCWafHk", 20, true},  // unpadded
		{EncodingBase64, "7_zfauXrL6LSdBbV8YTfnCWafHk=", 20, true}, // URL alphabet
		{EncodingBase64, "7/zfauXrL6LSdBbV8YTfnCWafHl=", 20, true}, // non-zero trailing bits
		{EncodingBase64, "7/zfauXrL6LSdBbV8YTfnCWafH=", 20, false},
		{EncodingBase64, "7/zfauXrL6LSdBbV8YTfnCWafHk==", 20, false},
		{EncodingBase64, "7/zfauXrL6LSdBbV\n8YTfnCWafHk", 20, false},
		{EncodingBase64, "7/zfauXrL6LSdBbV 8YTfnCWafHk=", 20, false},
		{EncodingBase64, "W9zBRr9gdU5qBCQmCJV1x1oAPwidJzmDnexYuWTsOEM=", 20, false}, // 32 bytes
		{EncodingBase64, "", 20, false},
		{Encoding("base32"), "abc", 2, false},
	} {
		if got := tc.enc.WellFormed(tc.sig, tc.size); got != tc.want {
			t.Errorf("%s.WellFormed(%q, %d) = %v, want %v", tc.enc, tc.sig, tc.size, got, tc.want)
		}
	}
}

func TestCheckHMAC(t *testing.T) {
	// RFC 2202 / RFC 4231 test case 2
	key := []byte("Jefe")
	msg := []byte("what do ya want for nothing?")
	const hex1 = "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79"
	const b64256 = "W9zBRr9gdU5qBCQmCJV1x1oAPwidJzmDnexYuWTsOEM="
	for _, tc := range []struct {
		name string
		h    func() hash.Hash
		keys [][]byte
		enc  Encoding
		sigs []string
		msg  [][]byte
		want error
	}{
		{"sha1 hex", sha1.New, [][]byte{key}, EncodingHex, []string{hex1}, [][]byte{msg}, nil},
		{"message in parts", sha1.New, [][]byte{key}, EncodingHex, []string{hex1}, [][]byte{msg[:4], nil, msg[4:]}, nil},
		{"sha256 base64", sha256.New, [][]byte{key}, EncodingBase64, []string{b64256}, [][]byte{msg}, nil},
		{"second key", sha1.New, [][]byte{[]byte("old"), key}, EncodingHex, []string{hex1}, [][]byte{msg}, nil},
		{"second signature", sha1.New, [][]byte{key}, EncodingHex, []string{"nothex", strings.Repeat("0", 40), hex1}, [][]byte{msg}, nil},
		{"wrong key", sha1.New, [][]byte{[]byte("jefe")}, EncodingHex, []string{hex1}, [][]byte{msg}, ErrMismatch},
		{"uppercase hex", sha1.New, [][]byte{key}, EncodingHex, []string{strings.ToUpper(hex1)}, [][]byte{msg}, ErrMismatch},
		{"unpadded base64", sha256.New, [][]byte{key}, EncodingBase64, []string{strings.TrimRight(b64256, "=")}, [][]byte{msg}, ErrMismatch},
		{"hex for base64", sha256.New, [][]byte{key}, EncodingBase64, []string{"5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"}, [][]byte{msg}, ErrFormat},
		{"no signature", sha1.New, [][]byte{key}, EncodingHex, nil, [][]byte{msg}, ErrFormat},
		{"only malformed", sha1.New, [][]byte{key}, EncodingHex, []string{"x", hex1[:39]}, [][]byte{msg}, ErrFormat},
		{"no keys", sha1.New, nil, EncodingHex, []string{hex1}, [][]byte{msg}, ErrMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckHMAC(tc.h, tc.keys, tc.enc, tc.sigs, tc.msg...)
			checkErr(t, err, tc.want, "Jefe", hex1, b64256)
		})
	}
}

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

// hmacOf computes HMAC(key, parts...) independently of CheckHMAC.
func hmacOf(newHash func() hash.Hash, key []byte, parts ...[]byte) []byte {
	m := hmac.New(newHash, key)
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}
