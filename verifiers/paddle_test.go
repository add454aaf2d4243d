package verifiers

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// The official vectors of PaddleHQ/paddle-node-sdk
// src/__tests__/notifications/webhooks-validator.node.test.ts (@b8ee4b12,
// shared/SIGNATURES.md): secret "VALID_SECRET", the clock at
// new Date('11/01/2023') = 1698796800 (UTC), and
//
//	body '{"data": ["1", "2"]}', header
//	'ts=1698796800;h1=a300428748dce5c70e4da19bffd60769591ea969c99dea3105d0ec9612cf43f9' -> valid
//	body '{"data": "value"}', header 'ts=1698796800;h1=28981e94...b261;h1=28981e94...b261;h2=RANDOM_HASH' -> valid
//	secret 'INVALID_VALID_SECRET' -> invalid; 'ts=9876;...' -> invalid;
//	body '{ "data": [ "1", "2" ]}' -> invalid; 'ts=1234;h1=invalid_signature' -> invalid
//	headers 'invalid_header', 'h1=invalid_header', 'ts=1234;h2=invalid_header' -> throw
//	clock 00:00:01 and 00:00:05 -> valid, 00:00:06 and four days later -> invalid
const (
	pdSecret   = "VALID_SECRET"
	pdTS       = int64(1698796800)
	pdBody     = `{"data": ["1", "2"]}`
	pdHex      = "a300428748dce5c70e4da19bffd60769591ea969c99dea3105d0ec9612cf43f9"
	pdHeader   = "ts=1698796800;h1=" + pdHex
	pdBody2    = `{"data": "value"}`
	pdHex2     = "28981e941fae76e53db32f3d2a83cb69db41476595e84e1970a1b5d98f62b261"
	pdHeader2  = "ts=1698796800;h1=" + pdHex2 + ";h1=" + pdHex2 + ";h2=RANDOM_HASH"
	pdOtherHex = "0000000000000000000000000000000000000000000000000000000000000000"
)

func provisionPaddle(t testing.TB, p Paddle) *Paddle {
	t.Helper()
	if err := p.Provision(testContext(t)); err != nil {
		t.Fatalf("provision: %v", err)
	}
	return &p
}

// pdSign computes a Paddle h1 independently of CheckHMAC.
func pdSign(secret string, ts int64, body string) string {
	return EncodingHex.Encode(hmacOf(sha256.New, []byte(secret), []byte(strconv.FormatInt(ts, 10)+":"+body)))
}

