package verifiers

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// This file is the conformance suite: the cases every keyed scheme must
// pass (valid signature, wrong secret, tampered body, missing, empty and
// malformed header, the text of the signature, rotation, replay window,
// provisioning, JSON and Caddyfile round trips, default ids), run from one
// table of schemes (conformanceSchemes): how each is configured and how
// its provider signs a request. A provider's own _test.go keeps only its
// official vectors and its quirks.

// conformanceSchemes are the schemes the suite runs: every keyed scheme of
// the package (none has no keys: none_test.go), with how its provider
// signs a request and what is particular to its configuration.
var conformanceSchemes = []*conformance{{
	label: "github", names: []string{"github"},
	keys: [2]string{ghSecret, "another github secret"}, body: ghPayload,
	sign:   bodyHMACSigner(GitHubSignatureHeader, "sha256=", EncodingHex),
	header: GitHubSignatureHeader, malformed: ghHex,
	encoding: EncodingHex, prefix: "sha256=",
	defaultIDs: []string{"header X-GitHub-Delivery"},
	caddyfile: []caddyfileCase{
		{name: "allow_sha1", input: "github a {\n secret b\n allow_sha1\n}", json: `{"secrets":["a","b"],"allow_sha1":true}`},
		{name: "allow_sha1 takes no argument", input: "github s {\n allow_sha1 yes\n}", wantErr: true},
	},
}, {
	// the token itself is the "signature"; the body is not authenticated
	label: "gitlab", names: []string{"gitlab"},
	keys: [2]string{glToken, "glwt-another-token"}, body: glBody,
	sign: func(_ testing.TB, key string, _ []byte, _ time.Time) *http.Request {
		return newRequest(GitLabTokenHeader, key)
	},
	header: GitLabTokenHeader, bodyUnsigned: true,
	defaultIDs: []string{"header Idempotency-Key", "raw_hash X-Gitlab-Event-UUID"},
}, {
	label: "shopify", names: []string{"shopify"},
	keys: [2]string{shopifySecret, "another_secret"}, body: shopifyBody,
	sign:   signedShopify,
	header: ShopifyHMACHeader, malformed: "fake", // shopify-api-js's "returns false on invalid HMAC"
	encoding:   EncodingBase64,
	defaultIDs: []string{"header X-Shopify-Webhook-Id"},
}, {
	label: "twitter", names: []string{"twitter", "x"},
	keys: [2]string{xSecret, "another-consumer-secret"}, body: xBody,
	sign:   bodyHMACSigner(TwitterSignatureHeader, "sha256=", EncodingBase64),
	header: TwitterSignatureHeader, malformed: xB64,
	encoding: EncodingBase64, prefix: "sha256=",
}, {
	label: "meta", names: []string{"meta", "facebook", "whatsapp", "instagram"},
	keys: [2]string{metaSecret, "another-app-secret"}, body: metaBody,
	sign:   bodyHMACSigner(MetaSignatureHeader, "sha256=", EncodingHex),
	header: MetaSignatureHeader, malformed: metaHex,
	encoding: EncodingHex, prefix: "sha256=",
	defaultIDs: []string{
		"json entry.0.changes.0.value.messages.0.id unless entry.1 unless entry.0.changes.1 unless entry.0.changes.0.value.messages.1 unless entry.0.changes.0.value.statuses",
		"json entry.0.messaging.0.message.mid unless entry.1 unless entry.0.messaging.1 unless entry.0.messaging.0.message.is_deleted",
		"raw_hash",
	},
	caddyfile: []caddyfileCase{
		{name: "verify_token", input: "meta a {\n secret b c\n verify_token {env.META_VERIFY}\n}", json: `{"secrets":["a","b","c"],"verify_token":"{env.META_VERIFY}"}`},
		{name: "verify_token without value", input: "meta s {\n verify_token\n}", wantErr: true},
		{name: "verify_token with two values", input: "meta s {\n verify_token a b\n}", wantErr: true},
		{name: "verify_token twice", input: "meta s {\n verify_token a\n verify_token b\n}", wantErr: true},
	},
}, {
	label: "twilio", names: []string{"twilio"},
	keys: [2]string{twToken, "54321"}, body: twForm, bench: twilioBenchBody(),
	sign:   signedTwilio,
	header: TwilioSignatureHeader, malformed: "WRONG_SIGNATURE", // twilio-node's
	encoding:   EncodingBase64,
	defaultIDs: []string{"header I-Twilio-Idempotency-Token", "raw_hash"},
	caddyfile: []caddyfileCase{
		{name: "url", input: "twilio a {\n secret b\n url https://hooks.example.com\n}", json: `{"secrets":["a","b"],"url":"https://hooks.example.com"}`},
		{name: "url without value", input: "twilio a {\n url\n}", wantErr: true},
		{name: "url with two values", input: "twilio a {\n url https://a https://b\n}", wantErr: true},
		{name: "url twice", input: "twilio a {\n url https://a\n url https://b\n}", wantErr: true},
		{name: "header", input: "twilio a {\n header X-Mandrill-Signature\n url https://hooks.example.com\n}", json: `{"secrets":["a"],"url":"https://hooks.example.com","header":"X-Mandrill-Signature"}`},
		{name: "header twice", input: "twilio a {\n header A\n header B\n}", wantErr: true},
	},
}, {
	label: "stripe", names: []string{"stripe"},
	keys: [2]string{stripeSecret, "whsec_another_secret"}, body: stripePayload,
	sign:   signedStripe,
	header: StripeSignatureHeader, malformed: "bad_header", // stripe-node's
	timestamped: true, tolerance: 5 * time.Minute,
	defaultIDs: []string{"json id"},
	caddyfile: []caddyfileCase{
		{name: "header", input: "stripe a {\n header Calendly-Webhook-Signature\n tolerance 3m\n}", json: `{"secrets":["a"],"tolerance":180000000000,"header":"Calendly-Webhook-Signature"}`},
		{name: "header without value", input: "stripe a {\n header\n}", wantErr: true},
		{name: "header twice", input: "stripe a {\n header A\n header B\n}", wantErr: true},
	},
}, {
	label: "slack", names: []string{"slack"},
	keys: [2]string{slackVecSecret, "another signing secret"}, body: slackVecBody,
	sign:   signedSlack,
	header: SlackSignatureHeader, malformed: "v0=abc",
	encoding: EncodingHex, prefix: "v0=",
	timestamped: true, tolerance: 5 * time.Minute,
	defaultIDs: []string{"json event_id"},
}, {
	label: "paddle", names: []string{"paddle"},
	keys: [2]string{pdSecret, "pdl_ntfset_another"}, body: pdBody,
	sign:   signedPaddle,
	header: PaddleSignatureHeader, malformed: "invalid_header", // paddle-node-sdk's
	timestamped: true, tolerance: 5 * time.Second,
	defaultIDs: []string{"json event_id"},
}, {
	label: "standard", names: []string{"standard", "svix"},
	keys: [2]string{stdSecret, "whsec_" + base64.StdEncoding.EncodeToString([]byte("a new secret of 24 bytes"))}, body: stdPayload,
	sign:   signedStandard,
	header: StandardSignatureHeader, malformed: stdSigB64, // no version
	encoding: EncodingBase64, prefix: "v1,",
	timestamped: true, tolerance: 5 * time.Minute,
	defaultIDs: []string{"header webhook-id", "header svix-id"},
}, {
	// the keys are public keys; their private halves sign
	label: "sendgrid", names: []string{"sendgrid"}, field: "public_keys",
	keys: [2]string{sgPublic(nil, &sgKeyA.PublicKey), sgPublic(nil, &sgKeyB.PublicKey)}, body: sgPayload,
	sign:   signedSendGrid,
	header: SendGridSignatureHeader, malformed: "not a signature!",
	timestamped: true, // no replay window unless a tolerance is set
	defaultIDs:  []string{"json 0.sg_event_id unless 1", "raw_hash"},
	caddyfile: []caddyfileCase{
		{name: "public_key lines", input: "sendgrid a {\n public_key b\n secret c d\n}", json: `{"public_keys":["a","b","c","d"]}`},
		{name: "public_key without value", input: "sendgrid {\n public_key\n}", wantErr: true},
	},
}, {
	label: "zoom", names: []string{"zoom"},
	keys: [2]string{zoomSecret, "another zoom secret token"}, body: zoomBody,
	sign:   signedZoom,
	header: ZoomSignatureHeader, malformed: "v0=abc",
	encoding: EncodingHex, prefix: "v0=",
	timestamped: true, tolerance: 5 * time.Minute,
	defaultIDs: []string{"raw_hash"},
}, {
	// the clientState is in the body; there is no header
	label: "msgraph", names: []string{"msgraph"},
	keys: [2]string{graphState, "anotherClientState"}, body: graphBody(graphState), bodyOf: graphBody,
	bench: graphBenchBody(),
	sign: func(_ testing.TB, _ string, _ []byte, _ time.Time) *http.Request {
		return newRequest("Content-Type", "application/json; charset=utf-8")
	},
	tampered: ErrFormat, // the last '}' changed: no JSON collection at all
}, {
	// the generic scheme with its defaults
	label: "hmac", names: []string{"hmac"},
	keys: [2]string{rfcKey, "another hmac secret"}, body: rfcMsg,
	sign:   signedHMAC,
	header: DefaultHMACHeader, malformed: "z" + rfcSHA256[1:],
	encoding:       EncodingHex,
	takesTolerance: true,
	defaultIDs:     []string{"header Idempotency-Key"},
	caddyfile: []caddyfileCase{
		{
			name: "every option",
			input: `hmac a {
				secret b c
				secret {file./run/secrets/hook}
				header X-Hook-Signature
				algorithm sha512
				encoding base64
				prefix sha512=
				timestamp_header X-Hook-Timestamp
				id_header X-Hook-Id
				signed_content "{id}.{timestamp}.{body}"
				tolerance 90s
			}`,
			json: `{"secrets":["a","b","c","{file./run/secrets/hook}"],"header":"X-Hook-Signature","algorithm":"sha512","encoding":"base64","prefix":"sha512=",` +
				`"timestamp_header":"X-Hook-Timestamp","id_header":"X-Hook-Id","signed_content":"{id}.{timestamp}.{body}","tolerance":90000000000}`,
		},
		{name: "unquoted template", input: "hmac s {\n signed_content v0:{timestamp}:{body}\n timestamp_header T\n}", json: `{"secrets":["s"],"timestamp_header":"T","signed_content":"v0:{timestamp}:{body}"}`},
		{name: "params and formats", input: "hmac s {\n header WorkOS-Signature\n signature_param v1\n timestamp_param t\n timestamp_format unix_ms\n secret_encoding base64\n algorithm md5\n}",
			json: `{"secrets":["s"],"header":"WorkOS-Signature","algorithm":"md5","signature_param":"v1","timestamp_param":"t","timestamp_format":"unix_ms","secret_encoding":"base64"}`},
		{name: "bad timestamp_format", input: "hmac s {\n timestamp_format iso8601\n}", wantErr: true},
		{name: "bad secret_encoding", input: "hmac s {\n secret_encoding base32\n}", wantErr: true},
		{name: "header without value", input: "hmac s {\n header\n}", wantErr: true},
		{name: "header with two values", input: "hmac s {\n header A B\n}", wantErr: true},
		{name: "bad algorithm", input: "hmac s {\n algorithm sha3-256\n}", wantErr: true},
		{name: "bad encoding", input: "hmac s {\n encoding base32\n}", wantErr: true},
		{name: "bad template", input: "hmac s {\n signed_content {method}\n}", wantErr: true},
		{name: "option name close to one", input: "hmac s {\n algo sha1\n}", wantErr: true},
	},
}, {
	// the generic scheme signing "<timestamp>.<body>" (the default template)
	label: "twitch", names: []string{"twitch"},
	keys: [2]string{twitchSecret, "another twitch secret"}, body: twitchBody,
	sign:   signedTwitch,
	header: TwitchSignatureHeader, malformed: "sha256=abc",
	encoding: EncodingHex, prefix: "sha256=",
	timestamped: true, tolerance: 10 * time.Minute,
	defaultIDs: []string{"header Twitch-Eventsub-Message-Id"},
}, {
	// Discord's form: hex key and signature over timestamp + body
	label: "ed25519", names: []string{"ed25519"},
	keys: [2]string{edPublicHex(edKeyA), edPublicHex(edKeyB)}, body: `{"version":1,"application_id":"1234567890","type":1,"event":{"type":"APPLICATION_AUTHORIZED","timestamp":"2024-10-18T14:42:53.064834"}}`,
	options:          `"header":"X-Signature-Ed25519","timestamp_header":"X-Signature-Timestamp"`,
	caddyfileOptions: "header X-Signature-Ed25519\n timestamp_header X-Signature-Timestamp",
	sign:             signedEd25519,
	header:           "X-Signature-Ed25519", malformed: "not a signature",
	encoding:    EncodingHex,
	timestamped: true, tolerance: 5 * time.Minute,
	defaultIDs: []string{"header Idempotency-Key"},
	caddyfile: []caddyfileCase{
		{name: "telnyx", input: "ed25519 k {\n header telnyx-signature-ed25519\n encoding base64\n timestamp_header telnyx-timestamp\n signed_content {timestamp}|{body}\n}",
			json: `{"secrets":["k"],"header":"telnyx-signature-ed25519","encoding":"base64","timestamp_header":"telnyx-timestamp","signed_content":"{timestamp}|{body}"}`},
		{name: "bad encoding", input: "ed25519 k {\n encoding base32\n}", wantErr: true},
		{name: "bad timestamp_format", input: "ed25519 k {\n timestamp_format iso\n}", wantErr: true},
	},
}, {
	label: "hmac_timestamped", names: []string{"hmac"},
	keys: [2]string{rfcKey, "another hmac secret"}, body: tsBody,
	options:          `"prefix":"sha256=","timestamp_header":"X-Timestamp"`,
	caddyfileOptions: "prefix sha256=\n timestamp_header X-Timestamp",
	sign:             signedTimestampedHMAC,
	header:           DefaultHMACHeader, malformed: "sha256=" + tsSig[:10],
	encoding: EncodingHex, prefix: "sha256=",
	timestamped: true, tolerance: 5 * time.Minute,
	defaultIDs: []string{"header Idempotency-Key"},
}}

