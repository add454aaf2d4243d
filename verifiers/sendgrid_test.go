package verifiers

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The official vectors of sendgrid/sendgrid-python
// test/unit/test_eventwebhook.py (@76788e70, docs/signatures.md):
// PUBLIC_KEY, SIGNATURE, TIMESTAMP and PAYLOAD (json.dumps of one
// "dropped" event with sort_keys=True and separators=(',', ':'), plus the
// trailing "\r\n"): valid. test_verify_bad_key (sgOtherKey), bad payload
// ('payload'), bad signature (sgBadSig) and bad timestamp ('timestamp'):
// invalid.
const (
	sgKey      = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE83T4O/n84iotIvIW4mdBgQ/7dAfSmpqIM8kF9mN1flpVKS3GRqe62gw+2fNNRaINXvVpiglSI8eNEc6wEA3F+g=="
	sgSig      = "MEUCIGHQVtGj+Y3LkG9fLcxf3qfI10QysgDWmMOVmxG0u6ZUAiEAyBiXDWzM+uOe5W0JuG+luQAbPIqHh89M15TluLtEZtM="
	sgTS       = "1600112502"
	sgPayload  = `[{"email":"hello@world.com","event":"dropped","reason":"Bounced Address","sg_event_id":"ZHJvcC0xMDk5NDkxOS1MUnpYbF9OSFN0T0doUTRrb2ZTbV9BLTA","sg_message_id":"LRzXl_NHStOGhQ4kofSm_A.filterdrecv-p3mdw1-756b745b58-kmzbl-18-5F5FC76C-9.0","smtp-id":"<LRzXl_NHStOGhQ4kofSm_A@ismtpd0039p1iad1.sendgrid.net>","timestamp":1600112492}]` + "\r\n"
	sgOtherKey = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEqTxd43gyp8IOEto2LdIfjRQrIbsd4SXZkLW6jDutdhXSJCWHw8REntlo7aNDthvj+y7GjUuFDb/R1NGe1OPzpA=="
	sgBadSig   = "MEUCIQCtIHJeH93Y+qpYeWrySphQgpNGNr/U+UyUlBkU6n7RAwIgJTz2C+8a8xonZGi6BpSzoQsbVRamr2nlxFDWYNH3j/0="
)

// sgMalleate returns the other valid form (r, n-s) of a base64 DER
// P-256 signature.
func sgMalleate(t testing.TB, sig64 string) string {
	t.Helper()
	der, err := base64.StdEncoding.DecodeString(sig64)
	if err != nil {
		t.Fatal(err)
	}
	var rs struct{ R, S *big.Int }
	if _, err := asn1.Unmarshal(der, &rs); err != nil {
		t.Fatal(err)
	}
	rs.S = new(big.Int).Sub(elliptic.P256().Params().N, rs.S)
	out, err := asn1.Marshal(rs)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(out)
}

// sgSign signs ts+body with a key of the test's own, as SendGrid does.
func sgSign(t testing.TB, key *ecdsa.PrivateKey, ts, body string) string {
	d := sha256.Sum256([]byte(ts + body))
	sig, err := ecdsa.SignASN1(rand.Reader, key, d[:])
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(sig)
}

// sgPublic returns the base64 DER SPKI form of a public key (t may be nil
// for a key that marshals).
func sgPublic(t testing.TB, pub any) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(der)
}