func TestPaddleVerify(t *testing.T) {
	one := Paddle{Secrets: []string{pdSecret}}
	at := func(d time.Duration) time.Time { return time.Unix(pdTS, 0).Add(d) }
	const ntfSecret = "pdl_ntfset_01gkpjp8bkm3tm53kdgkx6sms7_6h3qd3uFSi9YCD3OLYAShQI90XTI5vEI"
	ntfHex := pdSign(ntfSecret, pdTS, pdBody)

	for _, tc := range []struct {
		name   string
		cfg    Paddle
		header string
		body   string
		now    time.Time
		want   error
	}{
		// official vectors
		{name: "official: valid signature", cfg: one, header: pdHeader, body: pdBody, now: at(0)},
		{name: "official: valid signature with multiple hashes", cfg: one, header: pdHeader2, body: pdBody2, now: at(0)},
		{name: "official: invalid secret", cfg: Paddle{Secrets: []string{"INVALID_VALID_SECRET"}}, header: pdHeader, body: pdBody, now: at(0), want: ErrMismatch},
		{name: "official: invalid timestamp", cfg: one, header: "ts=9876;h1=" + pdHex, body: pdBody, now: at(0), want: ErrTimestamp},
		{name: "official: invalid data, more spaces", cfg: one, header: pdHeader, body: `{ "data": [ "1", "2" ]}`, now: at(0), want: ErrMismatch},
		{name: "official: invalid signature (stale ts first)", cfg: one, header: "ts=1234;h1=invalid_signature", body: pdBody, now: at(0), want: ErrTimestamp},
		{name: "official: invalid signature (fresh ts)", cfg: one, header: "ts=1234;h1=invalid_signature", body: pdBody, now: time.Unix(1234, 0), want: ErrFormat},
		{name: "official: header missing ts and h1", cfg: one, header: "invalid_header", body: pdBody, now: at(0), want: ErrFormat},
		{name: "official: header missing ts", cfg: one, header: "h1=invalid_header", body: pdBody, now: at(0), want: ErrFormat},
		{name: "official: header missing h1", cfg: one, header: "ts=1234;h2=invalid_header", body: pdBody, now: time.Unix(1234, 0), want: ErrFormat},
		{name: "official: 1s old", cfg: one, header: pdHeader, body: pdBody, now: at(1 * time.Second)},
		{name: "official: 5s old, the boundary", cfg: one, header: pdHeader, body: pdBody, now: at(5 * time.Second)},
		{name: "5.9s old is still 5 whole seconds", cfg: one, header: pdHeader, body: pdBody, now: at(5*time.Second + 900*time.Millisecond)},
		{name: "official: 6s old", cfg: one, header: pdHeader, body: pdBody, now: at(6 * time.Second), want: ErrTimestamp},
		{name: "official: four days old", cfg: one, header: pdHeader, body: pdBody, now: time.Date(2023, 11, 5, 0, 0, 0, 0, time.UTC), want: ErrTimestamp},

		// |now - ts| <= tolerance (gateway policy; the Node SDK checks the
		// age only, see TestPaddleFutureTimestamp)
		{name: "1h in the future", cfg: one, header: pdHeader, body: pdBody, now: at(-time.Hour), want: ErrTimestamp},
		{name: "5s in the future, the boundary", cfg: one, header: pdHeader, body: pdBody, now: at(-5 * time.Second)},
		{name: "custom tolerance, at the boundary", cfg: Paddle{Secrets: []string{pdSecret}, Tolerance: caddy.Duration(10 * time.Second)}, header: pdHeader, body: pdBody, now: at(10 * time.Second)},
		{name: "custom tolerance, 1s beyond", cfg: Paddle{Secrets: []string{pdSecret}, Tolerance: caddy.Duration(10 * time.Second)}, header: pdHeader, body: pdBody, now: at(11 * time.Second), want: ErrTimestamp},

		// multiple h1: any one may match (the Node SDK keeps only the last,
		// the Go SDK allows only one)
		{name: "two h1, valid first", cfg: one, header: pdHeader + ";h1=" + pdOtherHex, body: pdBody, now: at(0)},
		{name: "two h1, valid last", cfg: one, header: "ts=1698796800;h1=" + pdOtherHex + ";h1=" + pdHex, body: pdBody, now: at(0)},
		{name: "two h1, malformed one and valid one", cfg: one, header: "ts=1698796800;h1=nothex;h1=" + pdHex, body: pdBody, now: at(0)},
		{name: "two h1, none valid", cfg: one, header: "ts=1698796800;h1=" + pdOtherHex + ";h1=" + pdHex2, body: pdBody, now: at(0), want: ErrMismatch},
		{name: "h1 before ts", cfg: one, header: "h1=" + pdHex + ";ts=1698796800", body: pdBody, now: at(0)},

		// wrong secret, bytes changed
		{name: "one body byte changed", cfg: one, header: pdHeader, body: `{"data": ["1", "3"]}`, now: at(0), want: ErrMismatch},
		{name: "re-serialized JSON", cfg: one, header: pdHeader, body: `{"data":["1","2"]}`, now: at(0), want: ErrMismatch},
		{name: "ts changed, same h1", cfg: one, header: "ts=1698796801;h1=" + pdHex, body: pdBody, now: at(0), want: ErrMismatch},
		{name: "one signature digit changed", cfg: one, header: "ts=1698796800;h1=b" + pdHex[1:], body: pdBody, now: at(0), want: ErrMismatch},
		{name: "uppercase hex", cfg: one, header: "ts=1698796800;h1=" + strings.ToUpper(pdHex), body: pdBody, now: at(0), want: ErrMismatch},
		{name: "truncated signature", cfg: one, header: pdHeader[:len(pdHeader)-1], body: pdBody, now: at(0), want: ErrFormat},
		{name: "truncated to 32 digits", cfg: one, header: "ts=1698796800;h1=" + pdHex[:32], body: pdBody, now: at(0), want: ErrFormat},

		// wrong labels and malformed headers
		{name: "valid MAC labelled h2", cfg: one, header: "ts=1698796800;h2=" + pdHex, body: pdBody, now: at(0), want: ErrFormat},
		{name: "valid MAC labelled v1", cfg: one, header: "ts=1698796800;v1=" + pdHex, body: pdBody, now: at(0), want: ErrFormat},
		{name: "uppercase label H1", cfg: one, header: "ts=1698796800;H1=" + pdHex, body: pdBody, now: at(0), want: ErrFormat},
		{name: "uppercase label TS", cfg: one, header: "TS=1698796800;h1=" + pdHex, body: pdBody, now: at(0), want: ErrFormat},
		{name: "space after ;", cfg: one, header: "ts=1698796800; h1=" + pdHex, body: pdBody, now: at(0), want: ErrFormat},
		{name: "comma separator", cfg: one, header: "ts=1698796800,h1=" + pdHex, body: pdBody, now: at(0), want: ErrFormat},
		{name: "trailing ;", cfg: one, header: pdHeader + ";", body: pdBody, now: at(0), want: ErrFormat},
		{name: "empty h1", cfg: one, header: "ts=1698796800;h1=", body: pdBody, now: at(0), want: ErrFormat},
		{name: "two ts", cfg: one, header: "ts=1;ts=1698796800;h1=" + pdHex, body: pdBody, now: at(0), want: ErrFormat},
		{name: "non-numeric ts", cfg: one, header: "ts=16987968OO;h1=" + pdHex, body: pdBody, now: at(0), want: ErrFormat},
		{name: "negative ts", cfg: one, header: "ts=-1698796800;h1=" + pdHex, body: pdBody, now: at(0), want: ErrFormat},
		{name: "fractional ts", cfg: one, header: "ts=1698796800.0;h1=" + pdHex, body: pdBody, now: at(0), want: ErrFormat},
		{name: "millisecond ts", cfg: one, header: "ts=1698796800000;h1=" + pdHex, body: pdBody, now: at(0), want: ErrTimestamp},
		{name: "missing header", cfg: one, body: pdBody, now: at(0), want: ErrFormat},

		// rotation
		{name: "rotation: second secret matches", cfg: Paddle{Secrets: []string{"pdl_ntfset_new", pdSecret}}, header: pdHeader, body: pdBody, now: at(0)},
		{name: "rotation: no secret matches", cfg: Paddle{Secrets: []string{"pdl_ntfset_new", "pdl_ntfset_old"}}, header: pdHeader, body: pdBody, now: at(0), want: ErrMismatch},
		{name: "whole pdl_ntfset_ string is the key", cfg: Paddle{Secrets: []string{ntfSecret}}, header: "ts=1698796800;h1=" + ntfHex, body: pdBody, now: at(0)},
		{name: "the key is not just the part after the last _", cfg: Paddle{Secrets: []string{ntfSecret[strings.LastIndexByte(ntfSecret, '_')+1:]}}, header: "ts=1698796800;h1=" + ntfHex, body: pdBody, now: at(0), want: ErrMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := provisionPaddle(t, tc.cfg)
			r := newRequest()
			if tc.header != "" {
				r.Header.Set("Paddle-Signature", tc.header)
			}
			err := p.Verify(r, []byte(tc.body), tc.now)
			checkErr(t, err, tc.want, pdSecret, pdHex, ntfSecret, ntfHex)
		})
	}
}

