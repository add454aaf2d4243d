package verifiers

import (
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"hash"
	"maps"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/dedupe"
)

// providersDoc is the page of provider recipes this test proves.
const providersDoc = "../docs/providers.md"

// providerCase is how one provider of docs/providers.md signs, as its
// linked page documents it, computed here independently of the verifiers.
type providerCase struct {
	recipe string // the <!-- recipe: name --> mark in providersDoc
	doc    string // the page the signing follows (also linked in providersDoc)
	secret string // the value of the recipe's {env.*} secret
	wrong  string // another secret (default: secret + "x")
	body   string
	// sign returns the provider's headers for body signed with secret at
	// ts, and the body actually sent (msgraph: the clientState is in it).
	sign func(secret, body string, ts time.Time) (headers []string, sent string)
	// timestamped: a stale timestamp must be refused.
	timestamped bool
	// bodyUnsigned: the body is not authenticated (msgraph's clientState
	// is a bearer token): a changed body is accepted.
	bodyUnsigned bool
	// vector, when set, is the provider's published example (or its
	// official SDK's test case): it must verify as is, at vectorNow, with
	// the body vectorBody (default: the Standard Webhooks payload).
	vector     []string
	vectorNow  time.Time
	vectorBody string
	// wantID and wantType are what the recipe's id_from and type_from
	// rules find in the signed request, sent with the provider's other
	// headers ("": none; without rules, the scheme's defaults apply and
	// are not checked here).
	wantID, wantType string
	headers          []string
}

// hexHMAC and b64HMAC sign parts with the hash h.
func hexHMAC(h func() hash.Hash, key string, parts ...string) string {
	return EncodingHex.Encode(hmacOf(h, []byte(key), []byte(strings.Join(parts, ""))))
}

func b64HMAC(h func() hash.Hash, key string, parts ...string) string {
	return EncodingBase64.Encode(hmacOf(h, []byte(key), []byte(strings.Join(parts, ""))))
}

// bodySigner signs the raw body alone into header, after prefix.
func bodySigner(header, prefix string, enc func(func() hash.Hash, string, ...string) string, h func() hash.Hash) func(string, string, time.Time) ([]string, string) {
	return func(secret, body string, _ time.Time) ([]string, string) {
		return []string{header, prefix + enc(h, secret, body)}, body
	}
}

// stripeFormat signs "t=<ts>,v1=<hex HMAC-SHA256 of ts.body>" into header.
func stripeFormat(header string) func(string, string, time.Time) ([]string, string) {
	return func(secret, body string, ts time.Time) ([]string, string) {
		at := strconv.FormatInt(ts.Unix(), 10)
		return []string{header, "t=" + at + ",v1=" + hexHMAC(sha256.New, secret, at, ".", body)}, body
	}
}

// svixSigner signs as Svix / Standard Webhooks do, with the header names
// of prefix (svix- or webhook-).
func svixSigner(prefix string) func(string, string, time.Time) ([]string, string) {
	return func(secret, body string, ts time.Time) ([]string, string) {
		at := strconv.FormatInt(ts.Unix(), 10)
		return []string{prefix + "id", stdID, prefix + "timestamp", at, prefix + "signature", stdSign(secret, stdID, at, body)}, body
	}
}

