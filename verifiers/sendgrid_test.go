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
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// The official vectors of sendgrid/sendgrid-python
// test/unit/test_eventwebhook.py (@76788e70, shared/SIGNATURES.md):
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

func provisionSendGrid(t testing.TB, s SendGrid) *SendGrid {
	t.Helper()
	if err := s.Provision(testContext(t)); err != nil {
		t.Fatalf("provision: %v", err)
	}
	return &s
}

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
	t.Helper()
	d := sha256.Sum256([]byte(ts + body))
	sig, err := ecdsa.SignASN1(rand.Reader, key, d[:])
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(sig)
}

// sgPublic returns the base64 DER SPKI form of key's public half.
func sgPublic(t testing.TB, pub any) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(der)
}

func TestSendGridVerify(t *testing.T) {
	one := SendGrid{PublicKeys: []string{sgKey}}
	tol := SendGrid{PublicKeys: []string{sgKey}, Tolerance: caddy.Duration(5 * time.Minute)}
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
		{name: "one body byte changed", cfg: one, sig: sgSig, ts: sgTS, body: strings.Replace(sgPayload, "dropped", "droppeD", 1), now: at(0), want: ErrMismatch},
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

		// replay window: none by default, optional tolerance in both directions
		{name: "no tolerance: years later", cfg: one, sig: sgSig, ts: sgTS, body: sgPayload, now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)},
		{name: "tolerance: at the past boundary", cfg: tol, sig: sgSig, ts: sgTS, body: sgPayload, now: at(5 * time.Minute)},
		{name: "tolerance: 1s too old", cfg: tol, sig: sgSig, ts: sgTS, body: sgPayload, now: at(5*time.Minute + time.Second), want: ErrTimestamp},
		{name: "tolerance: at the future boundary", cfg: tol, sig: sgSig, ts: sgTS, body: sgPayload, now: at(-5 * time.Minute)},
		{name: "tolerance: 1s too far in the future", cfg: tol, sig: sgSig, ts: sgTS, body: sgPayload, now: at(-5*time.Minute - time.Second), want: ErrTimestamp},

		// rotation and key forms
		{name: "rotation: second key verifies", cfg: SendGrid{PublicKeys: []string{sgOtherKey, sgKey}}, sig: sgSig, ts: sgTS, body: sgPayload, now: at(0)},
		{name: "rotation: no key verifies", cfg: SendGrid{PublicKeys: []string{sgOtherKey, ownKey}}, sig: sgSig, ts: sgTS, body: sgPayload, now: at(0), want: ErrMismatch},
		{name: "own key, own signature", cfg: SendGrid{PublicKeys: []string{ownKey}}, sig: ownSig, ts: sgTS, body: sgPayload, now: at(0)},
		{name: "own key as PEM", cfg: SendGrid{PublicKeys: []string{ownPEM}}, sig: ownSig, ts: sgTS, body: sgPayload, now: at(0)},
		{name: "own signature, official key", cfg: one, sig: ownSig, ts: sgTS, body: sgPayload, now: at(0), want: ErrMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := provisionSendGrid(t, tc.cfg)
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

func TestSendGridProvision(t *testing.T) {
	t.Setenv("HOOKLINE_TEST_SG", sgKey)
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	edPub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := "-----BEGIN CERTIFICATE-----\n" + sgKey + "\n-----END CERTIFICATE-----\n"
	for _, tc := range []struct {
		name    string
		cfg     SendGrid
		wantErr bool
	}{
		{name: "literal", cfg: SendGrid{PublicKeys: []string{sgKey}}},
		{name: "env", cfg: SendGrid{PublicKeys: []string{"{env.HOOKLINE_TEST_SG}"}}},
		{name: "surrounding space ignored", cfg: SendGrid{PublicKeys: []string{" " + sgKey + "\n"}}},
		{name: "unset old key ignored", cfg: SendGrid{PublicKeys: []string{"{env.HOOKLINE_TEST_UNSET_XYZ}", sgKey}}},
		{name: "with tolerance", cfg: SendGrid{PublicKeys: []string{sgKey}, Tolerance: caddy.Duration(time.Minute)}},
		{name: "none", wantErr: true},
		{name: "all empty", cfg: SendGrid{PublicKeys: []string{"", "{env.HOOKLINE_TEST_UNSET_XYZ}"}}, wantErr: true},
		{name: "not base64", cfg: SendGrid{PublicKeys: []string{"not-a-key!"}}, wantErr: true},
		{name: "unpadded base64", cfg: SendGrid{PublicKeys: []string{strings.TrimRight(sgKey, "=")}}, wantErr: true},
		{name: "base64 but not SPKI", cfg: SendGrid{PublicKeys: []string{base64.StdEncoding.EncodeToString([]byte("hello"))}}, wantErr: true},
		{name: "P-384 key", cfg: SendGrid{PublicKeys: []string{sgPublic(t, &p384.PublicKey)}}, wantErr: true},
		{name: "ed25519 key", cfg: SendGrid{PublicKeys: []string{sgPublic(t, edPub)}}, wantErr: true},
		{name: "PEM of another type", cfg: SendGrid{PublicKeys: []string{certPEM}}, wantErr: true},
		{name: "one bad key among good ones", cfg: SendGrid{PublicKeys: []string{sgKey, "bad"}}, wantErr: true},
		{name: "negative tolerance", cfg: SendGrid{PublicKeys: []string{sgKey}, Tolerance: caddy.Duration(-time.Second)}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.cfg
			err := s.Provision(testContext(t))
			if tc.wantErr {
				if err == nil {
					t.Fatal("want error")
				}
				for _, k := range s.PublicKeys {
					if len(k) > 8 && strings.Contains(err.Error(), strings.TrimSpace(k)) {
						t.Fatalf("error %q repeats a configured key", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s.PublicKeys, tc.cfg.PublicKeys) {
				t.Fatal("Provision changed the configured keys")
			}
			r := newRequest("X-Twilio-Email-Event-Webhook-Signature", sgSig, "X-Twilio-Email-Event-Webhook-Timestamp", sgTS)
			ts, _ := strconv.ParseInt(sgTS, 10, 64)
			checkErr(t, s.Verify(r, []byte(sgPayload), time.Unix(ts, 0)), nil)
		})
	}
}

func TestSendGridDefaultIDFrom(t *testing.T) {
	got := ruleStrings((&SendGrid{}).DefaultIDFrom())
	if want := []string{"json 0.sg_event_id unless 1", "raw_hash"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("DefaultIDFrom() = %v, want %v", got, want)
	}
}

func TestSendGridUnmarshalCaddyfile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		input   string
		want    SendGrid
		wantErr bool
	}{
		{name: "one key", input: `sendgrid {env.SENDGRID_KEY}`, want: SendGrid{PublicKeys: []string{"{env.SENDGRID_KEY}"}}},
		{name: "rotation on the line", input: `sendgrid new old`, want: SendGrid{PublicKeys: []string{"new", "old"}}},
		{name: "block", input: "sendgrid a {\n public_key b\n secret c d\n tolerance 10m\n}", want: SendGrid{PublicKeys: []string{"a", "b", "c", "d"}, Tolerance: caddy.Duration(10 * time.Minute)}},
		{name: "public_key without value", input: "sendgrid {\n public_key\n}", wantErr: true},
		{name: "bad tolerance", input: "sendgrid k {\n tolerance 5 minutes\n}", wantErr: true},
		{name: "negative tolerance", input: "sendgrid k {\n tolerance -1m\n}", wantErr: true},
		{name: "unknown option", input: "sendgrid k {\n header X-Sig\n}", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s SendGrid
			err := s.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got %+v, want error", s)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", s, tc.want)
			}
		})
	}
}