func TestPaddleVectorsAreIndependent(t *testing.T) {
	if got := pdSign(pdSecret, pdTS, pdBody); got != pdHex {
		t.Fatalf("h1 = %s, want the official %s", got, pdHex)
	}
	if got := pdSign(pdSecret, pdTS, pdBody2); got != pdHex2 {
		t.Fatalf("h1 = %s, want the official %s", got, pdHex2)
	}
	if got := time.Date(2023, 11, 1, 0, 0, 0, 0, time.UTC).Unix(); got != pdTS {
		t.Fatalf("11/01/2023 = %d, want %d", got, pdTS)
	}
}

func TestPaddleProvision(t *testing.T) {
	t.Setenv("HOOKLINE_TEST_PADDLE", pdSecret)
	for _, tc := range []struct {
		name    string
		cfg     Paddle
		wantTol time.Duration
		wantErr bool
	}{
		{name: "literal, default tolerance", cfg: Paddle{Secrets: []string{pdSecret}}, wantTol: 5 * time.Second},
		{name: "env", cfg: Paddle{Secrets: []string{"{env.HOOKLINE_TEST_PADDLE}"}}, wantTol: 5 * time.Second},
		{name: "custom tolerance", cfg: Paddle{Secrets: []string{pdSecret}, Tolerance: caddy.Duration(time.Minute)}, wantTol: time.Minute},
		{name: "none", wantErr: true},
		{name: "all empty", cfg: Paddle{Secrets: []string{"{env.HOOKLINE_TEST_UNSET_XYZ}"}}, wantErr: true},
		{name: "negative tolerance", cfg: Paddle{Secrets: []string{pdSecret}, Tolerance: caddy.Duration(-time.Second)}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.cfg
			err := p.Provision(testContext(t))
			if tc.wantErr {
				if err == nil {
					t.Fatal("want error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if time.Duration(p.Tolerance) != tc.wantTol {
				t.Fatalf("tolerance %s, want %s", time.Duration(p.Tolerance), tc.wantTol)
			}
			r := newRequest("Paddle-Signature", pdHeader)
			checkErr(t, p.Verify(r, []byte(pdBody), time.Unix(pdTS, 0)), nil)
		})
	}
}

func TestPaddleDefaultIDFrom(t *testing.T) {
	got := ruleStrings((&Paddle{}).DefaultIDFrom())
	if want := []string{"json event_id"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("DefaultIDFrom() = %v, want %v", got, want)
	}
}

func TestPaddleUnmarshalCaddyfile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		input   string
		want    Paddle
		wantErr bool
	}{
		{name: "one secret", input: `paddle {env.PADDLE_SECRET}`, want: Paddle{Secrets: []string{"{env.PADDLE_SECRET}"}}},
		{name: "rotation on the line", input: `paddle new old`, want: Paddle{Secrets: []string{"new", "old"}}},
		{name: "block", input: "paddle a {\n secret b c\n tolerance 30s\n}", want: Paddle{Secrets: []string{"a", "b", "c"}, Tolerance: caddy.Duration(30 * time.Second)}},
		{name: "secret without value", input: "paddle {\n secret\n}", wantErr: true},
		{name: "tolerance without value", input: "paddle s {\n tolerance\n}", wantErr: true},
		{name: "bad tolerance", input: "paddle s {\n tolerance soon\n}", wantErr: true},
		{name: "negative tolerance", input: "paddle s {\n tolerance -5s\n}", wantErr: true},
		{name: "two tolerances on a line", input: "paddle s {\n tolerance 5s 10s\n}", wantErr: true},
		{name: "unknown option", input: "paddle s {\n allow_sha1\n}", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p Paddle
			err := p.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got %+v, want error", p)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(p, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", p, tc.want)
			}
		})
	}
}

