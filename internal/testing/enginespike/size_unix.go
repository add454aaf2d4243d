//go:build unix

package enginespike

import (
	"os"
	"syscall"
)

// allocated is the space a file's blocks take.
func allocated(info os.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return info.Size()
}
