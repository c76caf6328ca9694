//go:build !linux

package store

func diskBytes(string) (int64, bool) { return 0, false }