// The signers of the schemes that need more than a line.

// signedTwitch is the EventSub notification Twitch sends with key's
// signature of its id, its timestamp (RFC 3339) and body.
func signedTwitch(_ testing.TB, key string, body []byte, ts time.Time) *http.Request {
	at := ts.UTC().Format(time.RFC3339Nano)
	return newRequest(TwitchIDHeader, twitchID, TwitchTimestampHeader, at, TwitchTypeHeader, "notification",
		TwitchSignatureHeader, "sha256="+EncodingHex.Encode(hmacOf(sha256.New, []byte(key), []byte(twitchID+at+string(body)))))
}

// edKeyA and edKeyB are the ed25519 conformance keys.
var (
	edKeyA = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{0xa1}, ed25519.SeedSize))
	edKeyB = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{0xb2}, ed25519.SeedSize))
)

// edPublicHex is the hex of priv's public key, as Discord shows it.
func edPublicHex(priv ed25519.PrivateKey) string {
	return hex.EncodeToString(priv.Public().(ed25519.PublicKey))
}

// signedEd25519 is the request Discord sends with the signature, by the
// private key of the public key key, of ts and body.
func signedEd25519(_ testing.TB, key string, body []byte, ts time.Time) *http.Request {
	priv := edKeyA
	if key == edPublicHex(edKeyB) {
		priv = edKeyB
	}
	at := strconv.FormatInt(ts.Unix(), 10)
	return newRequest("X-Signature-Ed25519", hex.EncodeToString(ed25519.Sign(priv, append([]byte(at), body...))), "X-Signature-Timestamp", at)
}

