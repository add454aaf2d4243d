// Command caddy is Caddy with the standard modules and hookline built in, so
// that `go build ./cmd/caddy` and `go run ./cmd/caddy` work without xcaddy.
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "github.com/hookline/hookline"
)

func main() {
	caddycmd.Main()
}
