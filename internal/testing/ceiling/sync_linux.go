package ceiling

import (
	"os"
	"syscall"
)

// fdatasync flushes f's data (and the size it grew to), as bbolt does on
// Linux.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