// signedShopify is the request Shopify sends with key's signature of body.
func signedShopify(_ testing.TB, key string, body []byte, _ time.Time) *http.Request {
	return shopifyRequest(ShopifyHMACHeader, EncodingBase64.Encode(hmacOf(sha256.New, []byte(key), body)))
}

// signedTwilio is the request Twilio sends with key's signature of the form
// body POSTed to https://mycompany.com/myapp.php?foo=1&bar=2.
func signedTwilio(_ testing.TB, key string, body []byte, _ time.Time) *http.Request {
	params, _ := url.ParseQuery(string(body))
	sig := twExpected(key, "https://mycompany.com"+twURI, params)
	return twReq{https: true, host: twHost, uri: twURI, ct: formCT, body: string(body), sig: sig}.build()
}

// signedStripe is the request Stripe sends with key's signature of body at
// ts.
func signedStripe(_ testing.TB, key string, body []byte, ts time.Time) *http.Request {
	return newRequest(StripeSignatureHeader, "t="+strconv.FormatInt(ts.Unix(), 10)+",v1="+stripeSig(key, ts.Unix(), string(body)))
}

// signedSlack is the request Slack sends with key's signature of body at
// ts.
func signedSlack(_ testing.TB, key string, body []byte, ts time.Time) *http.Request {
	at := strconv.FormatInt(ts.Unix(), 10)
	return newRequest(SlackTimestampHeader, at, SlackSignatureHeader, slackSign(key, at, string(body)))
}