var providerCases = []providerCase{
	{recipe: "linear", doc: "https://linear.app/developers/webhooks#securing-webhooks", wantType: "Issue",
		secret: "lin_wh_secret", body: `{"action":"create","type":"Issue","data":{"id":"2174add1-f7c8-44e3-bbf3-2d60b5ea8bc9"},"webhookTimestamp":1676056940508}`,
		sign: bodySigner("Linear-Signature", "", hexHMAC, sha256.New)},
	{recipe: "intercom", doc: "https://developers.intercom.com/docs/webhooks/webhook-notifications", wantID: "notif_ccd8a4d0-f965-11e3-a367-c779cae3e1b3", wantType: "conversation.user.created",
		secret: "intercom-client-secret", body: `{"type":"notification_event","topic":"conversation.user.created","id":"notif_ccd8a4d0-f965-11e3-a367-c779cae3e1b3"}`,
		sign: bodySigner("X-Hub-Signature", "sha1=", hexHMAC, sha1.New)},
	{recipe: "square", doc: "https://developer.squareup.com/docs/webhooks/step3validate", wantID: "13b867cf-db3d-4b1c-90b6-2f32a9d78124", wantType: "payment.created",
		secret: "square-signature-key", body: `{"merchant_id":"6SSW7HV8K2ST5","type":"payment.created","event_id":"13b867cf-db3d-4b1c-90b6-2f32a9d78124","data":{}}`,
		sign: func(secret, body string, _ time.Time) ([]string, string) {
			return []string{"x-square-hmacsha256-signature", b64HMAC(sha256.New, secret, "https://hooks.example.com/hooks/square", body)}, body
		}},
	{recipe: "typeform", doc: "https://www.typeform.com/developers/webhooks/secure-your-webhooks/", wantID: "01FZ7M6SAVQWAE8BXS3MV3R8D1", wantType: "form_response",
		secret: "typeform-secret", body: `{"event_id":"01FZ7M6SAVQWAE8BXS3MV3R8D1","event_type":"form_response","form_response":{}}`,
		sign: bodySigner("Typeform-Signature", "sha256=", b64HMAC, sha256.New)},
	{recipe: "sentry", doc: "https://docs.sentry.io/organization/integrations/integration-platform/webhooks/", wantType: "issue", headers: []string{"Sentry-Hook-Resource", "issue"},
		secret: "sentry-client-secret", body: `{"action":"created","data":{"issue":{"id":"1"}},"installation":{"uuid":"a"}}`,
		sign: bodySigner("Sentry-Hook-Signature", "", hexHMAC, sha256.New)},
	{recipe: "vercel", doc: "https://vercel.com/docs/webhooks/webhooks-api#securing-webhooks", wantID: "uev_1", wantType: "deployment.created",
		secret: "vercel-webhook-secret", body: `{"id":"uev_1","type":"deployment.created","payload":{}}`,
		sign: bodySigner("x-vercel-signature", "", hexHMAC, sha1.New)},
	// Svix: the official Standard Webhooks vector (standard_test.go), sent
	// with svix-* headers, then fresh signatures
	{recipe: "clerk", doc: "https://clerk.com/docs/webhooks/overview",
		secret: stdSecret, wrong: stdOtherSecret, body: `{"type":"user.created","data":{"id":"user_1"}}`, timestamped: true,
		sign:   svixSigner("svix-"),
		vector: []string{"svix-id", stdID, "svix-timestamp", stdTS, "svix-signature", stdSig}, vectorNow: time.Unix(stdTSInt, 0)},
	{recipe: "resend", doc: "https://resend.com/docs/dashboard/webhooks/verify-webhooks-requests",
		secret: stdSecret, wrong: stdOtherSecret, body: `{"type":"email.delivered","data":{"email_id":"4ef9a417"}}`, timestamped: true,
		sign:   svixSigner("svix-"),
		vector: []string{"svix-id", stdID, "svix-timestamp", stdTS, "svix-signature", stdSig}, vectorNow: time.Unix(stdTSInt, 0)},
	{recipe: "replicate", doc: "https://replicate.com/docs/topics/webhooks/verify-webhook",
		secret: stdSecret, wrong: stdOtherSecret, body: `{"id":"ufawqhfynnddngldkgtslldrkq","status":"succeeded"}`, timestamped: true,
		sign:   svixSigner("webhook-"),
		vector: stdHeaders(stdID, stdTS, stdSig), vectorNow: time.Unix(stdTSInt, 0)},
	{recipe: "bitbucket", doc: "https://support.atlassian.com/bitbucket-cloud/docs/manage-webhooks/", wantType: "repo:push", headers: []string{"X-Event-Key", "repo:push"},
		secret: "bitbucket-secret", body: `{"push":{"changes":[]},"repository":{"full_name":"team/repo"}}`,
		sign: bodySigner("X-Hub-Signature", "sha256=", hexHMAC, sha256.New)},
	{recipe: "gitea", doc: "https://docs.gitea.com/usage/webhooks", wantID: "9b8a3c4e-5f6a-4b7c-8d9e-0f1a2b3c4d5e", wantType: "push", headers: []string{"X-Gitea-Delivery", "9b8a3c4e-5f6a-4b7c-8d9e-0f1a2b3c4d5e", "X-Gitea-Event", "push"},
		secret: "gitea-secret", body: `{"ref":"refs/heads/main","commits":[]}`,
		sign: bodySigner("X-Gitea-Signature", "", hexHMAC, sha256.New)},
	{recipe: "lemonsqueezy", doc: "https://docs.lemonsqueezy.com/help/webhooks/signing-requests", wantType: "order_created", headers: []string{"X-Event-Name", "order_created"},
		secret: "lemon-signing-secret", body: `{"meta":{"event_name":"order_created"},"data":{"id":"1"}}`,
		sign: bodySigner("X-Signature", "", hexHMAC, sha256.New)},
	{recipe: "paystack", doc: "https://paystack.com/docs/payments/webhooks/", wantType: "charge.success",
		secret: "sk_test_paystack", body: `{"event":"charge.success","data":{"id":302961,"reference":"qTPrJoy9Bx"}}`,
		sign: bodySigner("x-paystack-signature", "", hexHMAC, sha512.New)},
	{recipe: "woocommerce", doc: "https://woocommerce.github.io/woocommerce-rest-api-docs/#webhooks", wantType: "order.created", headers: []string{"X-WC-Webhook-Topic", "order.created"},
		secret: "woo-secret", body: `{"id":727,"status":"processing"}`,
		sign: bodySigner("X-WC-Webhook-Signature", "", b64HMAC, sha256.New)},
	{recipe: "razorpay", doc: "https://razorpay.com/docs/webhooks/validate-test/", wantType: "payment.captured",
		secret: "razorpay-webhook-secret", body: `{"entity":"event","event":"payment.captured","payload":{}}`,
		sign: bodySigner("X-Razorpay-Signature", "", hexHMAC, sha256.New)},
	{recipe: "coinbase", doc: "https://docs.cdp.coinbase.com/commerce-onchain/docs/webhooks-security", wantID: "24934862-d980-46cb-9402-43c81b0cdba6", wantType: "charge:created",
		secret: "coinbase-shared-secret", body: `{"id":1,"event":{"id":"24934862-d980-46cb-9402-43c81b0cdba6","type":"charge:created"}}`,
		sign: bodySigner("X-CC-Webhook-Signature", "", hexHMAC, sha256.New)},
	{recipe: "calendly", doc: "https://developer.calendly.com/api-docs/4c305798a61d3-webhook-signatures", wantType: "invitee.created",
		secret: "calendly-signing-key", body: `{"created_at":"2020-11-23T17:51:19.000000Z","created_by":"https://api.calendly.com/users/AAAAAAAAAAAAAAAA","event":"invitee.created","payload":{}}`, timestamped: true,
		sign: stripeFormat("Calendly-Webhook-Signature")},
	{recipe: "mux", doc: "https://docs.mux.com/core/verify-webhook-signatures", wantID: "3a56ac3d-33da-4366-855b-f592d898409d", wantType: "video.asset.ready",
		secret: "mux-webhook-secret", body: `{"type":"video.asset.ready","id":"3a56ac3d-33da-4366-855b-f592d898409d","data":{}}`, timestamped: true,
		sign: stripeFormat("Mux-Signature")},
	{recipe: "mandrill", doc: "https://mailchimp.com/developer/transactional/guides/track-respond-activity-webhooks/#authenticating-webhook-requests",
		secret: "mandrill-webhook-key", body: "mandrill_events=" + url.QueryEscape(`[{"event":"send","_id":"exampleaaaaaaaaaaaaaaaaaaaaaaaaa","ts":1365109999}]`),
		sign: func(secret, body string, _ time.Time) ([]string, string) {
			// the URL as entered in Mandrill (url + the request's path,
			// newRequest's /hook), then each parameter's name and value,
			// names sorted
			params, _ := url.ParseQuery(body)
			names := slices.Sorted(maps.Keys(params))
			msg := "https://hooks.example.com/hook"
			for _, n := range names {
				msg += n + params.Get(n)
			}
			return []string{"Content-Type", "application/x-www-form-urlencoded", "X-Mandrill-Signature", b64HMAC(sha1.New, secret, msg)}, body
		}},
	{recipe: "zoom", doc: "https://developers.zoom.us/docs/api/webhooks/#verify-webhook-events",
		secret: zoomSecret, body: zoomBody, timestamped: true,
		sign: func(secret, body string, ts time.Time) ([]string, string) {
			at := strconv.FormatInt(ts.Unix(), 10)
			return []string{ZoomTimestampHeader, at, ZoomSignatureHeader, zoomSign(secret, at, body)}, body
		},
		vector: []string{ZoomTimestampHeader, zoomTS, ZoomSignatureHeader, "v0=" + zoomHex}, vectorNow: time.Unix(zoomNow, 0)},
	// the official Go SDK's test case: secret "testing", its fixture
	// testdata/webhook_request.json (with the file's final newline)
	{recipe: "gocardless", doc: "https://developer.gocardless.com/getting-started/staying-up-to-date-with-webhooks/", wantID: "WB00001YRFAK2",
		secret: "testing", body: `{"events":[{"id":"EV0000ABCD","resource_type":"payments","action":"confirmed","links":{"payment":"PM000123"}}],"meta":{"webhook_id":"WB00001YRFAK2"}}`,
		sign:   bodySigner("Webhook-Signature", "", hexHMAC, sha256.New),
		vector: []string{"Webhook-Signature", "243f3efa57743c24eec7c5e10edc475b547830d256d5b583745afe319dd90936"}, vectorBody: goCardlessBody},
	// the official Java SDK's test case (ipp-v3-java-devkit WebhooksServiceTest)
	{recipe: "quickbooks", doc: "https://developer.intuit.com/app/developer/qbo/docs/develop/webhooks/managing-webhooks-notifications#validating-the-notification",
		secret: "b5771f19b12ddb4bcdb9f08bdc50bc63878a", body: quickBooksBody,
		sign:   bodySigner("intuit-signature", "", b64HMAC, sha256.New),
		vector: []string{"intuit-signature", "JC2GUwciPmRBwEO7WvrRmKqu9tGOKL8FFallocTFi8Q="}, vectorBody: quickBooksBody},
	// the official Node SDK's test case (line-bot-sdk-nodejs validate-signature.spec.ts)
	{recipe: "line", doc: "https://developers.line.biz/en/docs/messaging-api/receiving-messages/",
		secret: "test_secret", body: `{"destination":"Uc7472b39e21dab71c2347e02714630d6","events":[]}`,
		sign:   bodySigner("x-line-signature", "", b64HMAC, sha256.New),
		vector: []string{"x-line-signature", "t7Hn4ZDHqs6e+wdvI5TyQIvzie0DmMUmuXEBqyyE/tM="}, vectorBody: `{"hello":"world"}`},
	// the official PHP SDK's example (helpscout-api-php examples/webhooks.php)
	{recipe: "helpscout", doc: "https://developer.helpscout.com/webhooks/", wantType: "convo.created", headers: []string{"X-HelpScout-Event", "convo.created"},
		secret: "asdfasdf", body: `{"id":123,"number":42,"status":"active"}`,
		sign:   bodySigner("X-HelpScout-Signature", "", b64HMAC, sha1.New),
		vector: []string{"X-HelpScout-Signature", "7S2+kN8bZsrdAEADJ+yYfWWsf/4=", "X-HelpScout-Event", "convo.deleted"}, vectorBody: `{"id":123}`},
	{recipe: "checkout", doc: "https://www.checkout.com/docs/developer-resources/webhooks/manage-webhooks/set-up-your-webhook-receiver", wantID: "evt_caxmnvuvbe4elkbdx2imwbnjxu", wantType: "payment_approved",
		secret: "cko-signature-key", body: `{"id":"evt_caxmnvuvbe4elkbdx2imwbnjxu","type":"payment_approved","version":"1.0.29","created_on":"2023-05-22T11:56:04.8821546Z","data":{"id":"pay_griq7wyqkggu7mnk7ecm6ysrl4"}}`,
		sign: bodySigner("Cko-Signature", "", hexHMAC, sha256.New)},
	{recipe: "fastspring", doc: "https://developer.fastspring.com/docs/message-security",
		secret: "fastspring-hmac-secret", body: `{"events":[{"id":"Vi3p5bVRQI6Qv9zXOpMgPQ","live":false,"processed":false,"type":"order.completed","created":1426560444800,"data":{}}]}`,
		sign: bodySigner("X-FS-Signature", "", b64HMAC, sha256.New)},
	{recipe: "customerio", doc: "https://customer.io/docs/api/webhooks/", wantID: "01E4C4CT6YDC7Y5M7FE1GWWPQJ", wantType: "opened",
		secret: "cio-signing-key", body: `{"data":{"delivery_id":"RMehBAAAAXE7r_ONUGXly9DBGkpq1JS31w==","identifiers":{"id":"2"}},"event_id":"01E4C4CT6YDC7Y5M7FE1GWWPQJ","object_type":"email","metric":"opened","timestamp":1585250199}`, timestamped: true,
		sign: func(secret, body string, ts time.Time) ([]string, string) {
			at := strconv.FormatInt(ts.Unix(), 10)
			return []string{"X-CIO-Timestamp", at, "X-CIO-Signature", hexHMAC(sha256.New, secret, "v0:", at, ":", body)}, body
		}},
	{recipe: "tally", doc: "https://tally.so/help/webhooks", wantID: "a4cb511e-d513-4fa5-baee-b815d718dfd1", wantType: "FORM_RESPONSE",
		secret: "tally-signing-secret", body: `{"eventId":"a4cb511e-d513-4fa5-baee-b815d718dfd1","eventType":"FORM_RESPONSE","createdAt":"2023-06-28T15:00:21.889Z","data":{"responseId":"2wgx4n","formId":"VwbNEw"}}`,
		sign: bodySigner("Tally-Signature", "", b64HMAC, sha256.New)},
	{recipe: "calcom", doc: "https://cal.com/docs/core-features/webhooks", wantType: "BOOKING_CREATED",
		secret: "calcom-webhook-secret", body: `{"triggerEvent":"BOOKING_CREATED","createdAt":"2023-05-24T09:30:00.538Z","payload":{"uid":"bFJeNb2uX8ANpT3JL5EfXw"}}`,
		sign: bodySigner("X-Cal-Signature-256", "", hexHMAC, sha256.New)},
	{recipe: "heroku", doc: "https://github.com/heroku/webhooks-docs", wantID: "1d3c6a3e-47f1-4f6c-8b0a-3b8a3c8e1f55", wantType: "api:app",
		secret: "heroku-webhook-secret", body: `{"action":"update","actor":{"email":"user@example.com"},"data":{"id":"9a7a1d04-6e09-4b4b-9cfd-9b2c1c5a2bd8"},"id":"4fd22c6d-5d19-4e43-8df8-fca0a0a4e3a1","resource":"app","webhook_metadata":{"attempt":{"id":"7c1f3c6e-0b5a-4b8b-9b3e-5a52b3c4e2f0"},"delivery":{"id":"1d3c6a3e-47f1-4f6c-8b0a-3b8a3c8e1f55"},"event":{"id":"4fd22c6d-5d19-4e43-8df8-fca0a0a4e3a1","include":"api:app"}}}`,
		sign: bodySigner("Heroku-Webhook-Hmac-SHA256", "", b64HMAC, sha256.New)},
	{recipe: "terraform", doc: "https://developer.hashicorp.com/terraform/cloud-docs/api-docs/notification-configurations", wantType: "run:errored",
		secret: "tfe-notification-token", body: `{"payload_version":1,"notification_configuration_id":"nc-AeUQ2zfKZzW9TiGZ","run_id":"run-Y3PqWvBpdAMn2TNi","notifications":[{"message":"Run Canceled","trigger":"run:errored","run_status":"canceled"}]}`,
		sign: bodySigner("X-TFE-Notification-Signature", "", hexHMAC, sha512.New)},
	{recipe: "launchdarkly", doc: "https://launchdarkly.com/docs/home/infrastructure/webhooks", wantID: "5defb5bd0e1a3d0a5b2a0b6d", wantType: "flag",
		secret: "ld-webhook-secret", body: `{"_id":"5defb5bd0e1a3d0a5b2a0b6d","kind":"flag","name":"Example flag","accesses":[{"action":"updateOn"}],"date":1575990717374}`,
		sign: bodySigner("X-LD-Signature", "", hexHMAC, sha256.New)},
	{recipe: "msgraph", doc: "https://learn.microsoft.com/graph/change-notifications-delivery-webhooks",
		secret: graphState, body: graphBody(graphState), bodyUnsigned: true,
		sign: func(secret, _ string, _ time.Time) ([]string, string) { return nil, graphBody(secret) }},
}

