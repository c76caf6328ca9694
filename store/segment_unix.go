//go:build unix

package store

import (
	"os"
	"syscall"
)

// mapSegment maps a segment read-only and shared, segCap bytes long: the
// file grows under the map, and only committed bytes (inside the file)
// are ever read.
func mapSegment(f *os.File) ([]byte, error) {
	return syscall.Mmap(int(f.Fd()), 0, segCap, syscall.PROT_READ, syscall.MAP_SHARED)
}

func unmapSegment(m []byte) error { return syscall.Munmap(m) }