// signedPaddle is the request Paddle sends with key's signature of body at
// ts.
func signedPaddle(_ testing.TB, key string, body []byte, ts time.Time) *http.Request {
	return newRequest(PaddleSignatureHeader, "ts="+strconv.FormatInt(ts.Unix(), 10)+";h1="+pdSign(key, ts.Unix(), string(body)))
}

// signedStandard is the request of message stdID with key's v1 signature
// of body at ts.
func signedStandard(_ testing.TB, key string, body []byte, ts time.Time) *http.Request {
	at := strconv.FormatInt(ts.Unix(), 10)
	return newRequest(stdHeaders(stdID, at, stdSign(key, stdID, at, string(body)))...)
}

// sgKeyA and sgKeyB are the key pairs of the conformance suite.
var sgKeyA, sgKeyB = newP256Key(), newP256Key()

// newP256Key returns a new ECDSA P-256 key pair.
func newP256Key() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
}

// signedSendGrid is the request SendGrid sends with the signature of body
// at ts by the private half of key (sgKeyA's or sgKeyB's public key).
func signedSendGrid(t testing.TB, key string, body []byte, ts time.Time) *http.Request {
	priv := sgKeyA
	if key == sgPublic(t, &sgKeyB.PublicKey) {
		priv = sgKeyB
	}
	at := strconv.FormatInt(ts.Unix(), 10)
	return newRequest(SendGridSignatureHeader, sgSign(t, priv, at, string(body)), SendGridTimestampHeader, at)
}

// signedZoom is the request Zoom sends with key's signature of body at ts.
func signedZoom(_ testing.TB, key string, body []byte, ts time.Time) *http.Request {
	at := strconv.FormatInt(ts.Unix(), 10)
	return newRequest(ZoomTimestampHeader, at, ZoomSignatureHeader, zoomSign(key, at, string(body)))
}

// signedHMAC is the request signed as the generic scheme does by default.
func signedHMAC(_ testing.TB, key string, body []byte, _ time.Time) *http.Request {
	return newRequest(DefaultHMACHeader, EncodingHex.Encode(hmacOf(sha256.New, []byte(key), body)))
}

// signedTimestampedHMAC is the request of a generic scheme with prefix
// "sha256=" and timestamp_header X-Timestamp ("<ts>.<body>" signed).
func signedTimestampedHMAC(_ testing.TB, key string, body []byte, ts time.Time) *http.Request {
	at := strconv.FormatInt(ts.Unix(), 10)
	return newRequest("X-Timestamp", at, DefaultHMACHeader, "sha256="+EncodingHex.Encode(hmacOf(sha256.New, []byte(key), []byte(at+"."), body)))
}

// conformance describes one scheme to the conformance suite.
type conformance struct {
	// label names the scheme in subtests.
	label string
	// names are the module names of the scheme (webhooks.verifiers.<name>),
	// each also the word after `verify`; the suite runs for each.
	names []string
	// keys are two different secrets, as configured; keys[0] signs.
	keys [2]string
	// field is the JSON field of the secrets: "secrets" when empty.
	field string
	// options are the rest of the configuration, as JSON object members
	// and as the same lines of a Caddyfile block.
	options, caddyfileOptions string
	// body is a body the provider sends.
	body string
	// sign returns the request the provider sends with key's signature of
	// body at ts (all headers the scheme needs).
	sign func(t testing.TB, key string, body []byte, ts time.Time) *http.Request
	// header is the header that carries the signature.
	header string
	// malformed is a value of header that is no signature at all (""
	// when any value is a token to compare: gitlab).
	malformed string
	// encoding is set when header holds prefix and then one MAC in that
	// encoding: the suite checks the text of the signature.
	encoding Encoding
	prefix   string
	// tolerance is the default replay window (0: none).
	tolerance time.Duration
	// timestamped: the scheme signs a timestamp and takes a tolerance.
	timestamped bool
	// takesTolerance: the Caddyfile and JSON take a tolerance although
	// this configuration signs no timestamp (hmac without one).
	takesTolerance bool
	// bodyUnsigned: the body is not authenticated (gitlab).
	bodyUnsigned bool
	// bodyOf, when set, is the body the provider sends for key (the
	// secret travels in the body: msgraph's clientState); body is then
	// bodyOf(keys[0]).
	bodyOf func(key string) string
	// tampered is the error of a body with its last byte changed, when it
	// is not ErrMismatch (nil with bodyUnsigned).
	tampered error
	// defaultIDs are the scheme's DefaultIDFrom, in Caddyfile form.
	defaultIDs []string
	// caddyfile are the cases of the scheme's own Caddyfile options (the
	// input starts with names[0]).
	caddyfile []caddyfileCase
	// bench is the body of BenchmarkVerify (default: verifierBenchBody).
	bench []byte
}

// caddyfileCase is the Caddyfile form of a verify line (input, the words
// after `verify`) and the JSON config it gives, or wantErr.
type caddyfileCase struct {
	name    string
	input   string
	json    string
	wantErr bool
}

// conformanceNow is the clock of the suite.
var conformanceNow = time.Unix(1700000000, 0)

// secretsField is the JSON field of the secrets.
func (s *conformance) secretsField() string {
	if s.field == "" {
		return "secrets"
	}
	return s.field
}