func TestPaddleModule(t *testing.T) {
	ctx := testContext(t)
	v, err := ctx.LoadModuleByID("webhooks.verifiers.paddle", json.RawMessage(`{"secrets":["VALID_SECRET"],"tolerance":"1m"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := v.(IDDefaulter); !ok {
		t.Fatalf("%T is not an IDDefaulter", v)
	}
	vf := v.(Verifier)
	checkErr(t, vf.Verify(newRequest("Paddle-Signature", pdHeader), []byte(pdBody), time.Unix(pdTS+60, 0)), nil)
	checkErr(t, vf.Verify(newRequest("Paddle-Signature", pdHeader), []byte(pdBody), time.Unix(pdTS+61, 0)), ErrTimestamp)
	if _, err := ctx.LoadModuleByID("webhooks.verifiers.paddle", json.RawMessage(`{}`)); err == nil {
		t.Fatal("module without secrets provisioned")
	}
	if _, err := ctx.LoadModuleByID("webhooks.verifiers.paddle", json.RawMessage(`{"secrets":["x"],"tolerence":"1m"}`)); err == nil {
		t.Fatal("unknown JSON field accepted")
	}
}

// FuzzPaddleHeader feeds arbitrary Paddle-Signature values and bodies.
// Verify must never panic, must never report anything but the documented
// errors, and must accept only a header whose single ts is fresh and
// among whose h1 elements is the lowercase hex HMAC of ts:body.
func FuzzPaddleHeader(f *testing.F) {
	f.Add([]byte(pdBody), pdHeader)
	f.Add([]byte(pdBody2), pdHeader2)
	f.Add([]byte(pdBody), "ts=1698796800;h1="+pdOtherHex+";h1="+pdHex)
	f.Add([]byte(pdBody), "ts=1698796800;h1="+strings.ToUpper(pdHex))
	f.Add([]byte(pdBody), "ts=1698796800;h2="+pdHex)
	f.Add([]byte(pdBody), "invalid_header")
	f.Add([]byte(""), "ts=;h1=")
	f.Add([]byte(pdBody), ";;==;")

	p := provisionPaddle(f, Paddle{Secrets: []string{pdSecret}})
	now := time.Unix(pdTS, 0)

	f.Fuzz(func(t *testing.T, body []byte, header string) {
		r := newRequest()
		r.Header["Paddle-Signature"] = []string{header}
		err := p.Verify(r, body, now)
		if err != nil {
			if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrMismatch) && !errors.Is(err, ErrTimestamp) {
				t.Fatalf("undocumented error %v", err)
			}
			if strings.Contains(err.Error(), pdSecret) {
				t.Fatalf("error leaks the secret: %v", err)
			}
			return
		}
		// independent check of what was accepted
		var ts string
		var h1 []string
		nts := 0
		for _, e := range strings.Split(header, ";") {
			k, v, _ := strings.Cut(e, "=")
			switch k {
			case "ts":
				ts = v
				nts++
			case "h1":
				h1 = append(h1, v)
			}
		}
		n, perr := strconv.ParseInt(ts, 10, 64)
		if nts != 1 || perr != nil || ts[0] < '0' || ts[0] > '9' || now.Unix()-n > 5 || n-now.Unix() > 5 {
			t.Fatalf("accepted %q: ts not a single fresh number", header)
		}
		want := EncodingHex.Encode(hmacOf(sha256.New, []byte(pdSecret), []byte(ts), []byte(":"), body))
		for _, s := range h1 {
			if s == want {
				return
			}
		}
		t.Fatalf("accepted %q, no h1 is %q", header, want)
	})
}

// TestPaddleFutureTimestamp checks the gateway policy of SIGNATURES.md
// ("reject when |now - ts| > tolerance; exactly equal is accepted") for
// timestamps ahead of the clock, which Paddle's Node SDK accepts: a
// signature dated more than the tolerance in the future is refused, one
// dated exactly the tolerance ahead is accepted.
func TestPaddleFutureTimestamp(t *testing.T) {
	def := Paddle{Secrets: []string{pdSecret}}
	tol60 := Paddle{Secrets: []string{pdSecret}, Tolerance: caddy.Duration(time.Minute)}
	for _, tc := range []struct {
		name string
		cfg  Paddle
		at   int64 // signing time; the clock is pdTS
		want error
	}{
		{name: "default: 1s ahead", cfg: def, at: pdTS + 1},
		{name: "default: exactly 5s ahead", cfg: def, at: pdTS + 5},
		{name: "default: 6s ahead", cfg: def, at: pdTS + 6, want: ErrTimestamp},
		{name: "default: a day ahead", cfg: def, at: pdTS + 86400, want: ErrTimestamp},
		{name: "tolerance 1m: exactly 60s ahead", cfg: tol60, at: pdTS + 60},
		{name: "tolerance 1m: 61s ahead", cfg: tol60, at: pdTS + 61, want: ErrTimestamp},
		{name: "tolerance 1m: exactly 60s old", cfg: tol60, at: pdTS - 60},
		{name: "tolerance 1m: 61s old", cfg: tol60, at: pdTS - 61, want: ErrTimestamp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := provisionPaddle(t, tc.cfg)
			h := "ts=" + strconv.FormatInt(tc.at, 10) + ";h1=" + pdSign(pdSecret, tc.at, pdBody)
			err := p.Verify(newRequest("Paddle-Signature", h), []byte(pdBody), time.Unix(pdTS, 0))
			checkErr(t, err, tc.want, pdSecret)
		})
	}
}

func BenchmarkVerifyPaddle(b *testing.B) {
	body := []byte(`{"x":"` + strings.Repeat("a", 1024-8) + `"}`) // 1 KiB
	p := provisionPaddle(b, Paddle{Secrets: []string{pdSecret}})
	now := time.Now()
	ts := now.Unix()
	r := newRequest("Paddle-Signature", "ts="+strconv.FormatInt(ts, 10)+";h1="+pdSign(pdSecret, ts, string(body)))
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := p.Verify(r, body, now); err != nil {
			b.Fatal(err)
		}
	}
}
