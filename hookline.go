// Package hookline is durable webhook ingress for Caddy. Importing it (as
// xcaddy build --with github.com/hookline/hookline does) registers every
// hookline module: the webhooks app, the webhook_ingress handler, the
// admin API, storage backends and signature verifiers.
package hookline

import (
	// the modules register themselves in init
	_ "github.com/hookline/hookline/caddymodule"
	_ "github.com/hookline/hookline/handlers"
	_ "github.com/hookline/hookline/verifiers"
)