// config returns the JSON config of the scheme keyed with keys.
func (s *conformance) config(keys ...string) string {
	var members []string
	if len(keys) > 0 {
		k, _ := json.Marshal(keys)
		members = append(members, strconv.Quote(s.secretsField())+":"+string(k))
	}
	if s.options != "" {
		members = append(members, s.options)
	}
	return "{" + strings.Join(members, ",") + "}"
}

// withMember adds a member to the JSON object config.
func withMember(config, member string) string {
	if config == "{}" {
		return "{" + member + "}"
	}
	return config[:len(config)-1] + "," + member + "}"
}

// benchBody is the body of BenchmarkVerify.
func (s *conformance) benchBody() []byte {
	if s.bench != nil {
		return s.bench
	}
	return verifierBenchBody()
}

// load provisions the module name (webhooks.verifiers.<name>) from its
// JSON config.
func load(t testing.TB, name, config string) (Verifier, error) {
	t.Helper()
	v, err := testContext(t).LoadModuleByID("webhooks.verifiers."+name, json.RawMessage(config))
	if err != nil {
		return nil, err
	}
	return v.(Verifier), nil
}

// mustLoad is load that fails t on an error.
func mustLoad(t testing.TB, name, config string) Verifier {
	t.Helper()
	v, err := load(t, name, config)
	if err != nil {
		t.Fatalf("provision %s %s: %v", name, config, err)
	}
	return v
}

// bodyFor is the body the provider sends when signing with key.
func (s *conformance) bodyFor(key string) string {
	if s.bodyOf != nil {
		return s.bodyOf(key)
	}
	return s.body
}

// check signs the body with signer at signedAt, verifies it at now with
// the module name configured with keys and checks the result.
func (s *conformance) check(t *testing.T, name string, keys []string, signer string, signedAt time.Time, want error) {
	t.Helper()
	v := mustLoad(t, name, s.config(keys...))
	body := s.bodyFor(signer)
	err := v.Verify(s.sign(t, signer, []byte(body), signedAt), []byte(body), conformanceNow)
	checkErr(t, err, want, s.keys[0], s.keys[1])
}

// checkKey checks that a request signed with signer verifies under keys,
// and that VerifyKey names signer's position among them (want), so that
// the secret matches an operator reads are the right ones.
func (s *conformance) checkKey(t *testing.T, name string, keys []string, signer string, want int) {
	t.Helper()
	s.check(t, name, keys, signer, conformanceNow, nil)
	v, ok := mustLoad(t, name, s.config(keys...)).(KeyVerifier)
	if !ok {
		t.Fatalf("%s does not implement KeyVerifier", name)
	}
	body := s.bodyFor(signer)
	got, err := v.VerifyKey(s.sign(t, signer, []byte(body), conformanceNow), []byte(body), conformanceNow)
	if err != nil || got != want {
		t.Errorf("VerifyKey = %d, %v; want secret %d of %d", got, err, want, len(keys))
	}
	// an optional secret left unset keeps its place: the positions an
	// operator reads do not move
	unset := mustLoad(t, name, s.config(append([]string{"{env.HOOKLINE_TEST_UNSET_SECRET}"}, keys...)...)).(KeyVerifier)
	got, err = unset.VerifyKey(s.sign(t, signer, []byte(body), conformanceNow), []byte(body), conformanceNow)
	if err != nil || got != want+1 || unset.KeyCount() != len(keys)+1 {
		t.Errorf("behind an unset secret: VerifyKey = %d, %v, KeyCount %d; want secret %d of %d", got, err, unset.KeyCount(), want+1, len(keys)+1)
	}
}

func TestConformance(t *testing.T) {
	for _, s := range conformanceSchemes {
		for _, name := range s.names {
			t.Run(s.label+"/"+name, func(t *testing.T) {
				t.Run("verify", func(t *testing.T) { s.testVerify(t, name) })
				if s.timestamped {
					t.Run("replay window", func(t *testing.T) { s.testReplayWindow(t, name) })
				}
				t.Run("provision", func(t *testing.T) { s.testProvision(t, name) })
				t.Run("json", func(t *testing.T) { s.testJSON(t, name) })
				t.Run("caddyfile", func(t *testing.T) { s.testCaddyfile(t, name) })
			})
		}
	}
}

// testVerify: the signature cases.
func (s *conformance) testVerify(t *testing.T, name string) {
	k0, k1 := s.keys[0], s.keys[1]
	v := mustLoad(t, name, s.config(k0))
	verify := func(t *testing.T, r *http.Request, body string, want error) {
		t.Helper()
		checkErr(t, v.Verify(r, []byte(body), conformanceNow), want, k0, k1)
	}
	signed := func() *http.Request { return s.sign(t, k0, []byte(s.body), conformanceNow) }

	t.Run("valid signature", func(t *testing.T) { verify(t, signed(), s.body, nil) })
	t.Run("header names in lower case", func(t *testing.T) {
		r := signed()
		h := r.Header
		r.Header = http.Header{}
		for name, vals := range h {
			for _, val := range vals {
				r.Header.Add(strings.ToLower(name), val)
			}
		}
		verify(t, r, s.body, nil)
	})
	t.Run("wrong secret", func(t *testing.T) { s.check(t, name, []string{k1}, k0, conformanceNow, ErrMismatch) })
	t.Run("tampered body", func(t *testing.T) {
		b := []byte(s.body)
		b[len(b)-1] ^= 1
		want := ErrMismatch
		if s.bodyUnsigned {
			want = nil
		}
		if s.tampered != nil {
			want = s.tampered
		}
		verify(t, signed(), string(b), want)
	})
	if s.header == "" {
		// no header: the secret is in the body (bodyOf)
		t.Run("rotation: second secret matches", func(t *testing.T) { s.checkKey(t, name, []string{k1, k0}, k0, 1) })
		t.Run("rotation: first secret matches", func(t *testing.T) { s.checkKey(t, name, []string{k1, k0}, k1, 0) })
		return
	}
	t.Run("missing header", func(t *testing.T) {
		r := signed()
		r.Header.Del(s.header)
		verify(t, r, s.body, ErrFormat)
	})
	t.Run("empty header", func(t *testing.T) {
		r := signed()
		r.Header.Set(s.header, "")
		verify(t, r, s.body, ErrFormat)
	})
	if s.malformed != "" {
		t.Run("malformed header", func(t *testing.T) {
			r := signed()
			r.Header.Set(s.header, s.malformed)
			verify(t, r, s.body, ErrFormat)
		})
	}
	if s.encoding != "" {
		t.Run("signature text", func(t *testing.T) {
			r := signed()
			for _, tc := range s.signatureTexts(t, r.Header.Get(s.header)) {
				t.Run(tc.name, func(t *testing.T) {
					r.Header.Set(s.header, tc.value)
					verify(t, r, s.body, tc.want)
				})
			}
		})
	}
	t.Run("rotation: second secret matches", func(t *testing.T) { s.checkKey(t, name, []string{k1, k0}, k0, 1) })
	t.Run("rotation: first secret matches", func(t *testing.T) { s.checkKey(t, name, []string{k1, k0}, k1, 0) })
}

