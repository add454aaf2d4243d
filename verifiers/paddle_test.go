package verifiers

import (
	"crypto/sha256"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The official vectors of PaddleHQ/paddle-node-sdk
// src/__tests__/notifications/webhooks-validator.node.test.ts (@b8ee4b12,
// docs/signatures.md): secret "VALID_SECRET", the clock at
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

// pdSign computes a Paddle h1 independently of CheckHMAC.
func pdSign(secret string, ts int64, body string) string {
	return EncodingHex.Encode(hmacOf(sha256.New, []byte(secret), []byte(strconv.FormatInt(ts, 10)+":"+body)))
}

func TestPaddleVerify(t *testing.T) {
	one := Paddle{TimestampedConfig: timestamped(0, pdSecret)}
	at := func(d time.Duration) time.Time { return time.Unix(pdTS, 0).Add(d) }
	const ntfSecret = "pdl_ntfset_01gkpjp8bkm3tm53kdgkx6sms7_6h3qd3uFSi9YCD3OLYAShQI90XTI5vEI"
	ntfHex := pdSign(ntfSecret, pdTS, pdBody)

	runVerifyCases(t, newRequest, []verifyCase[Paddle]{
		// official vectors
		{name: "official: valid signature", cfg: one, headers: []string{"Paddle-Signature", pdHeader}, body: pdBody, now: at(0)},
		{name: "official: valid signature with multiple hashes", cfg: one, headers: []string{"Paddle-Signature", pdHeader2}, body: pdBody2, now: at(0)},
		{name: "official: invalid secret", cfg: Paddle{TimestampedConfig: timestamped(0, "INVALID_VALID_SECRET")}, headers: []string{"Paddle-Signature", pdHeader}, body: pdBody, now: at(0), want: ErrMismatch},
		{name: "official: invalid timestamp", cfg: one, headers: []string{"Paddle-Signature", "ts=9876;h1=" + pdHex}, body: pdBody, now: at(0), want: ErrTimestamp},
		{name: "official: invalid data, more spaces", cfg: one, headers: []string{"Paddle-Signature", pdHeader}, body: `{ "data": [ "1", "2" ]}`, now: at(0), want: ErrMismatch},
		{name: "official: invalid signature (stale ts first)", cfg: one, headers: []string{"Paddle-Signature", "ts=1234;h1=invalid_signature"}, body: pdBody, now: at(0), want: ErrTimestamp},
		{name: "official: invalid signature (fresh ts)", cfg: one, headers: []string{"Paddle-Signature", "ts=1234;h1=invalid_signature"}, body: pdBody, now: time.Unix(1234, 0), want: ErrFormat},
		{name: "official: header missing ts and h1", cfg: one, headers: []string{"Paddle-Signature", "invalid_header"}, body: pdBody, now: at(0), want: ErrFormat},
		{name: "official: header missing ts", cfg: one, headers: []string{"Paddle-Signature", "h1=invalid_header"}, body: pdBody, now: at(0), want: ErrFormat},
		{name: "official: header missing h1", cfg: one, headers: []string{"Paddle-Signature", "ts=1234;h2=invalid_header"}, body: pdBody, now: time.Unix(1234, 0), want: ErrFormat},
		{name: "official: 1s old", cfg: one, headers: []string{"Paddle-Signature", pdHeader}, body: pdBody, now: at(1 * time.Second)},
		{name: "official: 5s old, the boundary", cfg: one, headers: []string{"Paddle-Signature", pdHeader}, body: pdBody, now: at(5 * time.Second)},
		{name: "5.9s old is still 5 whole seconds", cfg: one, headers: []string{"Paddle-Signature", pdHeader}, body: pdBody, now: at(5*time.Second + 900*time.Millisecond)},
		{name: "official: 6s old", cfg: one, headers: []string{"Paddle-Signature", pdHeader}, body: pdBody, now: at(6 * time.Second), want: ErrTimestamp},
		{name: "official: four days old", cfg: one, headers: []string{"Paddle-Signature", pdHeader}, body: pdBody, now: time.Date(2023, 11, 5, 0, 0, 0, 0, time.UTC), want: ErrTimestamp},

		// |now - ts| <= tolerance (gateway policy; the Node SDK checks the
		// age only, see the replay window cases of TestConformance)
		{name: "1h in the future", cfg: one, headers: []string{"Paddle-Signature", pdHeader}, body: pdBody, now: at(-time.Hour), want: ErrTimestamp},

		// multiple h1: any one may match (the Node SDK keeps only the last,
		// the Go SDK allows only one)
		{name: "two h1, valid first", cfg: one, headers: []string{"Paddle-Signature", pdHeader + ";h1=" + pdOtherHex}, body: pdBody, now: at(0)},
		{name: "two h1, valid last", cfg: one, headers: []string{"Paddle-Signature", "ts=1698796800;h1=" + pdOtherHex + ";h1=" + pdHex}, body: pdBody, now: at(0)},
		{name: "two h1, malformed one and valid one", cfg: one, headers: []string{"Paddle-Signature", "ts=1698796800;h1=nothex;h1=" + pdHex}, body: pdBody, now: at(0)},
		{name: "two h1, none valid", cfg: one, headers: []string{"Paddle-Signature", "ts=1698796800;h1=" + pdOtherHex + ";h1=" + pdHex2}, body: pdBody, now: at(0), want: ErrMismatch},
		{name: "h1 before ts", cfg: one, headers: []string{"Paddle-Signature", "h1=" + pdHex + ";ts=1698796800"}, body: pdBody, now: at(0)},

		// bytes changed
		{name: "re-serialized JSON", cfg: one, headers: []string{"Paddle-Signature", pdHeader}, body: `{"data":["1","2"]}`, now: at(0), want: ErrMismatch},
		{name: "ts changed, same h1", cfg: one, headers: []string{"Paddle-Signature", "ts=1698796801;h1=" + pdHex}, body: pdBody, now: at(0), want: ErrMismatch},
		{name: "one signature digit changed", cfg: one, headers: []string{"Paddle-Signature", "ts=1698796800;h1=b" + pdHex[1:]}, body: pdBody, now: at(0), want: ErrMismatch},
		{name: "uppercase hex", cfg: one, headers: []string{"Paddle-Signature", "ts=1698796800;h1=" + strings.ToUpper(pdHex)}, body: pdBody, now: at(0), want: ErrMismatch},
		{name: "truncated signature", cfg: one, headers: []string{"Paddle-Signature", pdHeader[:len(pdHeader)-1]}, body: pdBody, now: at(0), want: ErrFormat},
		{name: "truncated to 32 digits", cfg: one, headers: []string{"Paddle-Signature", "ts=1698796800;h1=" + pdHex[:32]}, body: pdBody, now: at(0), want: ErrFormat},

		// wrong labels and malformed headers
		{name: "valid MAC labelled h2", cfg: one, headers: []string{"Paddle-Signature", "ts=1698796800;h2=" + pdHex}, body: pdBody, now: at(0), want: ErrFormat},
		{name: "valid MAC labelled v1", cfg: one, headers: []string{"Paddle-Signature", "ts=1698796800;v1=" + pdHex}, body: pdBody, now: at(0), want: ErrFormat},
		{name: "uppercase label H1", cfg: one, headers: []string{"Paddle-Signature", "ts=1698796800;H1=" + pdHex}, body: pdBody, now: at(0), want: ErrFormat},
		{name: "uppercase label TS", cfg: one, headers: []string{"Paddle-Signature", "TS=1698796800;h1=" + pdHex}, body: pdBody, now: at(0), want: ErrFormat},
		{name: "space after ;", cfg: one, headers: []string{"Paddle-Signature", "ts=1698796800; h1=" + pdHex}, body: pdBody, now: at(0), want: ErrFormat},
		{name: "comma separator", cfg: one, headers: []string{"Paddle-Signature", "ts=1698796800,h1=" + pdHex}, body: pdBody, now: at(0), want: ErrFormat},
		{name: "trailing ;", cfg: one, headers: []string{"Paddle-Signature", pdHeader + ";"}, body: pdBody, now: at(0), want: ErrFormat},
		{name: "empty h1", cfg: one, headers: []string{"Paddle-Signature", "ts=1698796800;h1="}, body: pdBody, now: at(0), want: ErrFormat},
		{name: "two ts", cfg: one, headers: []string{"Paddle-Signature", "ts=1;ts=1698796800;h1=" + pdHex}, body: pdBody, now: at(0), want: ErrFormat},
		{name: "non-numeric ts", cfg: one, headers: []string{"Paddle-Signature", "ts=16987968OO;h1=" + pdHex}, body: pdBody, now: at(0), want: ErrFormat},
		{name: "negative ts", cfg: one, headers: []string{"Paddle-Signature", "ts=-1698796800;h1=" + pdHex}, body: pdBody, now: at(0), want: ErrFormat},
		{name: "fractional ts", cfg: one, headers: []string{"Paddle-Signature", "ts=1698796800.0;h1=" + pdHex}, body: pdBody, now: at(0), want: ErrFormat},
		{name: "millisecond ts", cfg: one, headers: []string{"Paddle-Signature", "ts=1698796800000;h1=" + pdHex}, body: pdBody, now: at(0), want: ErrTimestamp},

		// the key
		{name: "whole pdl_ntfset_ string is the key", cfg: Paddle{TimestampedConfig: timestamped(0, ntfSecret)}, headers: []string{"Paddle-Signature", "ts=1698796800;h1=" + ntfHex}, body: pdBody, now: at(0)},
		{name: "the key is not just the part after the last _", cfg: Paddle{TimestampedConfig: timestamped(0, ntfSecret[strings.LastIndexByte(ntfSecret, '_')+1:])}, headers: []string{"Paddle-Signature", "ts=1698796800;h1=" + ntfHex}, body: pdBody, now: at(0), want: ErrMismatch},
	}, pdSecret, pdHex, ntfSecret, ntfHex)
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

	p := provision(f, Paddle{TimestampedConfig: timestamped(0, pdSecret)})
	now := time.Unix(pdTS, 0)

	fuzzHeader(f, p, newRequest, "Paddle-Signature", now, true, func(t *testing.T, body []byte, header string) {
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
	}, pdSecret)
}
