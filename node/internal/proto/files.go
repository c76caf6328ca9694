package proto

import (
	"fmt"
	"os"
	"path/filepath"
)

// Files of a data directory both sides write.

// WriteFileDurably writes b to path through a synced temporary file and a
// rename, so that a crash leaves the old or the new content.
func WriteFileDurably(path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("node: write %s: %w", filepath.Base(path), err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return fmt.Errorf("node: write %s: %w", filepath.Base(path), err)
	}
	return nil
}
