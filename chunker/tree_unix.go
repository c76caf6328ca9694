//go:build unix

package chunker

import "syscall"

// oNoFollow opens a file without following a symbolic link in its place.
const oNoFollow = syscall.O_NOFOLLOW
