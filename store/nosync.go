//go:build !riffletest

package store

// noSync is false: every write is on disk before it returns (the package
// comment). Only a riffletest build can turn syncing off
// (nosync_riffletest.go).
func noSync() bool { return false }
