//go:build unix

package webui

import (
	"os"
	"syscall"
)

// ownedByMe reports whether this process's user owns the file of st.
func ownedByMe(st os.FileInfo) bool {
	s, ok := st.Sys().(*syscall.Stat_t)
	return ok && int(s.Uid) == os.Getuid()
}
