package verifiers

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"hash"
	"strings"
	"testing"
)

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

// hmacOf computes HMAC(key, parts...) independently of CheckHMAC.
func hmacOf(newHash func() hash.Hash, key []byte, parts ...[]byte) []byte {
	m := hmac.New(newHash, key)
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}
