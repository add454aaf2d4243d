//go:build !linux

package ceiling

import "os"

// fdatasync is fsync where Linux's fdatasync is not available.
func fdatasync(f *os.File) error { return f.Sync() }