func TestSendGridVerify(t *testing.T) {
	one := SendGrid{PublicKeys: []string{sgKey}}
	tol := SendGrid{PublicKeys: []string{sgKey}, ToleranceConfig: tolerance(5 * time.Minute)}
	ts, _ := strconv.ParseInt(sgTS, 10, 64)
	at := func(d time.Duration) time.Time { return time.Unix(ts, 0).Add(d) }
	malleated := sgMalleate(t, sgSig)
	url64 := strings.NewReplacer("+", "-", "/", "_").Replace(sgSig)
	changed := sgSig[:10] + "A" + sgSig[11:] // inside r: still DER
	notDER := base64.StdEncoding.EncodeToString([]byte("this is not a DER ECDSA signature at all!"))

	own, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ownKey := sgPublic(t, &own.PublicKey)
	ownSig := sgSign(t, own, sgTS, sgPayload)
	ownPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: sgDecodeB64(t, ownKey)}))

	for _, tc := range []struct {
		name string
		cfg  SendGrid
		sig  string
		ts   string
		body string
		now  time.Time
		want error
	}{
		// official vectors
		{name: "official: valid signature", cfg: one, sig: sgSig, ts: sgTS, body: sgPayload, now: at(0)},
		{name: "official: bad key", cfg: SendGrid{PublicKeys: []string{sgOtherKey}}, sig: sgSig, ts: sgTS, body: sgPayload, now: at(0), want: ErrMismatch},
		{name: "official: bad payload", cfg: one, sig: sgSig, ts: sgTS, body: "payload", now: at(0), want: ErrMismatch},
		{name: "official: bad signature", cfg: one, sig: sgBadSig, ts: sgTS, body: sgPayload, now: at(0), want: ErrMismatch},
		{name: "official: bad timestamp", cfg: one, sig: sgSig, ts: "timestamp", body: sgPayload, now: at(0), want: ErrFormat},

		// the signed bytes are exact
		{name: "trailing CRLF dropped", cfg: one, sig: sgSig, ts: sgTS, body: strings.TrimSuffix(sgPayload, "\r\n"), now: at(0), want: ErrMismatch},
		{name: "CRLF turned into LF", cfg: one, sig: sgSig, ts: sgTS, body: strings.TrimSuffix(sgPayload, "\r\n") + "\n", now: at(0), want: ErrMismatch},
		{name: "re-serialized JSON", cfg: one, sig: sgSig, ts: sgTS, body: strings.ReplaceAll(sgPayload, `":`, `": `), now: at(0), want: ErrMismatch},
		{name: "timestamp changed", cfg: one, sig: sgSig, ts: "1600112503", body: sgPayload, now: at(0), want: ErrMismatch},
		// no separator between timestamp and body: digits of the timestamp
		// can be moved into the body and the signed bytes stay the same;
		// only a tolerance catches the now ancient timestamp (the body is
		// no longer JSON either)
		{name: "timestamp digits moved into the body: same signed bytes", cfg: one, sig: sgSig, ts: "1", body: "600112502" + sgPayload, now: at(0)},
		{name: "timestamp digits moved into the body, with tolerance", cfg: tol, sig: sgSig, ts: "1", body: "600112502" + sgPayload, now: at(0), want: ErrTimestamp},

		// malleability: (r, n-s) verifies too, which is why the signature is never a dedupe key
		{name: "malleated (r, n-s) also verifies", cfg: one, sig: malleated, ts: sgTS, body: sgPayload, now: at(0)},

		// signature encoding
		{name: "one signature character changed", cfg: one, sig: changed, ts: sgTS, body: sgPayload, now: at(0), want: ErrMismatch},
		{name: "unpadded base64", cfg: one, sig: strings.TrimRight(sgSig, "="), ts: sgTS, body: sgPayload, now: at(0), want: ErrMismatch},
		{name: "base64url alphabet", cfg: one, sig: url64, ts: sgTS, body: sgPayload, now: at(0), want: ErrMismatch},
		{name: "truncated signature", cfg: one, sig: sgSig[:len(sgSig)-4], ts: sgTS, body: sgPayload, now: at(0), want: ErrFormat},
		{name: "padding dropped", cfg: one, sig: sgSig[:len(sgSig)-1], ts: sgTS, body: sgPayload, now: at(0), want: ErrMismatch},
		{name: "truncated by one byte", cfg: one, sig: sgSig[:len(sgSig)-4] + sgSig[len(sgSig)-4:len(sgSig)-2] + "==", ts: sgTS, body: sgPayload, now: at(0), want: ErrFormat},
		{name: "base64 but not DER", cfg: one, sig: notDER, ts: sgTS, body: sgPayload, now: at(0), want: ErrFormat},
		{name: "not base64", cfg: one, sig: "not a signature!", ts: sgTS, body: sgPayload, now: at(0), want: ErrFormat},
		{name: "line break inside", cfg: one, sig: sgSig[:40] + "\n" + sgSig[40:], ts: sgTS, body: sgPayload, now: at(0), want: ErrFormat},
		{name: "too long", cfg: one, sig: sgSig + "AAAA", ts: sgTS, body: sgPayload, now: at(0), want: ErrFormat},
		{name: "missing signature", cfg: one, ts: sgTS, body: sgPayload, now: at(0), want: ErrFormat},
		{name: "missing timestamp", cfg: one, sig: sgSig, body: sgPayload, now: at(0), want: ErrFormat},
		{name: "negative timestamp", cfg: one, sig: sgSig, ts: "-1600112502", body: sgPayload, now: at(0), want: ErrFormat},
		{name: "timestamp with spaces", cfg: one, sig: sgSig, ts: " 1600112502", body: sgPayload, now: at(0), want: ErrFormat},

		// key forms
		{name: "own key, own signature", cfg: SendGrid{PublicKeys: []string{ownKey}}, sig: ownSig, ts: sgTS, body: sgPayload, now: at(0)},
		{name: "own key as PEM", cfg: SendGrid{PublicKeys: []string{ownPEM}}, sig: ownSig, ts: sgTS, body: sgPayload, now: at(0)},
		{name: "own signature, official key", cfg: one, sig: ownSig, ts: sgTS, body: sgPayload, now: at(0), want: ErrMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := provision(t, tc.cfg)
			r := newRequest()
			if tc.sig != "" {
				r.Header.Set("X-Twilio-Email-Event-Webhook-Signature", tc.sig)
			}
			if tc.ts != "" {
				r.Header.Set("X-Twilio-Email-Event-Webhook-Timestamp", tc.ts)
			}
			err := s.Verify(r, []byte(tc.body), tc.now)
			checkErr(t, err, tc.want, sgSig, sgKey)
		})
	}
}

