//go:build !unix

package webui

import "os"

// ownedByMe: without Unix owners, the directory's mode decides.
func ownedByMe(os.FileInfo) bool { return true }
