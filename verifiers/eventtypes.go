package verifiers

import "github.com/hookline/hookline/dedupe"

// TypeRule is one type_from rule, as a scheme's DefaultTypeFrom returns
// it: a header, json or form rule, optionally with parts joined after a
// "." (see dedupe.TypeRule).
type TypeRule = dedupe.TypeRule

// TypeDefaulter is implemented by schemes that know where their provider
// puts the event type. DefaultTypeFrom returns the type_from rules the
// ingress uses when the source sets none, tried in order, the first that
// finds a type winning. A scheme without it (hmac, none, twitter) gives
// events no type unless the source sets type_from: only destinations
// without an events filter take them.
//
// The defaults of every scheme are decided here, side by side, as
// docs/reference.md lists them, and proven on the provider corpus
// (testdata/providers: every sample gets the type its provider documents).
type TypeDefaulter interface {
	DefaultTypeFrom() []TypeRule
}

// types is a list of single-rule type_from rules, tried in order.
func types(rules ...dedupe.Rule) []TypeRule {
	out := make([]TypeRule, len(rules))
	for i, r := range rules {
		out[i] = dedupe.TypeOf(r)
	}
	return out
}

// DefaultTypeFrom returns the event's type field (invoice.paid).
func (*Stripe) DefaultTypeFrom() []TypeRule { return types(dedupe.JSON("type")) }

// DefaultTypeFrom returns the X-GitHub-Event header joined to the payload's
// action when there is one (pull_request.opened; push has no action).
func (*GitHub) DefaultTypeFrom() []TypeRule {
	return []TypeRule{dedupe.TypeOf(dedupe.Header("X-GitHub-Event")).Joined(dedupe.JSON("action"))}
}

// DefaultTypeFrom returns the X-Shopify-Topic header (orders/create), or
// for Shopify Events (shopify-* headers) the shopify-topic header.
func (*Shopify) DefaultTypeFrom() []TypeRule {
	return types(dedupe.Header("X-Shopify-Topic"), dedupe.Header("shopify-topic"))
}

// DefaultTypeFrom returns the inner Events API type (message), else the
// outer one (url_verification, app_rate_limited).
func (*Slack) DefaultTypeFrom() []TypeRule {
	return types(dedupe.JSON("event.type"), dedupe.JSON("type"))
}

// DefaultTypeFrom returns the payload's type field (Standard Webhooks'
// recommended envelope: {"type": "contact.created", ...}).
func (*Standard) DefaultTypeFrom() []TypeRule { return types(dedupe.JSON("type")) }

// DefaultTypeFrom returns the event_type field (transaction.paid).
func (*Paddle) DefaultTypeFrom() []TypeRule { return types(dedupe.JSON("event_type")) }

// DefaultTypeFrom returns the X-Gitlab-Event header (Push Hook).
func (*GitLab) DefaultTypeFrom() []TypeRule { return types(dedupe.Header("X-Gitlab-Event")) }

// DefaultTypeFrom returns the first event's event field (delivered): a
// batch carries events of several types, and the first one names it.
func (*SendGrid) DefaultTypeFrom() []TypeRule { return types(dedupe.JSON("0.event")) }

// DefaultTypeFrom returns the object joined to what the first entry
// carries: the field of its first change
// (whatsapp_business_account.messages, instagram.comments), else
// "messaging" or "standby" for Messenger-style entries (page.messaging,
// instagram.messaging), else the object alone.
func (*Meta) DefaultTypeFrom() []TypeRule {
	object := dedupe.JSON("object")
	return []TypeRule{
		dedupe.TypeOf(object.OnlyIf("entry.0.changes.0.field")).Joined(dedupe.JSON("entry.0.changes.0.field")),
		dedupe.TypeOf(object.OnlyIf("entry.0.messaging")).Joined(dedupe.Const("messaging")),
		dedupe.TypeOf(object.OnlyIf("entry.0.standby")).Joined(dedupe.Const("standby")),
		dedupe.TypeOf(object),
	}
}

// DefaultTypeFrom returns a message status callback's MessageStatus, else
// its SmsStatus (sent, delivered, read). Voice callbacks get no type.
func (*Twilio) DefaultTypeFrom() []TypeRule {
	return types(dedupe.Form("MessageStatus"), dedupe.Form("SmsStatus"))
}

// Interface guards
var (
	_ TypeDefaulter = (*Stripe)(nil)
	_ TypeDefaulter = (*GitHub)(nil)
	_ TypeDefaulter = (*Shopify)(nil)
	_ TypeDefaulter = (*Slack)(nil)
	_ TypeDefaulter = (*Standard)(nil)
	_ TypeDefaulter = (*Svix)(nil)
	_ TypeDefaulter = (*Paddle)(nil)
	_ TypeDefaulter = (*GitLab)(nil)
	_ TypeDefaulter = (*SendGrid)(nil)
	_ TypeDefaulter = (*Meta)(nil)
	_ TypeDefaulter = (*Facebook)(nil)
	_ TypeDefaulter = (*WhatsApp)(nil)
	_ TypeDefaulter = (*Instagram)(nil)
	_ TypeDefaulter = (*Twilio)(nil)
)