func sgDecodeB64(t testing.TB, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSendGridProvision: the key forms accepted (base64 DER SPKI, or PEM,
// of a P-256 key) and refused, without the error repeating a key.
func TestSendGridProvision(t *testing.T) {
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	edPub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := "-----BEGIN CERTIFICATE-----\n" + sgKey + "\n-----END CERTIFICATE-----\n"
	runProvisionCases(t, []provisionCase[SendGrid]{
		{name: "surrounding space ignored", cfg: SendGrid{PublicKeys: []string{" " + sgKey + "\n"}}},
		{name: "not base64", cfg: SendGrid{PublicKeys: []string{"not-a-key!"}}, wantErr: "public key 1: not base64"},
		{name: "unpadded base64", cfg: SendGrid{PublicKeys: []string{strings.TrimRight(sgKey, "=")}}, wantErr: "public key 1: not base64"},
		{name: "base64 but not SPKI", cfg: SendGrid{PublicKeys: []string{base64.StdEncoding.EncodeToString([]byte("hello"))}}, wantErr: "not a DER SubjectPublicKeyInfo"},
		{name: "P-384 key", cfg: SendGrid{PublicKeys: []string{sgPublic(t, &p384.PublicKey)}}, wantErr: "not an ECDSA P-256 public key"},
		{name: "ed25519 key", cfg: SendGrid{PublicKeys: []string{sgPublic(t, edPub)}}, wantErr: "not an ECDSA P-256 public key"},
		{name: "PEM of another type", cfg: SendGrid{PublicKeys: []string{certPEM}}, wantErr: "not a single PEM PUBLIC KEY block"},
		{name: "one bad key among good ones", cfg: SendGrid{PublicKeys: []string{sgKey, "bad"}}, wantErr: "public key 2: not base64"},
	}, func(t *testing.T, s *SendGrid) {
		r := newRequest("X-Twilio-Email-Event-Webhook-Signature", sgSig, "X-Twilio-Email-Event-Webhook-Timestamp", sgTS)
		ts, _ := strconv.ParseInt(sgTS, 10, 64)
		checkErr(t, s.Verify(r, []byte(sgPayload), time.Unix(ts, 0)), nil)
	})
}

// FuzzSendGridHeader feeds arbitrary signature and timestamp headers and
// bodies. Verify must never panic, must never report anything but the
// documented errors, and must accept only the official signature or its
// malleated twin, over the official timestamp and payload bytes.
func FuzzSendGridHeader(f *testing.F) {
	f.Add([]byte(sgPayload), sgSig, sgTS)
	f.Add([]byte(sgPayload), sgMalleate(f, sgSig), sgTS)
	f.Add([]byte(sgPayload), sgBadSig, sgTS)
	f.Add([]byte(sgPayload), strings.TrimRight(sgSig, "="), sgTS)
	f.Add([]byte(sgPayload), sgSig, "timestamp")
	f.Add([]byte("payload"), sgSig, sgTS)
	f.Add([]byte(""), "MAYCAQECAQE=", "0")

	s := provision(f, SendGrid{PublicKeys: []string{sgKey}})
	valid := map[string]bool{sgSig: true, sgMalleate(f, sgSig): true}
	now := time.Unix(1600112502, 0)

	f.Fuzz(func(t *testing.T, body []byte, sig, ts string) {
		r := newRequest()
		r.Header["X-Twilio-Email-Event-Webhook-Signature"] = []string{sig}
		r.Header["X-Twilio-Email-Event-Webhook-Timestamp"] = []string{ts}
		if fuzzRefused(t, s.Verify(r, body, now), true) {
			return
		}
		// the signed bytes are ts+body with no separator (see the
		// "timestamp digits moved into the body" case)
		if !valid[sig] || ts+string(body) != sgTS+sgPayload {
			t.Fatalf("accepted sig %q ts %q body %q", sig, ts, body)
		}
	})
}