// goCardlessBody is the official Go SDK's test fixture
// (gocardless-pro-go testdata/webhook_request.json), final newline included.
const goCardlessBody = `{"events":[{"id":"EVTESTNE86TNZS","created_at":"2017-03-20T17:57:02.292Z","resource_type":"payments","action":"failed","links":{"payment":"index_ID_123"},"details":{"origin":"bank","cause":"test_failure","scheme":"sepa_core","reason_code":"TEST","description":"GoCardless has marked this payment as failed in sandbox to enable testing of payment failure webhooks."},"metadata":{}}]}` + "\n"

// quickBooksBody is the official Java SDK's test payload.
const quickBooksBody = `{"eventNotifications":[{"realmId":"1185883450","dataChangeEvent":{"entities":[{"name":"Customer","id":"1","operation":"Create","lastUpdated":"2015-10-05T14:42:19-0700"}]}}]}`

// stdOtherSecret is a second Standard Webhooks secret.
const stdOtherSecret = "whsec_YW5vdGhlciBzZWNyZXQgb2YgMjQgYnl0ZXM="

// recipeMark finds each recipe's caddyfile block in providersDoc.
var recipeMark = regexp.MustCompile("(?s)<!-- recipe: ([a-z0-9_-]+) -->\n```caddyfile\n(.*?)\n```")

