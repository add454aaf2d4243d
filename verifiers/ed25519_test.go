package verifiers

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestEd25519 covers what the conformance suite (Discord's form) does
// not: Telnyx's form (base64 key and signature over "<ts>|<body>"), keys
// written either way, and the provisioning errors, which never show a
// key.
func TestEd25519(t *testing.T) {
	pubB64 := base64.StdEncoding.EncodeToString(edKeyA.Public().(ed25519.PublicKey))
	at := time.Unix(1700000000, 0)
	ts := strconv.FormatInt(at.Unix(), 10)
	body := `{"data":{"event_type":"call.initiated","id":"0ccc7b54-4df3-4bca-a65a-3da1ecc777f0"}}`
	telnyx := Ed25519{SecretsConfig: keyed(pubB64), Header: "telnyx-signature-ed25519", Encoding: "base64",
		TimestampHeader: "telnyx-timestamp", SignedContent: "{timestamp}|{body}"}
	sig := base64.StdEncoding.EncodeToString(ed25519.Sign(edKeyA, []byte(ts+"|"+body)))
	runVerifyCases(t, newRequest, []verifyCase[Ed25519]{
		{name: "telnyx", cfg: telnyx, headers: []string{"telnyx-signature-ed25519", sig, "telnyx-timestamp", ts}, body: body, now: at},
		{name: "telnyx, the key in hex", cfg: Ed25519{SecretsConfig: keyed(edPublicHex(edKeyA)), Header: "telnyx-signature-ed25519", Encoding: "base64",
			TimestampHeader: "telnyx-timestamp", SignedContent: "{timestamp}|{body}"}, headers: []string{"telnyx-signature-ed25519", sig, "telnyx-timestamp", ts}, body: body, now: at},
		{name: "telnyx, signed without the bar", cfg: telnyx, headers: []string{"telnyx-signature-ed25519", base64.StdEncoding.EncodeToString(ed25519.Sign(edKeyA, []byte(ts+body))), "telnyx-timestamp", ts}, body: body, now: at, want: ErrMismatch},
		{name: "telnyx, unpadded base64", cfg: telnyx, headers: []string{"telnyx-signature-ed25519", strings.TrimRight(sig, "="), "telnyx-timestamp", ts}, body: body, now: at, want: ErrMismatch},
		{name: "telnyx, 6 minutes late", cfg: telnyx, headers: []string{"telnyx-signature-ed25519", sig, "telnyx-timestamp", ts}, body: body, now: at.Add(6 * time.Minute), want: ErrTimestamp},
		{name: "telnyx, timestamp missing", cfg: telnyx, headers: []string{"telnyx-signature-ed25519", sig}, body: body, now: at, want: ErrFormat},
		{name: "hex signature where base64 is configured", cfg: telnyx, headers: []string{"telnyx-signature-ed25519", hex.EncodeToString(ed25519.Sign(edKeyA, []byte(ts+"|"+body))), "telnyx-timestamp", ts}, body: body, now: at, want: ErrFormat},
	}, sig)

	for _, tc := range []struct {
		name    string
		cfg     Ed25519
		wantErr string
	}{
		{"no header", Ed25519{SecretsConfig: keyed(pubB64)}, "header is required"},
		{"a key of 31 bytes", Ed25519{SecretsConfig: keyed(hex.EncodeToString(make([]byte, 31))), Header: "X-Sig"}, "public key 1"},
		{"a private key", Ed25519{SecretsConfig: keyed(pubB64, hex.EncodeToString(edKeyB)), Header: "X-Sig"}, "public key 2"},
		{"timestamp not signed", Ed25519{SecretsConfig: keyed(pubB64), Header: "X-Sig", TimestampHeader: "X-Ts", SignedContent: "{body}"}, "{timestamp}"},
		{"tolerance without timestamp", Ed25519{SecretsConfig: keyed(pubB64), Header: "X-Sig", ToleranceConfig: tolerance(time.Minute)}, "timestamp_header"},
		{"timestamp_format without timestamp", Ed25519{SecretsConfig: keyed(pubB64), Header: "X-Sig", TimestampFormat: "unix_ms"}, "timestamp_header"},
	} {
		e := tc.cfg
		err := e.Provision(testContext(t))
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.wantErr)
		}
		if err != nil && (strings.Contains(err.Error(), pubB64) || strings.Contains(err.Error(), hex.EncodeToString(edKeyB))) {
			t.Errorf("%s: the error shows a key: %v", tc.name, err)
		}
	}
}

// TestEd25519WeakKeys: a public key with which any signature could verify
// (the identity, a point of small order, all zeros) or that is no curve
// point is refused at load, named by its number among the configured
// secrets (an unset one before it counted), never by value; the same for
// a Standard Webhooks whpk_ key.
func TestEd25519WeakKeys(t *testing.T) {
	identity := "01" + strings.Repeat("00", 31)
	for _, tc := range []struct{ name, key string }{
		{"the identity", identity},
		{"all zeros (small order)", strings.Repeat("00", 32)},
		{"no curve point", "02" + strings.Repeat("00", 31)},
	} {
		e := Ed25519{SecretsConfig: keyed("{env.HOOKLINE_TEST_UNSET_KEY}", edPublicHex(edKeyA), tc.key), Header: "X-Sig"}
		err := e.Provision(testContext(t))
		if err == nil || !strings.Contains(err.Error(), "public key 3") || strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s: %v, want public key 3 refused, unnamed", tc.name, err)
		}
	}
	s := Standard{TimestampedConfig: timestamped(0, "whpk_"+base64.StdEncoding.EncodeToString(mustHex(identity)))}
	if err := s.Provision(testContext(t)); err == nil || !strings.Contains(err.Error(), "secret 1") {
		t.Errorf("whpk_ identity: %v, want it refused", err)
	}
}
