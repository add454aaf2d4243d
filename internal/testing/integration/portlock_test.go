//go:build unix

package integration

import (
	"os"
	"path/filepath"
	"syscall"
)

// portLock is held for the life of the test binary: this package's
// end-to-end tests listen on fixed ports (caddytest's admin port 2999 and
// httpPort), so two of its test binaries at once (two checkouts, or two go
// test runs) would load their configs into each other's Caddy. A second
// binary waits here for the first to end.
var portLock *os.File

func init() {
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "hookline-integration.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return // no lock: run as before
	}
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX) == nil {
		portLock = f
	}
}