func TestSendGridModule(t *testing.T) {
	ctx := testContext(t)
	raw, _ := json.Marshal(map[string]any{"public_keys": []string{sgKey}})
	v, err := ctx.LoadModuleByID("webhooks.verifiers.sendgrid", raw)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := v.(IDDefaulter); !ok {
		t.Fatalf("%T is not an IDDefaulter", v)
	}
	r := newRequest("X-Twilio-Email-Event-Webhook-Signature", sgSig, "X-Twilio-Email-Event-Webhook-Timestamp", sgTS)
	checkErr(t, v.(Verifier).Verify(r, []byte(sgPayload), time.Now()), nil)
	if _, err := ctx.LoadModuleByID("webhooks.verifiers.sendgrid", json.RawMessage(`{}`)); err == nil {
		t.Fatal("module without keys provisioned")
	}
	if _, err := ctx.LoadModuleByID("webhooks.verifiers.sendgrid", json.RawMessage(`{"public_keys":["x"]}`)); err == nil {
		t.Fatal("module with a bad key provisioned")
	}
	if _, err := ctx.LoadModuleByID("webhooks.verifiers.sendgrid", json.RawMessage(`{"secrets":["x"]}`)); err == nil {
		t.Fatal("unknown JSON field accepted")
	}
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

	s := provisionSendGrid(f, SendGrid{PublicKeys: []string{sgKey}})
	valid := map[string]bool{sgSig: true, sgMalleate(f, sgSig): true}
	now := time.Unix(1600112502, 0)

	f.Fuzz(func(t *testing.T, body []byte, sig, ts string) {
		r := newRequest()
		r.Header["X-Twilio-Email-Event-Webhook-Signature"] = []string{sig}
		r.Header["X-Twilio-Email-Event-Webhook-Timestamp"] = []string{ts}
		err := s.Verify(r, body, now)
		if err != nil {
			if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrMismatch) && !errors.Is(err, ErrTimestamp) {
				t.Fatalf("undocumented error %v", err)
			}
			return
		}
		// the signed bytes are ts+body with no separator (see the
		// "timestamp digits moved into the body" case)
		if !valid[sig] || ts+string(body) != sgTS+sgPayload {
			t.Fatalf("accepted sig %q ts %q body %q", sig, ts, body)
		}
	})
}

func BenchmarkVerifySendGrid(b *testing.B) {
	body := []byte(`[{"x":"` + strings.Repeat("a", 1024-12) + `"}]` + "\r\n") // 1 KiB
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	s := provisionSendGrid(b, SendGrid{PublicKeys: []string{sgPublic(b, &key.PublicKey)}})
	now := time.Now()
	ts := strconv.FormatInt(now.Unix(), 10)
	r := newRequest("X-Twilio-Email-Event-Webhook-Signature", sgSign(b, key, ts, string(body)), "X-Twilio-Email-Event-Webhook-Timestamp", ts)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := s.Verify(r, body, now); err != nil {
			b.Fatal(err)
		}
	}
}
