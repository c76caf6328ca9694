package store

import (
	"os"
	"syscall"
)

// punchHole gives a deleted chunk's blocks back to the file system,
// keeping the file's size (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE).
// A file system without it keeps the bytes until the segment goes.
func punchHole(f *os.File, off, n int64) {
	const punchHoleKeepSize = 0x02 | 0x01
	_ = syscall.Fallocate(int(f.Fd()), punchHoleKeepSize, off, n)
}

// syncData is fdatasync: the data and the size, not the times.
func syncData(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
