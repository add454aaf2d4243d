package verifiers

import (
	"time"
)

// DedupeWindower is implemented by the schemes whose provider documents
// how long it keeps sending a delivery again (its retries, or an
// operator's manual redelivery): DefaultDedupeWindow is the dedupe_window
// the ingress uses when the source sets none. It covers that horizon with
// a day to spare, so that a late resend of an event already accepted is
// still answered as a duplicate rather than delivered twice.
type DedupeWindower interface {
	DefaultDedupeWindow() time.Duration
}

// retryHorizon is how long a provider keeps resending a delivery, and the
// page that says so (docs/providers.md cites the same).
type retryHorizon struct {
	horizon time.Duration
	doc     string
}

// dedupeMargin is added to a provider's horizon: its retries are spaced by
// growing, jittered delays, and a manual resend may come at the very end.
const dedupeMargin = 24 * time.Hour

const day = 24 * time.Hour

// retryHorizons are the documented horizons of the providers with a scheme
// of their own, by scheme. The schemes not listed (hmac, none) have no
// provider to ask, and keep the ingress's default.
var retryHorizons = map[string]retryHorizon{
	// "Stripe attempts to deliver a given event to your webhook endpoint
	// for up to 3 days with an exponential back off" (live mode)
	"stripe": {3 * day, "https://docs.stripe.com/webhooks/process-undelivered-events"},
	// the Standard Webhooks specification's example schedule ends 75 h
	// 35 min after the first attempt; Svix's own ends after about 27.6 h
	"standard": {75*time.Hour + 35*time.Minute, "https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md"},
	"svix":     {75*time.Hour + 35*time.Minute, "https://docs.svix.com/retries"},
	// no automatic retry, but "you can redeliver webhook deliveries that
	// occurred in the past 3 days"
	"github": {3 * day, "https://docs.github.com/en/webhooks/testing-and-troubleshooting-webhooks/redelivering-webhooks"},
	// "retried a total of 8 times over 4 hours"
	"shopify": {4 * time.Hour, "https://shopify.dev/changelog/updates-to-webhook-retry-mechanism"},
	// three retries within minutes; with delayed events, hourly for 24 h
	"slack": {day, "https://docs.slack.dev/apis/events-api/"},
	// Graph API webhooks: "over the next 36 hours"; WhatsApp Cloud API:
	// up to 7 days (meta, the name of all three, covers WhatsApp's)
	"meta":      {7 * day, "https://developers.facebook.com/docs/whatsapp/cloud-api/guides/set-up-webhooks"},
	"facebook":  {36 * time.Hour, "https://developers.facebook.com/docs/graph-api/webhooks/getting-started"},
	"instagram": {36 * time.Hour, "https://developers.facebook.com/docs/graph-api/webhooks/getting-started"},
	"whatsapp":  {7 * day, "https://developers.facebook.com/docs/whatsapp/cloud-api/guides/set-up-webhooks"},
	// connection retries only, within seconds
	"twilio": {time.Minute, "https://www.twilio.com/docs/usage/webhooks/webhooks-connection-overrides"},
	// the Event Webhook retries "until ... the maximum time has expired",
	// 24 hours (the 72 hours sometimes quoted are Inbound Parse's, which
	// this scheme does not verify)
	"sendgrid": {day, "https://docs.sendgrid.com/for-developers/tracking-events/troubleshooting"},
	// no retry schedule: a failed hook can be resent by hand for 2 days
	"gitlab": {2 * day, "https://docs.gitlab.com/user/project/integrations/webhooks/"},
	// live accounts: "up to 60 times over 3 days"
	"paddle": {3 * day, "https://developer.paddle.com/webhooks/about/respond-to-webhooks"},
	// three retries, the last 85 minutes after the first attempt
	"zoom": {85 * time.Minute, "https://developers.zoom.us/blog/webhook-delays"},
	// "up to 4 hours"
	"msgraph": {4 * time.Hour, "https://learn.microsoft.com/en-us/graph/change-notifications-delivery-webhooks"},
	// three retries within 5 minutes
	"twitter": {5 * time.Minute, "https://developer.x.com/en/docs/x-api/enterprise/account-activity-api/guides/activity-retries"},
	"x":       {5 * time.Minute, "https://developer.x.com/en/docs/x-api/enterprise/account-activity-api/guides/activity-retries"},
}

// defaultDedupeWindow is the dedupe window of scheme: its provider's
// horizon and the margin, rounded up to a whole hour, never less than a
// day (the ingress's own default).
func defaultDedupeWindow(scheme string) time.Duration {
	h, ok := retryHorizons[scheme]
	if !ok {
		return day
	}
	w := h.horizon + dedupeMargin
	if r := w % time.Hour; r != 0 {
		w += time.Hour - r
	}
	return max(w, day)
}

