//go:build !unix

package store

import "os"

// Without mmap, reads copy from the file.
func mapSegment(*os.File) ([]byte, error) { return nil, nil }

func unmapSegment([]byte) error { return nil }