// signatureTexts are the cases of the text of a valid signature (prefix
// and MAC) of a scheme: only the exact canonical text is accepted, a text
// that cannot be the MAC is malformed, and a non-canonical spelling of
// the right MAC (upper-case hex; unpadded or base64url base64) does not
// match.
func (s *conformance) signatureTexts(t *testing.T, valid string) []struct {
	name, value string
	want        error
} {
	mac, ok := strings.CutPrefix(valid, s.prefix)
	if !ok {
		t.Fatalf("signed %q does not start with %q", valid, s.prefix)
	}
	type text = struct {
		name, value string
		want        error
	}
	first := "0" // a character of both alphabets, other than mac's first
	if mac[0] == '0' {
		first = "1"
	}
	texts := []text{{"first character changed", s.prefix + first + mac[1:], ErrMismatch}}
	if s.prefix != "" {
		texts = append(texts,
			text{"prefix only", s.prefix, ErrFormat},
			text{"without its prefix", mac, ErrFormat},
			text{"prefix in upper case", strings.ToUpper(s.prefix) + mac, ErrFormat})
	}
	switch s.encoding {
	case EncodingHex:
		texts = append(texts,
			text{"one digit short", s.prefix + mac[:len(mac)-1], ErrFormat},
			text{"one byte short", s.prefix + mac[:len(mac)-2], ErrFormat},
			text{"one byte more", s.prefix + mac + "00", ErrFormat},
			text{"base64 instead of hex", s.prefix + EncodingBase64.Encode(mustHex(mac)), ErrFormat},
			text{"hex in upper case", s.prefix + strings.ToUpper(mac), ErrMismatch})
	case EncodingBase64:
		texts = append(texts,
			text{"four characters short", s.prefix + mac[:len(mac)-4], ErrFormat},
			text{"four characters more", s.prefix + mac + "AAAA", ErrFormat},
			text{"hex instead of base64", s.prefix + EncodingHex.Encode(mustB64(mac)), ErrFormat})
		if unpadded := strings.TrimRight(mac, "="); unpadded != mac {
			texts = append(texts, text{"unpadded", s.prefix + unpadded, ErrMismatch})
		}
		if url := strings.NewReplacer("+", "-", "/", "_").Replace(mac); url != mac {
			texts = append(texts, text{"base64url alphabet", s.prefix + url, ErrMismatch})
		}
	}
	return texts
}

// testReplayWindow: the default tolerance, in both directions, a
// difference exactly equal to it accepted (the gateway policy of
// docs/signatures.md: stricter than the Stripe and Paddle SDKs, which
// accept any timestamp in the future).
func (s *conformance) testReplayWindow(t *testing.T, name string) {
	keys := []string{s.keys[0]}
	if s.tolerance == 0 {
		s.check(t, name, keys, s.keys[0], conformanceNow.AddDate(-10, 0, 0), nil)
		return
	}
	for _, tc := range []struct {
		name string
		ts   time.Time
		want error
	}{
		{"exactly the tolerance old", conformanceNow.Add(-s.tolerance), nil},
		{"a second too old", conformanceNow.Add(-s.tolerance - time.Second), ErrTimestamp},
		{"exactly the tolerance ahead", conformanceNow.Add(s.tolerance), nil},
		{"a second too far ahead", conformanceNow.Add(s.tolerance + time.Second), ErrTimestamp},
		{"a day old", conformanceNow.AddDate(0, 0, -1), ErrTimestamp},
		{"a day ahead", conformanceNow.AddDate(0, 0, 1), ErrTimestamp},
	} {
		t.Run(tc.name, func(t *testing.T) { s.check(t, name, keys, s.keys[0], tc.ts, tc.want) })
	}
}

