//go:build !unix

package enginespike

import "os"

// allocated is the space a file's blocks take (its size here).
func allocated(info os.FileInfo) int64 { return info.Size() }
