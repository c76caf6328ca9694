package transport

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/libp2p/go-libp2p/core/crypto"
)

// IdentityFile is the name of the libp2p identity key in a data directory.
const IdentityFile = "identity.key"

// LoadIdentity reads the Ed25519 identity key of dir, creating it (mode
// 0600, in a 0700 directory) if absent. The key is both the libp2p identity
// and the server's descriptor-signing key (§3).
func LoadIdentity(dir string) (crypto.PrivKey, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("node: create data directory: %w", err)
	}
	path := filepath.Join(dir, IdentityFile)
	b, err := os.ReadFile(path)
	if err == nil {
		st, serr := os.Stat(path)
		if serr == nil && st.Mode().Perm()&0o077 != 0 {
			return nil, fmt.Errorf("node: identity key %s is readable by others (mode %o): chmod 600 it", path, st.Mode().Perm())
		}
		k, err := crypto.UnmarshalPrivateKey(b)
		if err != nil {
			return nil, fmt.Errorf("node: decode identity key %s: %w", path, err)
		}
		if k.Type() != crypto.Ed25519 {
			return nil, fmt.Errorf("node: identity key %s is %v, want Ed25519", path, k.Type())
		}
		return k, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("node: read identity key: %w", err)
	}
	k, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("node: generate identity key: %w", err)
	}
	raw, err := crypto.MarshalPrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("node: encode identity key: %w", err)
	}
	// O_EXCL: two processes racing on a fresh directory must not both win.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("node: create identity key: %w", err)
	}
	if _, err := f.Write(raw); err != nil {
		f.Close()
		return nil, fmt.Errorf("node: write identity key: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, fmt.Errorf("node: sync identity key: %w", err)
	}
	return k, f.Close()
}