// docRecipes returns the caddyfile block of every recipe of providersDoc.
func docRecipes(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(providersDoc)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range recipeMark.FindAllStringSubmatch(string(raw), -1) {
		if _, dup := out[m[1]]; dup {
			t.Fatalf("recipe %s twice", m[1])
		}
		out[m[1]] = m[2]
	}
	if n := strings.Count(string(raw), "\n<!-- recipe: "); n != len(out) {
		t.Fatalf("%d recipe marks, %d followed by a caddyfile block", n, len(out))
	}
	return out
}

// verifyDirective returns the words after `verify` of a recipe block, up
// to the end of its line or its closing brace.
func verifyDirective(t *testing.T, block string) string {
	t.Helper()
	lines := strings.Split(block, "\n")
	for i, l := range lines {
		trimmed := strings.TrimSpace(l)
		rest, ok := strings.CutPrefix(trimmed, "verify ")
		if !ok {
			continue
		}
		if !strings.HasSuffix(rest, "{") {
			return rest
		}
		depth := 0
		var out []string
		for _, l := range lines[i:] {
			depth += strings.Count(l, "{") - strings.Count(l, "}")
			// placeholders such as {env.X} and {body} open and close on one line
			out = append(out, l)
			if depth == 0 {
				return strings.TrimPrefix(strings.TrimSpace(strings.Join(out, "\n")), "verify ")
			}
		}
		t.Fatalf("unclosed verify block in\n%s", block)
	}
	t.Fatalf("no verify line in\n%s", block)
	return ""
}