// testProvision: placeholders, secrets that resolve to nothing, and
// errors that name no secret.
func (s *conformance) testProvision(t *testing.T, name string) {
	t.Setenv("HOOKLINE_TEST_KEY", s.keys[0])
	t.Run("placeholders; unset ones ignored", func(t *testing.T) {
		for _, keys := range [][]string{
			{"{env.HOOKLINE_TEST_KEY}"},
			{"{env.HOOKLINE_TEST_UNSET_XYZ}", "{env.HOOKLINE_TEST_KEY}"},
			{"{env.HOOKLINE_TEST_KEY}", "{env.HOOKLINE_TEST_UNSET_XYZ}"},
		} {
			s.check(t, name, keys, s.keys[0], conformanceNow, nil)
		}
	})
	t.Run("the configured secrets are left as they are", func(t *testing.T) {
		keys := []string{"{env.HOOKLINE_TEST_KEY}", "{env.HOOKLINE_TEST_UNSET_XYZ}"}
		out, err := json.Marshal(mustLoad(t, name, s.config(keys...)))
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		if want := []any{keys[0], keys[1]}; !reflect.DeepEqual(got[s.secretsField()], want) || strings.Contains(string(out), s.keys[0]) {
			t.Fatalf("JSON after provisioning: %s", out)
		}
	})
	for _, tc := range []struct {
		name string
		keys []string
	}{
		{"no secret", nil},
		{"all empty", []string{"", "{env.HOOKLINE_TEST_UNSET_XYZ}"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, name, s.config(tc.keys...))
			if err == nil {
				t.Fatal("provisioned")
			}
			checkErr(t, err, err, s.keys[0], s.keys[1])
		})
	}
}

// testJSON: the module, its interfaces and default ids, its JSON field
// names, and the round trip config -> module -> JSON -> module.
func (s *conformance) testJSON(t *testing.T, name string) {
	id := "webhooks.verifiers." + name
	v := mustLoad(t, name, s.config(s.keys[0]))
	if got := string(v.(caddy.Module).CaddyModule().ID); got != id {
		t.Fatalf("module ID %q, want %q", got, id)
	}
	d, ok := v.(IDDefaulter)
	if !ok {
		t.Fatalf("%T is not an IDDefaulter", v)
	}
	if got := ruleStrings(d.DefaultIDFrom()); !reflect.DeepEqual(got, s.defaultIDs) && (len(got) != 0 || len(s.defaultIDs) != 0) {
		t.Fatalf("DefaultIDFrom() = %q, want %q", got, s.defaultIDs)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	again := mustLoad(t, name, string(out))
	checkErr(t, again.Verify(s.sign(t, s.keys[0], []byte(s.body), conformanceNow), []byte(s.body), conformanceNow), nil)
	if _, err := load(t, name, withMember(s.config(s.keys[0]), `"no_such_option":true`)); err == nil {
		t.Fatal("unknown JSON field accepted")
	}
}

// testCaddyfile: the Caddyfile syntax every keyed scheme shares, the
// tolerance option of the timestamped ones, the scheme's own options, and
// the round trip Caddyfile -> JSON -> module.
func (s *conformance) testCaddyfile(t *testing.T, name string) {
	opts := "\n" + s.caddyfileOptions
	bare := name
	if s.caddyfileOptions != "" {
		bare += " {" + opts + "\n}"
	}
	cases := []caddyfileCase{
		{name: "no secret: a provision error, not a parse error", input: bare, json: s.config()},
		{name: "secrets inline and on secret lines, in order", input: name + " {env.A} b {\n secret c\n secret {file./run/d} e" + opts + "\n}", json: s.config("{env.A}", "b", "c", "{file./run/d}", "e")},
		{name: "secret without value", input: name + " {\n secret\n}", wantErr: true},
		{name: "unknown option", input: name + " s {\n no_such_option x\n}", wantErr: true},
	}
	if s.timestamped || s.takesTolerance {
		cases = append(cases,
			caddyfileCase{name: "tolerance", input: name + " s {\n tolerance 90s" + opts + "\n}", json: withMember(s.config("s"), `"tolerance":90000000000`)},
			caddyfileCase{name: "tolerance in days", input: name + " s {\n tolerance 1d" + opts + "\n}", json: withMember(s.config("s"), `"tolerance":86400000000000`)},
			caddyfileCase{name: "tolerance without value", input: name + " s {\n tolerance\n}", wantErr: true},
			caddyfileCase{name: "two tolerances on a line", input: name + " s {\n tolerance 1m 2m\n}", wantErr: true},
			caddyfileCase{name: "bad tolerance", input: name + " s {\n tolerance soon\n}", wantErr: true},
			caddyfileCase{name: "tolerance without unit", input: name + " s {\n tolerance 5\n}", wantErr: true},
			caddyfileCase{name: "negative tolerance", input: name + " s {\n tolerance -1m\n}", wantErr: true},
		)
	} else {
		cases = append(cases, caddyfileCase{name: "no tolerance: nothing is timestamped", input: name + " s {\n tolerance 5m\n}", wantErr: true})
	}
	for _, tc := range s.caddyfile {
		tc.input = name + strings.TrimPrefix(tc.input, s.names[0])
		cases = append(cases, tc)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := unmarshalCaddyfile(t, name, tc.input)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got %s, want error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkJSON(t, got, tc.json)
		})
	}
	t.Run("round trip", func(t *testing.T) {
		input := name + " " + caddyfileQuote(s.keys[0]) + " {\n secret " + caddyfileQuote(s.keys[1]) + opts + "\n}"
		raw, err := unmarshalCaddyfile(t, name, input)
		if err != nil {
			t.Fatal(err)
		}
		checkJSON(t, raw, s.config(s.keys[0], s.keys[1]))
		v := mustLoad(t, name, raw)
		body := s.bodyFor(s.keys[1])
		r := s.sign(t, s.keys[1], []byte(body), conformanceNow)
		checkErr(t, v.Verify(r, []byte(body), conformanceNow), nil, s.keys[0], s.keys[1])
	})
}

// unmarshalCaddyfile parses input (the words after `verify`) into a new
// module name and returns its JSON config.
func unmarshalCaddyfile(t testing.TB, name, input string) (string, error) {
	t.Helper()
	info, err := caddy.GetModule("webhooks.verifiers." + name)
	if err != nil {
		t.Fatal(err)
	}
	mod := info.New()
	if err := mod.(caddyfile.Unmarshaler).UnmarshalCaddyfile(caddyfile.NewTestDispenser(input)); err != nil {
		return "", err
	}
	out, err := json.Marshal(mod)
	if err != nil {
		t.Fatal(err)
	}
	return string(out), nil
}

