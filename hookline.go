// Package hookline is durable webhook ingress for Caddy. Importing it (as
// xcaddy build --with github.com/hookline/hookline does) registers every
// hookline module: the webhooks app (with its admin API and CLI), the
// webhook_ingress and webhook_dashboard handlers, the storage backends and
// the signature verifiers. See docs/architecture.md for the packages.
package hookline

import (
	// the modules register themselves in init
	_ "github.com/hookline/hookline/internal/dashboard"
	_ "github.com/hookline/hookline/internal/ingress"
	_ "github.com/hookline/hookline/internal/webhooks"
	_ "github.com/hookline/hookline/verifiers"
)