var envPlaceholder = regexp.MustCompile(`\{env\.([A-Z0-9_]+)\}`)

// TestProviderRecipes: every recipe of docs/providers.md, parsed from the
// page with the scheme's Caddyfile parser and provisioned with the
// secret in the environment variable it names, accepts a request signed
// the way the provider documents, and refuses it signed with another
// secret, with a changed body (unless the body is unsigned) and, for
// timestamped schemes, 10 minutes old.
func TestProviderRecipes(t *testing.T) {
	recipes := docRecipes(t)
	if len(recipes) < 15 {
		t.Fatalf("%d recipes, want at least 15", len(recipes))
	}
	tested := map[string]bool{}
	now := time.Unix(1767225600, 0) // 2026-01-01
	for _, pc := range providerCases {
		block, ok := recipes[pc.recipe]
		if !ok {
			t.Errorf("no recipe %s in %s", pc.recipe, providersDoc)
			continue
		}
		tested[pc.recipe] = true
		t.Run(pc.recipe, func(t *testing.T) {
			raw, err := os.ReadFile(providersDoc)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(raw), "("+pc.doc+")") {
				t.Fatalf("the page does not link %s", pc.doc)
			}
			directive := verifyDirective(t, block)
			envs := envPlaceholder.FindAllStringSubmatch(directive, -1)
			if len(envs) == 0 {
				t.Fatalf("the recipe's secret is not an {env.*} placeholder: %s", directive)
			}
			for _, e := range envs {
				t.Setenv(e[1], pc.secret)
			}
			name := strings.Fields(directive)[0]
			cfg, err := unmarshalCaddyfile(t, name, directive)
			if err != nil {
				t.Fatalf("parsing %q: %v", directive, err)
			}
			v := mustLoad(t, name, cfg)
			check := func(t *testing.T, secret, body string, at time.Time, change func(string) string, want error) {
				t.Helper()
				hdr, sent := pc.sign(secret, body, at)
				if change != nil {
					sent = change(sent)
				}
				checkErr(t, v.Verify(newRequest(hdr...), []byte(sent), now), want, pc.secret)
			}
			t.Run("signed as documented", func(t *testing.T) { check(t, pc.secret, pc.body, now, nil, nil) })
			t.Run("another secret", func(t *testing.T) {
				wrong := pc.wrong
				if wrong == "" {
					wrong = pc.secret + "x"
				}
				check(t, wrong, pc.body, now, nil, ErrMismatch)
			})
			t.Run("changed body", func(t *testing.T) {
				want := ErrMismatch
				if pc.bodyUnsigned {
					want = nil
				}
				check(t, pc.secret, pc.body, now, func(b string) string {
					if strings.Contains(b, "{") {
						return strings.Replace(b, "{", "{ ", 1) // JSON: a space more
					}
					return b + "x" // a form: the last value changed
				}, want)
			})
			if pc.timestamped {
				t.Run("10 minutes old", func(t *testing.T) { check(t, pc.secret, pc.body, now.Add(-10*time.Minute), nil, ErrTimestamp) })
			}
			t.Run("id and type rules", func(t *testing.T) {
				idRules, typeRules := recipeRules(t, block)
				hdr, sent := pc.sign(pc.secret, pc.body, now)
				req := newRequest(append(hdr, pc.headers...)...)
				if got := dedupe.Extract(idRules, req, []byte(sent), now); len(idRules) > 0 && got != pc.wantID {
					t.Errorf("id_from finds %q, want %q", got, pc.wantID)
				}
				if len(idRules) == 0 && pc.wantID != "" {
					t.Errorf("no id_from, want the id %q", pc.wantID)
				}
				if got := dedupe.ExtractType(typeRules, req, []byte(sent)); len(typeRules) > 0 && got != pc.wantType {
					t.Errorf("type_from finds %q, want %q", got, pc.wantType)
				}
				if len(typeRules) == 0 && pc.wantType != "" {
					t.Errorf("no type_from, want the type %q", pc.wantType)
				}
			})
			if pc.vector != nil {
				t.Run("published example", func(t *testing.T) {
					body := stdPayload
					if pc.recipe == "zoom" {
						body = zoomBody
					}
					if pc.vectorBody != "" {
						body = pc.vectorBody
					}
					checkErr(t, v.Verify(newRequest(pc.vector...), []byte(body), pc.vectorNow), nil, pc.secret)
				})
			}
		})
	}
	var untested []string
	for r := range recipes {
		if !tested[r] {
			untested = append(untested, r)
		}
	}
	slices.Sort(untested)
	if len(untested) > 0 {
		t.Errorf("recipes without a test: %v", untested)
	}
}

