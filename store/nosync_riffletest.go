//go:build riffletest

package store

import "sync/atomic"

var noSyncOn atomic.Bool

// noSync reports whether SetNoSync turned fsync off.
func noSync() bool { return noSyncOn.Load() }

// SetNoSync(true), called before any store opens, makes this process's
// stores skip every fsync (riffletest builds only: the binary always
// syncs). For tests that run whole networks in one process (node's):
// there a crash is a closed store, whose writes the page cache keeps, so
// a sync changes nothing a test can see and costs CPU on every commit.
func SetNoSync(on bool) { noSyncOn.Store(on) }
