package verifiers

import "github.com/hookline/hookline/dedupe"

// TenantDefaulter is implemented by schemes whose provider names the
// customer account an event belongs to (a shop, an app installation, a
// workspace, a connected account). DefaultTenantFrom returns the
// tenant_from rules the ingress uses when the source sets none, tried in
// order, the first that finds one winning.
//
// A default must fail safe: it reads the account only where the provider
// names one per delivery, and finds none in a batch that may carry several
// accounts (Meta's entries, Microsoft Graph's notifications), so that an
// erasure or a filter by tenant never takes in another account's events.
// An event without a tenant is delivered as any other. Slack has none:
// its team_id names the workspace where the event occurred, which in a
// Slack Connect channel may be another organization's than the one whose
// installation receives it. The defaults are
// decided here, side by side, as docs/reference.md lists them, and proven
// on the provider corpus (testdata/providers: every sample gets the
// account its provider names, or none).
type TenantDefaulter interface {
	DefaultTenantFrom() []IDRule
}

// DefaultTenantFrom returns the shop's domain (X-Shopify-Shop-Domain).
func (*Shopify) DefaultTenantFrom() []IDRule {
	return []IDRule{dedupe.Header("X-Shopify-Shop-Domain")}
}

// DefaultTenantFrom returns the GitHub App installation the delivery is
// for (installation.id); a repository or organization webhook has none.
func (*GitHub) DefaultTenantFrom() []IDRule { return []IDRule{dedupe.JSON("installation.id")} }

// DefaultTenantFrom returns the connected account of a Connect event
// (account, acct_...); a platform's own events have none, and neither has
// another provider's format read under another header.
func (s *Stripe) DefaultTenantFrom() []IDRule {
	if s.otherProvider() {
		return nil
	}
	return []IDRule{dedupe.JSON("account")}
}

// DefaultTenantFrom returns the page, Instagram account or WhatsApp
// Business Account of a batch's one entry (entry.0.id); a batch of two
// entries or more has none: Meta may put several accounts in one.
func (*Meta) DefaultTenantFrom() []IDRule {
	return []IDRule{dedupe.JSON("entry.0.id").Unless("entry.1")}
}

// DefaultTenantFrom returns the (sub)account of the callback
// (AccountSid); none for another provider's format read under another
// header (Mandrill's).
func (tw *Twilio) DefaultTenantFrom() []IDRule {
	if tw.otherProvider() {
		return nil
	}
	return []IDRule{dedupe.Form("AccountSid")}
}

// DefaultTenantFrom returns the Zoom account (payload.account_id).
func (*Zoom) DefaultTenantFrom() []IDRule { return []IDRule{dedupe.JSON("payload.account_id")} }

// DefaultTenantFrom returns the Microsoft Entra tenant of a batch's one
// notification (value.0.tenantId); a batch of two or more has none: it may
// carry several subscriptions' tenants.
func (*MSGraph) DefaultTenantFrom() []IDRule {
	return []IDRule{dedupe.JSON("value.0.tenantId").Unless("value.1")}
}

// Interface guards
var (
	_ TenantDefaulter = (*Shopify)(nil)
	_ TenantDefaulter = (*GitHub)(nil)
	_ TenantDefaulter = (*Stripe)(nil)
	_ TenantDefaulter = (*Meta)(nil)
	_ TenantDefaulter = (*Facebook)(nil)
	_ TenantDefaulter = (*WhatsApp)(nil)
	_ TenantDefaulter = (*Instagram)(nil)
	_ TenantDefaulter = (*Twilio)(nil)
	_ TenantDefaulter = (*Zoom)(nil)
	_ TenantDefaulter = (*MSGraph)(nil)
)
