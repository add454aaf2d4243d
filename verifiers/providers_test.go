package verifiers

import (
	"crypto/ed25519"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"maps"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/dedupe"
	"github.com/hookline/hookline/internal/testing/recipes"
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
	// vectorVerify, when set, is the verify directive the vector is
	// checked with instead of the recipe's: the published example signs
	// for another URL than the recipe's literal one (HubSpot).
	vectorVerify string
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
	{recipe: "clerk", doc: "https://clerk.com/docs/webhooks/overview", wantID: stdID, wantType: "user.created",
		secret: stdSecret, wrong: stdOtherSecret, body: `{"type":"user.created","data":{"id":"user_1"}}`, timestamped: true,
		sign:   svixSigner("svix-"),
		vector: []string{"svix-id", stdID, "svix-timestamp", stdTS, "svix-signature", stdSig}, vectorNow: time.Unix(stdTSInt, 0)},
	{recipe: "resend", doc: "https://resend.com/docs/dashboard/webhooks/verify-webhooks-requests", wantID: stdID, wantType: "email.delivered",
		secret: stdSecret, wrong: stdOtherSecret, body: `{"type":"email.delivered","data":{"email_id":"4ef9a417"}}`, timestamped: true,
		sign:   svixSigner("svix-"),
		vector: []string{"svix-id", stdID, "svix-timestamp", stdTS, "svix-signature", stdSig}, vectorNow: time.Unix(stdTSInt, 0)},
	{recipe: "replicate", doc: "https://replicate.com/docs/topics/webhooks/verify-webhook", wantID: stdID,
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
	// the twilio scheme's default id: a hash of the exact bytes
	{recipe: "mandrill", doc: "https://mailchimp.com/developer/transactional/guides/track-respond-activity-webhooks/#authenticating-webhook-requests", wantID: rawHashID(mandrillBody),
		secret: "mandrill-webhook-key", body: mandrillBody,
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
	{recipe: "zoom", doc: "https://developers.zoom.us/docs/api/webhooks/#verify-webhook-events", wantID: rawHashID(zoomBody), wantType: "meeting.started",
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
	// HubSpot v3, with the official Python SDK's case (hubspot-api-python
	// tests/spec/utils/test_signature.py): signed for its own URL
	{recipe: "hubspot", doc: "https://developers.hubspot.com/docs/apps/legacy-apps/authentication/validating-requests",
		secret: "yyyyyyyy-yyyy-yyyy-yyyy-yyyyyyyyyyyy", body: `[{"eventId":1752315483,"subscriptionId":2480735,"portalId":62515,"occurredAt":1693657560000,"subscriptionType":"contact.creation","attemptNumber":0,"objectId":123,"changeSource":"CRM","appId":1160452}]`, timestamped: true,
		sign: func(secret, body string, ts time.Time) ([]string, string) {
			at := strconv.FormatInt(ts.UnixMilli(), 10)
			return []string{"X-HubSpot-Signature-v3", b64HMAC(sha256.New, secret, "POST", "https://hooks.example.com/hooks/hubspot", body, at), "X-HubSpot-Request-Timestamp", at}, body
		},
		vector:       []string{"X-HubSpot-Signature-v3", "K36dawei4A+QBNolUOqo7s91KQDWQ5MXZ/QufNYuk/Y=", "X-HubSpot-Request-Timestamp", "1693657560000"},
		vectorNow:    time.UnixMilli(1693657560000),
		vectorBody:   `{'example_field':'example_value'}`,
		vectorVerify: "hmac {env.HUBSPOT_CLIENT_SECRET} {\nheader X-HubSpot-Signature-v3\nencoding base64\ntimestamp_header X-HubSpot-Request-Timestamp\ntimestamp_format unix_ms\nsigned_content POSThttps://www.example.com/webhook_uri{body}{timestamp}\n}"},
	// the official Python SDK's case (workos-python tests/test_webhooks.py)
	{recipe: "workos", doc: "https://workos.com/docs/events/data-syncing/webhooks/what-you-will-build", wantID: "event_01J44T8116Q5M0RYCFA6KWNXN9", wantType: "connection.activated",
		secret: "2sAZJlbjP8Ce3rwkKEv2GfKef", body: workOSBody, timestamped: true,
		sign: func(secret, body string, ts time.Time) ([]string, string) {
			at := strconv.FormatInt(ts.UnixMilli(), 10)
			return []string{"WorkOS-Signature", "t=" + at + ", v1=" + hexHMAC(sha256.New, secret, at, ".", body)}, body
		},
		vector: []string{"WorkOS-Signature", "t=1722443701539, v1=bd54a3768f461461c8439c2f97ab0d646ef3976f84d5d5b132d18f2fa89cdad5"}, vectorNow: time.UnixMilli(1722443701539), vectorBody: workOSBody},
	// the official Go SDK's case (go-buildkite webhook_test.go)
	{recipe: "buildkite", doc: "https://buildkite.com/docs/apis/webhooks/pipelines", wantType: "ping", headers: []string{"X-Buildkite-Event", "ping"},
		secret: "29b1ff5779c76bd48ba6705eb99ff970", body: buildkiteBody, timestamped: true,
		sign: func(secret, body string, ts time.Time) ([]string, string) {
			at := strconv.FormatInt(ts.Unix(), 10)
			return []string{"X-Buildkite-Signature", "timestamp=" + at + ",signature=" + hexHMAC(sha256.New, secret, at, ".", body)}, body
		},
		vector: []string{"X-Buildkite-Signature", "timestamp=1642080837,signature=582d496ac2d869dd97a3101c4cda346288c49a742592daf582ec64c86449f79c"}, vectorNow: time.Unix(1642080837, 0), vectorBody: buildkiteBody},
	// the official Node SDK's case (box-node-sdk tests/lib/managers/webhooks-test.js)
	{recipe: "box", doc: "https://developer.box.com/guides/webhooks/v2/signatures-v2/", wantID: "eb0c4e06-751f-442c-86f8-fd5bb404dbec", wantType: "FILE.UPLOADED",
		secret: "SamplePrimaryKey", body: `{"type":"webhook_event","id":"eb0c4e06-751f-442c-86f8-fd5bb404dbec","created_at":"2020-01-01T00:00:00-07:00","trigger":"FILE.UPLOADED","webhook":{"id":"1234567890"},"source":{"id":"1234567890","type":"file","name":"Test.txt"}}`, timestamped: true,
		sign: func(secret, body string, ts time.Time) ([]string, string) {
			at := ts.Format(time.RFC3339)
			return []string{"BOX-SIGNATURE-PRIMARY", b64HMAC(sha256.New, secret, body, at), "BOX-DELIVERY-TIMESTAMP", at}, body
		},
		vector:    []string{"BOX-SIGNATURE-PRIMARY", "6TfeAW3A1PASkgboxxA5yqHNKOwFyMWuEXny/FPD5hI=", "BOX-DELIVERY-TIMESTAMP", "2020-01-01T00:00:00-07:00"},
		vectorNow: time.Date(2020, 1, 1, 7, 0, 0, 0, time.UTC), vectorBody: `{"type":"webhook_event","webhook":{"id":"1234567890"},"trigger":"FILE.UPLOADED","source":{"id":"1234567890","type":"file","name":"Test.txt"}}`},
	// the official Go SDK's case (go-pagerduty webhookv3/webhookv3_test.go)
	{recipe: "pagerduty", doc: "https://developer.pagerduty.com/docs/ZG9jOjExMDI5NTkz-verifying-signatures", wantID: "f0d5b8bc-8f53-4f43-a2f3-e5a61c4b2d3a", wantType: "incident.priority_updated",
		headers: []string{"X-Webhook-Id", "f0d5b8bc-8f53-4f43-a2f3-e5a61c4b2d3a"},
		secret:  "lDQHScfUeXUKaQRNF+8XIiDKZ7XX3itBAYzwU0TARw8lJqRnkKl2iB1anSb0Z+IK", body: pagerDutyBody,
		sign: func(secret, body string, _ time.Time) ([]string, string) {
			// a rotation: the old secret's signature first
			return []string{"X-PagerDuty-Signature", "v1=" + hexHMAC(sha256.New, "old", body) + ",v1=" + hexHMAC(sha256.New, secret, body)}, body
		},
		vector: []string{"X-PagerDuty-Signature", "v1=0c0b9495b893a39e70d1fea2fe11fbe0a825f88b9f67846f6cc07dd2bc5476cd"}, vectorBody: pagerDutyBody},
	// CircleCI's documented example (the table of its outbound webhooks page)
	{recipe: "circleci", doc: "https://circleci.com/docs/outbound-webhooks", wantID: "3888f21b-eaa7-38e3-8f3d-75a63bba8895", wantType: "workflow-completed",
		secret: "hunter123", body: `{"type":"workflow-completed","id":"3888f21b-eaa7-38e3-8f3d-75a63bba8895","happened_at":"2021-09-01T22:49:34.317Z","webhook":{"id":"cf8c4fdd-0587-4da1-b4ca-4846e9640af9","name":"Sample Webhook"}}`,
		sign:   bodySigner("circleci-signature", "v1=", hexHMAC, sha256.New),
		vector: []string{"circleci-signature", "v1=9be2242094a9a8c00c64306f382a7f9d691de910b4a266f67bd314ef18ac49fa"}, vectorBody: "an-important-request-payload"},
	// the official Node SDK's case (pusher-http-node tests/integration/webhook.js)
	{recipe: "pusher", doc: "http://pusher.com/docs/webhooks",
		secret: "tofu", body: `{"time_ms":1403175510755,"events":[{"channel":"test_channel","name":"channel_vacated"}]}`,
		sign:   bodySigner("X-Pusher-Signature", "", hexHMAC, sha256.New),
		vector: []string{"X-Pusher-Key", "123456789", "X-Pusher-Signature", "c17257e92037cd7de407ebc1ed174ceb7b2e518db127f44411b9ffc4f5b28cc5"}, vectorBody: `{"time_ms":1403175510755,"events":[{"channel":"test_channel","name":"channel_vacated"}]}`},
	// the official Node SDK's case (onfido-node test/classic-webhook-event-verifier.test.ts)
	{recipe: "onfido", doc: "https://documentation.identity.entrust.com/api/manual-webhook-signature-verification/", wantType: "check.completed",
		secret: "_ABC123abc123ABC123abc123ABC123_", body: onfidoBody,
		sign:   bodySigner("X-SHA2-Signature", "", hexHMAC, sha256.New),
		vector: []string{"X-SHA2-Signature", "a0082d7481f9f0a2907583dbe1f344d6d4c0d9989df2fd804f98479f60cd760e"}, vectorBody: onfidoBody},
	{recipe: "persona", doc: "https://docs.withpersona.com/docs/webhooks-best-practices", wantID: "evt_XGuYWp7WuDzNxie5z16s7sGJ", wantType: "inquiry.approved",
		secret: "wbhsec_persona", body: `{"data":{"type":"event","id":"evt_XGuYWp7WuDzNxie5z16s7sGJ","attributes":{"name":"inquiry.approved","payload":{},"created-at":"2026-01-01T00:00:00.000Z"}}}`, timestamped: true,
		sign: func(secret, body string, ts time.Time) ([]string, string) {
			at := strconv.FormatInt(ts.Unix(), 10)
			// during a rotation Persona sends two space-separated sets
			return []string{"Persona-Signature", "t=" + at + ",v1=" + hexHMAC(sha256.New, "old", at, ".", body) + " t=" + at + ",v1=" + hexHMAC(sha256.New, secret, at, ".", body)}, body
		}},
	{recipe: "webflow", doc: "https://developers.webflow.com/data/docs/working-with-webhooks#validating-request-signatures", wantType: "form_submission",
		secret: "webflow-webhook-secret", body: `{"triggerType":"form_submission","payload":{"name":"Contact","siteId":"65427cf400e02b306eaa049c","data":{}}}`, timestamped: true,
		sign: func(secret, body string, ts time.Time) ([]string, string) {
			at := strconv.FormatInt(ts.UnixMilli(), 10)
			return []string{"x-webflow-timestamp", at, "x-webflow-signature", hexHMAC(sha256.New, secret, at, ":", body)}, body
		}},
	{recipe: "frameio", doc: "https://developer.frame.io/platform/v4/docs/guides/webhooks", wantType: "file.ready",
		secret: "frameio-signing-secret", body: `{"type":"file.ready","resource":{"type":"file","id":"0f5a8f9c-6f2e-4c1b-9a3e-2b7c1d4e5f60"},"account":{"id":"a1"}}`, timestamped: true,
		sign: func(secret, body string, ts time.Time) ([]string, string) {
			at := strconv.FormatInt(ts.Unix(), 10)
			return []string{"X-Frameio-Request-Timestamp", at, "X-Frameio-Signature", "v0=" + hexHMAC(sha256.New, secret, "v0:", at, ":", body)}, body
		}},
	{recipe: "docusign", doc: "https://developers.docusign.com/docs/platform/webhooks/connect/validate", wantType: "envelope-sent",
		secret: "q0lbjTB1KXrBv3tU7Ahcp5wmoqXJhPgDTgtZ3Ggc5Gk=", body: `{"event":"envelope-sent","apiVersion":"v2.1","uri":"/restapi/v2.1/accounts/1/envelopes/2","retryCount":0,"configurationId":1,"generatedDateTime":"2026-01-01T00:00:00.0000000Z","data":{"accountId":"1","envelopeId":"2"}}`,
		sign: bodySigner("X-DocuSign-Signature-1", "", b64HMAC, sha256.New)},
	{recipe: "trello", doc: "https://developer.atlassian.com/cloud/trello/guides/rest-api/webhooks", wantType: "updateCard",
		secret: "trello-oauth-secret", body: `{"action":{"id":"51f9424bcd6e040f3c002412","type":"updateCard","data":{}},"model":{"id":"4d5ea62fd76aa1136000000c"}}`,
		sign: func(secret, body string, _ time.Time) ([]string, string) {
			return []string{"X-Trello-Webhook", b64HMAC(sha1.New, secret, body, "https://hooks.example.com/hooks/trello")}, body
		}},
	{recipe: "attio", doc: "https://docs.attio.com/rest-api/guides/webhooks",
		secret: "attio-webhook-secret", body: `{"webhook_id":"2d0e9a2b-1f3c-4e5d-8a6b-7c8d9e0f1a2b","events":[{"event_type":"record.created","id":{"workspace_id":"w1","object_id":"o1","record_id":"r1"}}]}`,
		sign: bodySigner("Attio-Signature", "", hexHMAC, sha256.New)},
	{recipe: "alchemy", doc: "https://docs.alchemy.com/reference/notify-api-faq", wantID: "whevt_ogrc5v64myey69ux", wantType: "ADDRESS_ACTIVITY",
		secret: "whsec_alchemy_signing_key", body: `{"webhookId":"wh_octjglnywaupz6th","id":"whevt_ogrc5v64myey69ux","createdAt":"2022-02-28T17:48:53.306Z","type":"ADDRESS_ACTIVITY","event":{"network":"MATIC_MAINNET","activity":[]}}`,
		sign: bodySigner("X-Alchemy-Signature", "", hexHMAC, sha256.New)},
	{recipe: "webex", doc: "https://developer.webex.com/docs/receive-and-verify-webhooks", wantType: "messages",
		secret: "somesupersecretphrase", body: `{"id":"Y2lzY29zcGFyazovL3VzL1dFQkhPT0svZjRlNjA1NjAtNjYwMi00ZmIwLWEyNWEtOTQ5ODgxNjA5NDk3","name":"New message","resource":"messages","event":"created","data":{"id":"m1"}}`,
		sign: bodySigner("X-Spark-Signature", "", hexHMAC, sha1.New)},
	{recipe: "greenhouse", doc: "https://developers.greenhouse.io/webhooks.html", wantType: "new_candidate_application",
		secret: "greenhouse-secret-key", body: `{"action":"new_candidate_application","payload":{"application":{"id":1}}}`,
		sign: bodySigner("Signature", "sha256 ", hexHMAC, sha256.New)},
	{recipe: "ashby", doc: "https://developers.ashbyhq.com/docs/authenticating-webhooks", wantType: "applicationSubmit",
		secret: "8b943c474f5d1e1712f13e1a870b485c9b6b2b57", body: `{"action":"applicationSubmit","data":{"application":{"id":"a1"}}}`,
		sign: bodySigner("Ashby-Signature", "sha256=", hexHMAC, sha256.New)},
	{recipe: "segment", doc: "https://segment.com/docs/connections/destinations/catalog/webhooks/", wantID: "022bb90c-bbac-11e4-8dfc-aa07a5b093db", wantType: "track",
		secret: "segment-shared-secret", body: `{"type":"track","event":"Signed Up","messageId":"022bb90c-bbac-11e4-8dfc-aa07a5b093db","userId":"u1","timestamp":"2015-02-23T22:28:55.387Z"}`,
		sign: bodySigner("X-Signature", "", hexHMAC, sha1.New)},
	{recipe: "hookdeck", doc: "https://hookdeck.com/docs/authentication", wantID: "evt_6vJ8rF1sOQ2mKlA9bC3d", headers: []string{"x-hookdeck-eventid", "evt_6vJ8rF1sOQ2mKlA9bC3d"},
		secret: "hookdeck-signing-secret", body: `{"any":"provider body, forwarded unchanged"}`,
		sign: bodySigner("x-hookdeck-signature", "", b64HMAC, sha256.New)},
	{recipe: "patreon", doc: "https://docs.patreon.com/#webhooks", wantType: "members:pledge:create", headers: []string{"X-Patreon-Event", "members:pledge:create"},
		secret: "patreon-webhook-secret", body: `{"data":{"type":"member","id":"0c3b5d8a-1234"},"included":[]}`,
		sign: bodySigner("X-Patreon-Signature", "", hexHMAC, md5.New)},
	// the secret is given base64 (macSecretBase64) and used decoded
	{recipe: "airtable", doc: "https://airtable.com/developers/web/api/webhooks-overview",
		secret: "c2VjcmV0LW1hYy1rZXktYnl0ZXM=", wrong: "b3RoZXItbWFjLWtleS1ieXRlcw==", body: `{"base":{"id":"appXXXXXXXXXXXXXX"},"webhook":{"id":"achXXXXXXXXXXXXXX"},"timestamp":"2022-02-01T21:25:05.663Z"}`,
		sign: func(secret, body string, _ time.Time) ([]string, string) {
			key, _ := base64.StdEncoding.DecodeString(secret)
			return []string{"X-Airtable-Content-MAC", "hmac-sha256=" + hexHMAC(sha256.New, string(key), body)}, body
		}},
	{recipe: "jira", doc: "https://confluence.atlassian.com/adminjiraserver/managing-webhooks-938846912.html", wantType: "jira:issue_created",
		secret: "jira-webhook-secret", body: `{"timestamp":1700000000000,"webhookEvent":"jira:issue_created","issue":{"id":"10002","key":"ABC-1"}}`,
		sign: bodySigner("X-Hub-Signature", "sha256=", hexHMAC, sha256.New)},
	{recipe: "bitbucket-server", doc: "https://confluence.atlassian.com/bitbucketserver/event-payload-938025882.html", wantType: "repo:refs_changed", headers: []string{"X-Event-Key", "repo:refs_changed"},
		secret: "bitbucket-dc-secret", body: `{"eventKey":"repo:refs_changed","date":"2026-01-01T00:00:00+0000","changes":[]}`,
		sign: bodySigner("X-Hub-Signature", "sha256=", hexHMAC, sha256.New)},
	{recipe: "dropbox", doc: "https://www.dropbox.com/developers/reference/webhooks",
		secret: "dropbox-app-secret", body: `{"list_folder":{"accounts":["dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc"]},"delta":{"users":[12345678]}}`,
		sign: bodySigner("X-Dropbox-Signature", "", hexHMAC, sha256.New)},
	{recipe: "todoist", doc: "https://developer.todoist.com/sync/v9/#webhooks", wantType: "item:added",
		secret: "todoist-client-secret", body: `{"event_name":"item:added","user_id":"2671355","event_data":{"id":"2995104339","content":"Buy Milk"},"version":"9"}`,
		sign: bodySigner("X-Todoist-Hmac-SHA256", "", b64HMAC, sha256.New)},
	{recipe: "clickup", doc: "https://developer.clickup.com/docs/webhooksignature", wantType: "taskCreated",
		secret: "clickup-webhook-secret", body: `{"webhook_id":"7689a169-a000-4985-8676-9902b96d6627","event":"taskCreated","task_id":"1vj37mc"}`,
		sign: bodySigner("X-Signature", "", hexHMAC, sha256.New)},
	// OpenAI sends Standard Webhooks: the official Node SDK's case
	// (openai-node tests/api-resources/webhooks.test.ts)
	{recipe: "openai", doc: "https://developers.openai.com/api/docs/guides/webhooks", wantID: stdID, wantType: "response.completed",
		secret: "whsec_RdvaYFYUXuIFuEbvZHwMfYFhUf7aMYjYcmM24+Aj40c=", wrong: stdOtherSecret, body: openAIBody, timestamped: true,
		sign:      svixSigner("webhook-"),
		vector:    []string{"webhook-id", "wh_685c059ae39c8190af8c71ed1022a24d", "webhook-timestamp", "1750861210", "webhook-signature", "v1,gUAg4R2hWouRZqRQG4uJypNS8YK885G838+EHb4nKBY="},
		vectorNow: time.Unix(1750861210, 0), vectorBody: openAIBody},
	// Ed25519: the recipe's "secret" is the public key; the signer uses
	// the matching private key (conformance_test.go's edKeyA, edKeyB)
	{recipe: "discord", doc: "https://discord.com/developers/docs/events/webhook-events", wantType: "APPLICATION_AUTHORIZED",
		secret: edPublicHex(edKeyA), wrong: edPublicHex(edKeyB), body: `{"version":1,"application_id":"1234567890","type":1,"event":{"type":"APPLICATION_AUTHORIZED","timestamp":"2024-10-18T14:42:53.064834","data":{}}}`, timestamped: true,
		sign: func(public, body string, ts time.Time) ([]string, string) {
			at := strconv.FormatInt(ts.Unix(), 10)
			return []string{"X-Signature-Ed25519", hex.EncodeToString(ed25519.Sign(edPrivateOf(public), []byte(at+body))), "X-Signature-Timestamp", at}, body
		}},
	{recipe: "telnyx", doc: "https://developers.telnyx.com/docs/development/sdk/node/webhooks", wantID: "0ccc7b54-4df3-4bca-a65a-3da1ecc777f0", wantType: "call.initiated",
		secret: edPublicB64(edKeyA), wrong: edPublicB64(edKeyB), body: `{"data":{"event_type":"call.initiated","id":"0ccc7b54-4df3-4bca-a65a-3da1ecc777f0","occurred_at":"2026-01-01T00:00:00.000000Z","payload":{},"record_type":"event"}}`, timestamped: true,
		sign: func(public, body string, ts time.Time) ([]string, string) {
			at := strconv.FormatInt(ts.Unix(), 10)
			return []string{"telnyx-signature-ed25519", base64.StdEncoding.EncodeToString(ed25519.Sign(edPrivateOf(public), []byte(at+"|"+body))), "telnyx-timestamp", at}, body
		}},
	// the scheme's own defaults: the message id, the subscription type
	{recipe: "twitch", doc: "https://dev.twitch.tv/docs/eventsub/handling-webhook-events/", wantID: twitchID, wantType: "channel.follow",
		headers: []string{TwitchSubTypeHeader, "channel.follow", TwitchTypeHeader, "notification"},
		secret:  twitchSecret, body: twitchBody, timestamped: true,
		sign: func(secret, body string, ts time.Time) ([]string, string) {
			at := ts.UTC().Format(time.RFC3339Nano)
			return []string{TwitchIDHeader, twitchID, TwitchTimestampHeader, at, TwitchSignatureHeader, "sha256=" + hexHMAC(sha256.New, secret, twitchID, at, body)}, body
		},
		vector:    []string{TwitchIDHeader, twitchID, TwitchTimestampHeader, twitchTS, TwitchSignatureHeader, twitchSig},
		vectorNow: time.Date(2021, 2, 19, 23, 47, 0, 0, time.UTC), vectorBody: twitchBody},
	{recipe: "msgraph", doc: "https://learn.microsoft.com/graph/change-notifications-delivery-webhooks", wantType: "created",
		secret: graphState, body: graphBody(graphState), bodyUnsigned: true,
		sign: func(secret, _ string, _ time.Time) ([]string, string) { return nil, graphBody(secret) }},
}

// workOSBody is the official Python SDK's test payload (workos-python
// tests/test_webhooks.py @1afa8eea).
const workOSBody = `{"id":"event_01J44T8116Q5M0RYCFA6KWNXN9","data":{"id":"conn_01EHWNC0FCBHZ3BJ7EGKYXK0E6","name":"Foo Corp's Connection","state":"active","object":"connection","status":"linked","domains":[{"id":"conn_domain_01EHWNFTAFCF3CQAE5A9Q0P1YB","domain":"foo-corp.com","object":"connection_domain"}],"created_at":"2021-06-25T19:07:33.155Z","updated_at":"2021-06-25T19:07:33.155Z","external_key":"3QMR4u0Tok6SgwY2AWG6u6mkQ","connection_type":"OktaSAML","organization_id":"org_01EHWNCE74X7JSDV0X3SZ3KJNY"},"event":"connection.activated","created_at":"2021-06-25T19:07:33.155Z"}`

// buildkiteBody is the official Go SDK's test payload (go-buildkite
// webhook_test.go @62b6fcf3).
const buildkiteBody = `{"event":"ping","service":{"id":"c9f8372d-c0cd-43dc-9274-768a875cf6ca","provider":"webhook","settings":{"url":"https://server.com/webhooks"}},"organization":{"id":"49801950-1df0-474f-bb56-ad6a930c5cb9","graphql_id":"T3JnYW5pemF0aW9uLS0tZTBmMzk3MgsTksGkxOWYtZTZjNzczZTJiYjEy","url":"https://api.buildkite.com/v2/organizations/acme-inc","web_url":"https://buildkite.com/acme-inc","name":"ACME Inc","slug":"acme-inc","agents_url":"https://api.buildkite.com/v2/organizations/acme-inc/agents","emojis_url":"https://api.buildkite.com/v2/organizations/acme-inc/emojis","created_at":"2021-02-03T20:34:10.486Z","pipelines_url":"https://api.buildkite.com/v2/organizations/acme-inc/pipelines"},"sender":{"id":"c9f8372d-c0cd-43dc-9269-bcbb7f308e3f","name":"ACME Man"}}`

// pagerDutyBody is the official Go SDK's test payload (go-pagerduty
// webhookv3/webhookv3_test.go @d34fb98c).
const pagerDutyBody = `{"event":{"id":"01BWDWL3NYY7LUFPZCC28QUCMK","event_type":"incident.priority_updated","resource_type":"incident","occurred_at":"2021-04-26T17:36:27.458Z","agent":{"html_url":"https://acme.pagerduty.com/users/PLH1HKV","id":"PLH1HKV","self":"https://api.pagerduty.com/users/PLH1HKV","summary":"Tenex Engineer","type":"user_reference"},"client":null,"data":{"id":"PGR0VU2","type":"incident","self":"https://api.pagerduty.com/incidents/PGR0VU2","html_url":"https://acme.pagerduty.com/incidents/PGR0VU2","number":2,"status":"triggered","title":"A little bump in the road","service":{"html_url":"https://acme.pagerduty.com/services/PF9KMXH","id":"PF9KMXH","self":"https://api.pagerduty.com/services/PF9KMXH","summary":"API Service","type":"service_reference"},"assignees":[{"html_url":"https://acme.pagerduty.com/users/PTUXL6G","id":"PTUXL6G","self":"https://api.pagerduty.com/users/PTUXL6G","summary":"User 123","type":"user_reference"}],"escalation_policy":{"html_url":"https://acme.pagerduty.com/escalation_policies/PUS0KTE","id":"PUS0KTE","self":"https://api.pagerduty.com/escalation_policies/PUS0KTE","summary":"Default","type":"escalation_policy_reference"},"teams":[{"html_url":"https://acme.pagerduty.com/teams/PFCVPS0","id":"PFCVPS0","self":"https://api.pagerduty.com/teams/PFCVPS0","summary":"Engineering","type":"team_reference"}],"priority":{"html_url":"https://acme.pagerduty.com/account/incident_priorities","id":"PSO75BM","self":"https://api.pagerduty.com/priorities/PSO75BM","summary":"P1","type":"priority_reference"},"urgency":"high","conference_bridge":{"conference_number":1000,"conference_url":"https://example.com"},"resolve_reason":null}}}`

// onfidoBody is the official Node SDK's test payload (onfido-node
// test/classic-webhook-event-verifier.test.ts @2b9faecc).
const onfidoBody = `{"payload":{"resource_type":"check","action":"check.completed","object":{"id":"check-123","status":"complete","completed_at_iso8601":"2020-01-01T00:00:00Z","href":"https://api.onfido.com/v3/checks/check-123"}}}`

// openAIBody is the official Node SDK's test payload (openai-node
// tests/api-resources/webhooks.test.ts @60323767).
const openAIBody = `{"id": "evt_685c059ae3a481909bdc86819b066fb6", "object": "event", "created_at": 1750861210, "type": "response.completed", "data": {"id": "resp_123"}}`

// edPublicB64 is the base64 of priv's public key, as Telnyx shows it.
func edPublicB64(priv ed25519.PrivateKey) string {
	return base64.StdEncoding.EncodeToString(priv.Public().(ed25519.PublicKey))
}

// edPrivateOf is the conformance private key whose public key is public
// (hex or base64).
func edPrivateOf(public string) ed25519.PrivateKey {
	if public == edPublicHex(edKeyB) || public == edPublicB64(edKeyB) {
		return edKeyB
	}
	return edKeyA
}

// mandrillBody is a form Mandrill posts, one event in mandrill_events.
var mandrillBody = "mandrill_events=" + url.QueryEscape(`[{"event":"send","_id":"exampleaaaaaaaaaaaaaaaaaaaaaaaaa","ts":1365109999}]`)

// rawHashID is the id raw_hash gives body: the SHA-256 of its exact bytes.
func rawHashID(body string) string {
	sum := sha256.Sum256([]byte(body))
	return "rh:" + EncodingHex.Encode(sum[:])
}

// goCardlessBody is the official Go SDK's test fixture
// (gocardless-pro-go testdata/webhook_request.json), final newline included.
const goCardlessBody = `{"events":[{"id":"EVTESTNE86TNZS","created_at":"2017-03-20T17:57:02.292Z","resource_type":"payments","action":"failed","links":{"payment":"index_ID_123"},"details":{"origin":"bank","cause":"test_failure","scheme":"sepa_core","reason_code":"TEST","description":"GoCardless has marked this payment as failed in sandbox to enable testing of payment failure webhooks."},"metadata":{}}]}` + "\n"

// quickBooksBody is the official Java SDK's test payload.
const quickBooksBody = `{"eventNotifications":[{"realmId":"1185883450","dataChangeEvent":{"entities":[{"name":"Customer","id":"1","operation":"Create","lastUpdated":"2015-10-05T14:42:19-0700"}]}}]}`

// stdOtherSecret is a second Standard Webhooks secret.
const stdOtherSecret = "whsec_YW5vdGhlciBzZWNyZXQgb2YgMjQgYnl0ZXM="

// docRecipes returns the caddyfile block of every recipe of providersDoc.
func docRecipes(t *testing.T) map[string]string {
	t.Helper()
	out, err := recipes.Read(providersDoc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// verifyDirective returns the words after `verify` of a recipe block.
func verifyDirective(t *testing.T, block string) string {
	t.Helper()
	d, err := recipes.VerifyDirective(block)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestProviderRecipes: every recipe of docs/providers.md, parsed from the
// page with the scheme's Caddyfile parser and provisioned with the
// secret in the environment variable it names, accepts a request signed
// the way the provider documents, and refuses it signed with another
// secret, with a changed body (unless the body is unsigned) and, for
// timestamped schemes, an hour old.
func TestProviderRecipes(t *testing.T) {
	blocks := docRecipes(t)
	if len(blocks) < 15 {
		t.Fatalf("%d recipes, want at least 15", len(blocks))
	}
	tested := map[string]bool{}
	now := time.Unix(1767225600, 0) // 2026-01-01
	for _, pc := range providerCases {
		block, ok := blocks[pc.recipe]
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
			envs := recipes.EnvPlaceholder.FindAllStringSubmatch(directive, -1)
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
				t.Run("an hour old", func(t *testing.T) { check(t, pc.secret, pc.body, now.Add(-time.Hour), nil, ErrTimestamp) })
			}
			t.Run("id and type rules", func(t *testing.T) {
				// the recipe's, else its scheme's defaults (what the
				// ingress applies)
				idRules, typeRules := recipeRules(t, block)
				if d, ok := v.(IDDefaulter); ok && len(idRules) == 0 {
					idRules = d.DefaultIDFrom()
				}
				if d, ok := v.(TypeDefaulter); ok && len(typeRules) == 0 {
					typeRules = d.DefaultTypeFrom()
				}
				hdr, sent := pc.sign(pc.secret, pc.body, now)
				req := newRequest(append(hdr, pc.headers...)...)
				if got := dedupe.Extract(idRules, req, []byte(sent), now); len(idRules) > 0 && got != pc.wantID {
					t.Errorf("id_from finds %q, want %q", got, pc.wantID)
				}
				if len(idRules) == 0 && pc.wantID != "" {
					t.Errorf("no id rule, want the id %q", pc.wantID)
				}
				if got := dedupe.ExtractType(typeRules, req, []byte(sent)); len(typeRules) > 0 && got != pc.wantType {
					t.Errorf("type_from finds %q, want %q", got, pc.wantType)
				}
				if len(typeRules) == 0 && pc.wantType != "" {
					t.Errorf("no type rule, want the type %q", pc.wantType)
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
					vv := v
					if pc.vectorVerify != "" {
						name := strings.Fields(pc.vectorVerify)[0]
						cfg, err := unmarshalCaddyfile(t, name, pc.vectorVerify)
						if err != nil {
							t.Fatalf("parsing %q: %v", pc.vectorVerify, err)
						}
						vv = mustLoad(t, name, cfg)
					}
					checkErr(t, vv.Verify(newRequest(pc.vector...), []byte(body), pc.vectorNow), nil, pc.secret)
				})
			}
		})
	}
	var untested []string
	for r := range blocks {
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
