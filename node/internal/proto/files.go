package proto

import (
	"fmt"
	"os"
	"path/filepath"
)

// Files of a data directory both sides write.

// WriteFileDurably writes b to path through a synced temporary file and a
// rename, then syncs the directory, so that a crash or a power cut leaves
// the old or the new content and, once it returns, the new one: callers
// sign after it (epoch numbers, closing choices), and a rename lost to a
// power cut would let them sign again.
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
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		return fmt.Errorf("node: write %s: %w", filepath.Base(path), err)
	}
	return nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
