// Package chunker turns files into riffle chunks and back (SPEC §6.4).
//
// A file is cut into chunks of the epoch's chunk size b; every chunk is
// addressed by its plain SHA-256 (SPEC §2). The file's manifest (name, size,
// chunk size, media type, chunk ids in order) is itself one chunk, or, for a
// file with more chunks than one manifest chunk can list, a small tree of
// manifest chunks under a root. The file id is the root manifest's chunk id,
// written as a link "riffle:<base32 id>". Private sharing encrypts the file
// under a random key before chunking, with an AEAD in the STREAM construction
// whose segments coincide with the chunks; the key travels only in the link's
// fragment, "riffle:<id>#<key>".
//
// Share cuts a stream without holding it in memory and emits data chunks and
// then manifest chunks; an Assembler takes chunks one at a time in any order,
// verifies each against the manifest, writes it at its offset in a partial
// file that survives restarts, and renames the finished file into place.
// Every byte layout is fixed in docs/proto-chunker.md.
package chunker

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
)

// IDSize is the size of a chunk id: a SHA-256 digest.
const IDSize = sha256.Size

// KeySize is the size of a file key for private sharing.
const KeySize = 32

// encodedLen is the length of a 32-byte value in unpadded base32 (260 bits,
// of which the last 4 are zero).
const encodedLen = 52

// LinkScheme is the prefix of every link.
const LinkScheme = "riffle:"

// b32 is lowercase RFC 4648 base32 without padding, the one text form of
// ids and keys.
var b32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// ID is a chunk id: the SHA-256 of the chunk's bytes (SPEC §2, content
// addressing). A file id is the ID of its root manifest chunk.
type ID [IDSize]byte

// Sum returns the id of a chunk.
func Sum(chunk []byte) ID { return ID(sha256.Sum256(chunk)) }

// String returns the id in lowercase unpadded base32 (52 characters).
func (id ID) String() string { return b32.EncodeToString(id[:]) }

// IsZero reports whether the id is all zero (the "no request" marker of
// SPEC §5.1, never the id of a real chunk).
func (id ID) IsZero() bool { return id == ID{} }

// FileKey is the random key of a privately shared file. It never enters a
// chunk: it travels only in the fragment of a link.
type FileKey [KeySize]byte

// String returns the key in lowercase unpadded base32.
func (k *FileKey) String() string { return b32.EncodeToString(k[:]) }

// Zero overwrites the key.
func (k *FileKey) Zero() { clear(k[:]) }

// Equal compares two keys in constant time.
func (k *FileKey) Equal(o *FileKey) bool { return subtle.ConstantTimeCompare(k[:], o[:]) == 1 }

// ErrBadLink is wrapped by every link parse error.
var ErrBadLink = errors.New("riffle: bad link")

// Link names a shared file: its file id and, for a privately shared file,
// the key that decrypts it.
type Link struct {
	ID  ID
	Key *FileKey // nil for a public file
}

// String returns "riffle:<id>" or "riffle:<id>#<key>".
func (l Link) String() string {
	s := LinkScheme + l.ID.String()
	if l.Key != nil {
		s += "#" + l.Key.String()
	}
	return s
}

// ParseLink parses a link. Letter case is ignored (a link read back from a QR
// code comes in capitals); anything else that String would not produce is
// rejected: whitespace, padding, a wrong length, non-zero trailing bits.
func ParseLink(s string) (Link, error) {
	if len(s) > len(LinkScheme)+2*encodedLen+1 {
		return Link{}, fmt.Errorf("%w: %d characters, at most %d", ErrBadLink, len(s), len(LinkScheme)+2*encodedLen+1)
	}
	s = strings.ToLower(s)
	rest, ok := strings.CutPrefix(s, LinkScheme)
	if !ok {
		return Link{}, fmt.Errorf("%w: does not start with %q", ErrBadLink, LinkScheme)
	}
	idText, keyText, hasKey := strings.Cut(rest, "#")
	var l Link
	if err := decode32(l.ID[:], idText); err != nil {
		return Link{}, fmt.Errorf("%w: file id: %w", ErrBadLink, err)
	}
	if hasKey {
		l.Key = new(FileKey)
		if err := decode32(l.Key[:], keyText); err != nil {
			return Link{}, fmt.Errorf("%w: key: %w", ErrBadLink, err)
		}
	}
	return l, nil
}

// ParseID parses an id written by ID.String (any letter case).
func ParseID(s string) (ID, error) {
	var id ID
	if err := decode32(id[:], strings.ToLower(s)); err != nil {
		return ID{}, fmt.Errorf("riffle: bad chunk id: %w", err)
	}
	return id, nil
}

// decode32 decodes exactly 32 bytes of canonical lowercase base32 into dst.
func decode32(dst []byte, s string) error {
	if len(s) != encodedLen {
		return fmt.Errorf("%d base32 characters, want %d", len(s), encodedLen)
	}
	var buf [IDSize + 1]byte
	n, err := b32.Decode(buf[:], []byte(s))
	if err != nil {
		return fmt.Errorf("not base32: %w", err)
	}
	if n != IDSize {
		return fmt.Errorf("decodes to %d bytes, want %d", n, IDSize)
	}
	// The decoder ignores the 4 bits past the 256th; a second spelling of
	// the same value would give one file two links.
	if b32.EncodeToString(buf[:IDSize]) != s {
		return errors.New("non-zero trailing bits")
	}
	copy(dst, buf[:IDSize])
	clear(buf[:])
	return nil
}
