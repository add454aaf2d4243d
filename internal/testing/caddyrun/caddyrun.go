// Package caddyrun holds what the tests that load configs into their
// process's Caddy (caddytest, which keeps that Caddy running from one test
// to the next) share. Test code only.
package caddyrun

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// UnloadAtEnd stops, when t ends, the apps of the config t loaded into the
// Caddy whose admin endpoint listens on localhost:adminPort, by loading a
// config with that endpoint alone. The webhooks app then closes its store
// before t's temporary directories are removed: an embedded store's engine
// may still be writing files in its directory (a compaction after an
// erasure), and the removal then fails the test. Cleanups run the last
// registered first: call it after the directories were made (after
// InitServer, whose config names them, will do).
func UnloadAtEnd(t testing.TB, adminPort int) {
	t.Helper()
	t.Cleanup(func() {
		cfg := fmt.Sprintf(`{"admin":{"listen":"localhost:%d"}}`, adminPort)
		resp, err := http.Post(fmt.Sprintf("http://localhost:%d/load", adminPort), "application/json", strings.NewReader(cfg))
		if err != nil {
			t.Logf("unloading the test's config: %v", err)
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Logf("unloading the test's config: %s", resp.Status)
		}
	})
}