// checkJSON fails unless got is want, to the byte.
func checkJSON(t testing.TB, got, want string) {
	t.Helper()
	if got != want {
		t.Fatalf("JSON %s\nwant %s", got, want)
	}
}

// caddyfileQuote writes s as one Caddyfile token.
func caddyfileQuote(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
}

// TestToleranceSpellings: a tolerance written as a duration string
// provisions exactly as the same tolerance in nanoseconds (caddy.Duration),
// for every timestamped scheme, and is written back as nanoseconds.
func TestToleranceSpellings(t *testing.T) {
	for _, s := range conformanceSchemes {
		if !s.timestamped {
			continue
		}
		for _, tc := range []struct {
			spelling string
			wantErr  bool
		}{
			{spelling: `90000000000`},
			{spelling: `"90s"`},
			{spelling: `"1m30s"`},
			{spelling: `"1.5m"`},
			{spelling: `"90 seconds"`, wantErr: true},
			{spelling: `"-90s"`, wantErr: true},
			{spelling: `-90000000000`, wantErr: true},
		} {
			t.Run(s.label+"/"+tc.spelling, func(t *testing.T) {
				v, err := load(t, s.names[0], withMember(s.config(s.keys[0]), `"tolerance":`+tc.spelling))
				if tc.wantErr {
					if err == nil {
						t.Fatal("provisioned")
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range []struct {
					at   time.Duration
					want error
				}{{-90 * time.Second, nil}, {-91 * time.Second, ErrTimestamp}, {90 * time.Second, nil}, {91 * time.Second, ErrTimestamp}} {
					r := s.sign(t, s.keys[0], []byte(s.body), conformanceNow.Add(c.at))
					checkErr(t, v.Verify(r, []byte(s.body), conformanceNow), c.want)
				}
				out, err := json.Marshal(v)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(out), `"tolerance":90000000000`) {
					t.Fatalf("JSON after provisioning: %s", out)
				}
			})
		}
	}
}

// fuzzRefused reports whether Verify refused a fuzzed request (err is not
// nil), failing t when err is not one of the errors the scheme may return
// (ErrFormat, ErrMismatch and, when timestamped, ErrTimestamp) or when it
// contains one of secrets.
func fuzzRefused(t *testing.T, err error, timestamped bool, secrets ...string) bool {
	t.Helper()
	if err == nil {
		return false
	}
	if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrMismatch) && !(timestamped && errors.Is(err, ErrTimestamp)) {
		t.Fatalf("undocumented error %v", err)
	}
	for _, s := range secrets {
		if strings.Contains(err.Error(), s) {
			t.Fatalf("error leaks a secret: %v", err)
		}
	}
	return true
}

// fuzzHeader fuzzes a body and the value of header in a request made by
// request: Verify (at now) must refuse them with a documented error that
// names none of secrets (see fuzzRefused), or accept only what accepted
// finds valid (it fails t otherwise).
func fuzzHeader(f *testing.F, v Verifier, request func(...string) *http.Request, header string, now time.Time, timestamped bool, accepted func(t *testing.T, body []byte, value string), secrets ...string) {
	f.Fuzz(func(t *testing.T, body []byte, value string) {
		r := request()
		r.Header[http.CanonicalHeaderKey(header)] = []string{value}
		if !fuzzRefused(t, v.Verify(r, body, now), timestamped, secrets...) {
			accepted(t, body, value)
		}
	})
}

// fuzzBodyHMAC fuzzes a scheme whose signature is prefix and the enc
// HMAC-SHA256 of the raw body, keyed with secret, in header (github, meta,
// x): Verify must accept only that exact text.
func fuzzBodyHMAC(f *testing.F, v Verifier, header, prefix string, enc Encoding, secret string) {
	fuzzHeader(f, v, newRequest, header, conformanceNow, false, func(t *testing.T, body []byte, sig string) {
		if want := prefix + enc.Encode(hmacOf(sha256.New, []byte(secret), body)); sig != want {
			t.Fatalf("accepted %q, only %q is valid", sig, want)
		}
	}, secret)
}

// graphBenchBody is a 1 KiB Graph notification collection carrying
// graphState.
func graphBenchBody() []byte {
	b := []byte(graphBody(graphState))
	pad := `,"pad":"` + strings.Repeat("x", 1024-len(b)-len(`,"pad":""`)) + `"`
	return append(b[:len(b)-1], append([]byte(pad), '}')...)
}

// verifierBenchBody is a 1 KiB JSON event body.
func verifierBenchBody() []byte {
	b := []byte(`{"id":"evt_1","object":"event","type":"charge.succeeded","data":{"pad":"`)
	for len(b) < 1024-3 {
		b = append(b, 'x')
	}
	return append(b, `"}}`...)
}

// BenchmarkVerify measures every keyed scheme on a 1 KiB body, signed
// with one secret.
func BenchmarkVerify(b *testing.B) {
	for _, s := range conformanceSchemes {
		b.Run(s.label, func(b *testing.B) {
			body := s.benchBody()
			v := mustLoad(b, s.names[0], s.config(s.keys[0]))
			r := s.sign(b, s.keys[0], body, conformanceNow)
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if err := v.Verify(r, body, conformanceNow); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// bodyHMACSigner signs as the schemes that send prefix and the enc
// HMAC-SHA256 of the raw body in header (github, meta, x).
func bodyHMACSigner(header, prefix string, enc Encoding) func(testing.TB, string, []byte, time.Time) *http.Request {
	return func(_ testing.TB, key string, body []byte, _ time.Time) *http.Request {
		return newRequest(header, prefix+enc.Encode(hmacOf(sha256.New, []byte(key), body)))
	}
}