// The schemes' default windows (DedupeWindower). Stripe's format under
// another header, and Twilio's under Mandrill's, are another provider's,
// whose horizon is not Stripe's or Twilio's: they keep the ingress's
// default.

// DefaultDedupeWindow implements DedupeWindower.
func (s *Stripe) DefaultDedupeWindow() time.Duration {
	if s.otherProvider() {
		return day
	}
	return defaultDedupeWindow("stripe")
}

// DefaultDedupeWindow implements DedupeWindower.
func (tw *Twilio) DefaultDedupeWindow() time.Duration {
	if tw.otherProvider() {
		return day
	}
	return defaultDedupeWindow("twilio")
}

// DefaultDedupeWindow implements DedupeWindower.
func (*Standard) DefaultDedupeWindow() time.Duration { return defaultDedupeWindow("standard") }

// DefaultDedupeWindow implements DedupeWindower.
func (*Svix) DefaultDedupeWindow() time.Duration { return defaultDedupeWindow("svix") }

// DefaultDedupeWindow implements DedupeWindower.
func (*GitHub) DefaultDedupeWindow() time.Duration { return defaultDedupeWindow("github") }

// DefaultDedupeWindow implements DedupeWindower.
func (*Shopify) DefaultDedupeWindow() time.Duration { return defaultDedupeWindow("shopify") }

// DefaultDedupeWindow implements DedupeWindower.
func (*Slack) DefaultDedupeWindow() time.Duration { return defaultDedupeWindow("slack") }

// DefaultDedupeWindow implements DedupeWindower.
func (*Meta) DefaultDedupeWindow() time.Duration { return defaultDedupeWindow("meta") }

// DefaultDedupeWindow implements DedupeWindower.
func (*Facebook) DefaultDedupeWindow() time.Duration { return defaultDedupeWindow("facebook") }

// DefaultDedupeWindow implements DedupeWindower.
func (*Instagram) DefaultDedupeWindow() time.Duration { return defaultDedupeWindow("instagram") }

// DefaultDedupeWindow implements DedupeWindower.
func (*WhatsApp) DefaultDedupeWindow() time.Duration { return defaultDedupeWindow("whatsapp") }

// DefaultDedupeWindow implements DedupeWindower.
func (*SendGrid) DefaultDedupeWindow() time.Duration { return defaultDedupeWindow("sendgrid") }

// DefaultDedupeWindow implements DedupeWindower.
func (*GitLab) DefaultDedupeWindow() time.Duration { return defaultDedupeWindow("gitlab") }

// DefaultDedupeWindow implements DedupeWindower.
func (*Paddle) DefaultDedupeWindow() time.Duration { return defaultDedupeWindow("paddle") }

// DefaultDedupeWindow implements DedupeWindower.
func (*Zoom) DefaultDedupeWindow() time.Duration { return defaultDedupeWindow("zoom") }

// DefaultDedupeWindow implements DedupeWindower.
func (*MSGraph) DefaultDedupeWindow() time.Duration { return defaultDedupeWindow("msgraph") }

// DefaultDedupeWindow implements DedupeWindower.
func (*Twitter) DefaultDedupeWindow() time.Duration { return defaultDedupeWindow("twitter") }

// DefaultDedupeWindow implements DedupeWindower.
func (*X) DefaultDedupeWindow() time.Duration { return defaultDedupeWindow("x") }

// Interface guards
var (
	_ DedupeWindower = (*Stripe)(nil)
	_ DedupeWindower = (*Twilio)(nil)
	_ DedupeWindower = (*Standard)(nil)
	_ DedupeWindower = (*Svix)(nil)
	_ DedupeWindower = (*GitHub)(nil)
	_ DedupeWindower = (*Shopify)(nil)
	_ DedupeWindower = (*Slack)(nil)
	_ DedupeWindower = (*Meta)(nil)
	_ DedupeWindower = (*Facebook)(nil)
	_ DedupeWindower = (*Instagram)(nil)
	_ DedupeWindower = (*WhatsApp)(nil)
	_ DedupeWindower = (*SendGrid)(nil)
	_ DedupeWindower = (*GitLab)(nil)
	_ DedupeWindower = (*Paddle)(nil)
	_ DedupeWindower = (*Zoom)(nil)
	_ DedupeWindower = (*MSGraph)(nil)
	_ DedupeWindower = (*Twitter)(nil)
	_ DedupeWindower = (*X)(nil)
)