// recipeRules are the id_from and type_from rules of a recipe block.
func recipeRules(t *testing.T, block string) (ids []dedupe.Rule, types []dedupe.TypeRule) {
	t.Helper()
	for _, l := range strings.Split(block, "\n") {
		f := strings.Fields(l)
		if len(f) != 3 || (f[0] != "id_from" && f[0] != "type_from") {
			continue
		}
		if f[0] == "id_from" {
			r, err := dedupe.ParseRule(f[1], f[2])
			if err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			ids = append(ids, r)
			continue
		}
		r, err := dedupe.ParseTypeRule(f[1], f[2])
		if err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		types = append(types, r)
	}
	return ids, types
}

// TestStripeHeaderOption: with header set, only that header is read, and
// the default id is none (the body is another provider's).
func TestStripeHeaderOption(t *testing.T) {
	v := mustLoad(t, "stripe", `{"secrets":["k"],"header":"Mux-Signature"}`)
	now := time.Unix(1700000000, 0)
	hdr, body := stripeFormat("Mux-Signature")("k", `{"id":"e1"}`, now)
	checkErr(t, v.Verify(newRequest(hdr...), []byte(body), now), nil)
	hdr, _ = stripeFormat(StripeSignatureHeader)("k", body, now)
	checkErr(t, v.Verify(newRequest(hdr...), []byte(body), now), ErrFormat)
	if rules := v.(IDDefaulter).DefaultIDFrom(); len(rules) != 0 {
		t.Fatalf("default id %q with another provider's header", ruleStrings(rules))
	}
	same := mustLoad(t, "stripe", `{"secrets":["k"],"header":"stripe-signature"}`)
	if got := ruleStrings(same.(IDDefaulter).DefaultIDFrom()); len(got) != 1 || got[0] != "json id" {
		t.Fatalf("default id %q with Stripe's own header", got)
	}
}
