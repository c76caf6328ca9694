package proto

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/riffle-net/riffle/internal/wire"
)

// Long-term client keys (docs/protocol.md §8 "After a blame", §3
// "Registration", §5.4). A client keeps one Ed25519 key across epochs and
// runs. At each registration it signs (epoch id, its registration key)
// with it and hands that signature to its primary only; the primary keeps
// it for the epoch and publishes it (KeyEvidence) only when a blame names
// the client's slot, so that every server can exclude the key. The key
// links a client's registrations at its primary, which already sees the
// client's connections; no other server learns it before a blame.

// LongTermKeyFile is the name of a client's long-term key in its data
// directory: the 32-byte Ed25519 seed, mode 0600.
const LongTermKeyFile = "client-key"

// tagLongTerm and tagForward name the digests a long-term key and a
// primary sign.
const (
	tagLongTerm = "riffle/v3/long-term-key"
	tagForward  = "riffle/v3/forward"
)

// LongTermKey is a client's long-term Ed25519 key. Its own type keeps it
// apart from the per-epoch registration keys (ed25519.PrivateKey), and
// printing or logging it shows the type name only.
type LongTermKey struct {
	priv ed25519.PrivateKey
}

// NewLongTermKey draws a fresh key (a client without a data directory
// uses one per run: a first-time client at every start).
func NewLongTermKey(r io.Reader) (*LongTermKey, error) {
	_, priv, err := ed25519.GenerateKey(r)
	if err != nil {
		return nil, fmt.Errorf("node: long-term key: %w", err)
	}
	return &LongTermKey{priv: priv}, nil
}

// LoadLongTermKey reads the long-term key of a client data directory,
// creating it (mode 0600, in a 0700 directory) on first run.
func LoadLongTermKey(dir string, r io.Reader) (*LongTermKey, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("node: create data directory: %w", err)
	}
	path := filepath.Join(dir, LongTermKeyFile)
	b, err := os.ReadFile(path)
	if err == nil {
		st, serr := os.Stat(path)
		if serr == nil && st.Mode().Perm()&0o077 != 0 {
			return nil, fmt.Errorf("node: long-term key %s is readable by others (mode %o): chmod 600 it", path, st.Mode().Perm())
		}
		if len(b) != ed25519.SeedSize {
			return nil, fmt.Errorf("node: long-term key %s holds %d bytes, want %d", path, len(b), ed25519.SeedSize)
		}
		return &LongTermKey{priv: ed25519.NewKeyFromSeed(b)}, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("node: read long-term key: %w", err)
	}
	k, err := NewLongTermKey(r)
	if err != nil {
		return nil, err
	}
	// O_EXCL: two processes racing on a fresh directory must not both win.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("node: create long-term key: %w", err)
	}
	if _, err := f.Write(k.priv.Seed()); err != nil {
		f.Close()
		return nil, fmt.Errorf("node: write long-term key: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, fmt.Errorf("node: sync long-term key: %w", err)
	}
	return k, f.Close()
}

// Public returns the key's public half.
func (k *LongTermKey) Public() [32]byte {
	var out [32]byte
	copy(out[:], k.priv.Public().(ed25519.PublicKey))
	return out
}

// Sign signs (epoch id, registration key) for the client's primary.
func (k *LongTermKey) Sign(epoch, regKey [32]byte) [64]byte {
	var out [64]byte
	d := longTermDigest(epoch, regKey)
	copy(out[:], ed25519.Sign(k.priv, d[:]))
	return out
}

// Format prints the type name only.
func (LongTermKey) Format(f fmt.State, _ rune) { io.WriteString(f, "node.LongTermKey{redacted}") }

// LogValue logs the type name only.
func (LongTermKey) LogValue() slog.Value { return slog.StringValue("node.LongTermKey{redacted}") }

// longTermDigest is what a long-term key signs at a registration.
func longTermDigest(epoch, regKey [32]byte) [32]byte {
	return TaggedHash(tagLongTerm, epoch[:], regKey[:])
}

// VerifyLongTerm checks a long-term key's signature over (epoch id,
// registration key).
func VerifyLongTerm(key [32]byte, epoch, regKey [32]byte, sig [64]byte) error {
	d := longTermDigest(epoch, regKey)
	if !ed25519.Verify(ed25519.PublicKey(key[:]), d[:], sig[:]) {
		return errors.New("node: long-term signature does not verify")
	}
	return nil
}

// ForwardDigest is what a primary signs for a registration it forwards.
func ForwardDigest(f *wire.Forwarded) [32]byte {
	return TaggedHash(tagForward, f.Signed())
}
