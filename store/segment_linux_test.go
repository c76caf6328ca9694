package store

import (
	"os"
	"syscall"
)

// diskBytes is the space a file takes on disk (its allocated blocks).
func diskBytes(path string) (int64, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, false
	}
	return fi.Sys().(*syscall.Stat_t).Blocks * 512, true
}
