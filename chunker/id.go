// Package chunker turns files into riffle chunks and back (§6.4).
//
// A file is cut into chunks of the epoch's chunk size b; every chunk is
// addressed by its plain SHA-256 (§2). The file's manifest (name, size,
// chunk size, media type, chunk ids in order) is itself one chunk, or, for a
// file with more chunks than one manifest chunk can list, a small tree of
// manifest chunks under a root. The file id is the root manifest's chunk id,
// written as a link "riffle:<base32 id>". Private sharing encrypts the file
// under a random key before chunking, with an AEAD in the STREAM construction
// whose segments coincide with the chunks; the key travels only in the link's
// fragment, "riffle:<id>#<key>". Each part of a link carries a checksum.
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

// ID is a chunk id: the SHA-256 of the chunk's bytes (§2, content
// addressing). A file id is the ID of its root manifest chunk.
type ID [IDSize]byte

// Sum returns the id of a chunk.
func Sum(chunk []byte) ID { return ID(sha256.Sum256(chunk)) }

// String returns the id in lowercase unpadded base32 (52 characters).
func (id ID) String() string { return b32.EncodeToString(id[:]) }

// IsZero reports whether the id is all zero (the "no request" marker of
// §5.1, never the id of a real chunk).
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

// String returns "riffle:<id>" or "riffle:<id>#<key>", each part with its
// checksum.
func (l Link) String() string {
	s := LinkScheme + checked(l.ID.String(), idTag)
	if l.Key != nil {
		s += "#" + checked(l.Key.String(), keyTag)
	}
	return s
}

// ParseLink parses a link. Letter case is ignored (a link read back from a QR
// code comes in capitals); anything else that String would not produce is
// rejected: whitespace, padding, a wrong length, non-zero trailing bits, a
// checksum that does not match. A part of 52 characters, without checksum,
// is a link written before checksums: it is read unchecked.
func ParseLink(s string) (Link, error) {
	if max := len(LinkScheme) + 2*(encodedLen+checkLen) + 1; len(s) > max {
		return Link{}, fmt.Errorf("%w: %d characters, at most %d", ErrBadLink, len(s), max)
	}
	s = strings.ToLower(s)
	rest, ok := strings.CutPrefix(s, LinkScheme)
	if !ok {
		return Link{}, fmt.Errorf("%w: does not start with %q", ErrBadLink, LinkScheme)
	}
	idText, keyText, hasKey := strings.Cut(rest, "#")
	var l Link
	if err := decodePart(l.ID[:], idText, idTag); err != nil {
		return Link{}, fmt.Errorf("%w: file id: %w", ErrBadLink, err)
	}
	if hasKey {
		l.Key = new(FileKey)
		if err := decodePart(l.Key[:], keyText, keyTag); err != nil {
			return Link{}, fmt.Errorf("%w: key: %w", ErrBadLink, err)
		}
	}
	return l, nil
}

// ParseID parses an id written by ID.String, or the id part of a link
// with its checksum (any letter case).
func ParseID(s string) (ID, error) {
	var id ID
	if err := decodePart(id[:], strings.ToLower(s), idTag); err != nil {
		return ID{}, fmt.Errorf("riffle: bad chunk id: %w", err)
	}
	return id, nil
}

// Each part of a link (id, key) ends in a checksum of checkLen characters:
// bech32m (BIP 350) over the part's base32 symbols, with the tag as its
// human-readable part. It detects every error in up to 4 characters of a
// part, and others but for one in 2^30, so that a mistyped link is refused
// at once instead of naming a file nobody shared (docs/proto-chunker.md).
const (
	checkLen = 6
	idTag    = "riffle"
	keyTag   = "riffle-key"
)

// ErrChecksum is wrapped by the error of a link part whose checksum does
// not match.
var ErrChecksum = errors.New("checksum does not match: a character is wrong, check the link")

// alphabet is b32's alphabet; a character's index is its 5-bit value.
const alphabet = "abcdefghijklmnopqrstuvwxyz234567"

// checked returns text (lowercase base32) followed by its checksum.
func checked(text, tag string) string {
	c := checksum(text, tag)
	return text + string(c[:])
}

// checksum computes the bech32m checksum of text under tag; text must be
// lowercase base32.
func checksum(text, tag string) [checkLen]byte {
	v := make([]byte, 0, 2*len(tag)+1+len(text)+checkLen)
	for i := 0; i < len(tag); i++ {
		v = append(v, tag[i]>>5)
	}
	v = append(v, 0)
	for i := 0; i < len(tag); i++ {
		v = append(v, tag[i]&31)
	}
	for i := 0; i < len(text); i++ {
		v = append(v, byte(strings.IndexByte(alphabet, text[i])))
	}
	v = append(v, make([]byte, checkLen)...)
	pm := polymod(v) ^ 0x2bc830a3 // the bech32m constant
	var out [checkLen]byte
	for i := range out {
		out[i] = alphabet[(pm>>(5*(checkLen-1-i)))&31]
	}
	return out
}

// polymod is BIP 173's BCH checksum over 5-bit values.
func polymod(v []byte) uint32 {
	gen := [5]uint32{0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3}
	chk := uint32(1)
	for _, x := range v {
		top := chk >> 25
		chk = (chk&0x1ffffff)<<5 ^ uint32(x)
		for i, g := range gen {
			if (top>>i)&1 == 1 {
				chk ^= g
			}
		}
	}
	return chk
}

// decodePart decodes one part of a link (or an id) into dst: 52
// characters and their checksum, or the 52 alone (written before links
// had checksums, read unchecked).
func decodePart(dst []byte, s, tag string) error {
	switch len(s) {
	case encodedLen + checkLen:
		for i := 0; i < len(s); i++ {
			if strings.IndexByte(alphabet, s[i]) < 0 {
				return fmt.Errorf("not base32: character %d", i+1)
			}
		}
		if c := checksum(s[:encodedLen], tag); string(c[:]) != s[encodedLen:] {
			return ErrChecksum
		}
		s = s[:encodedLen]
	case encodedLen:
	default:
		return fmt.Errorf("%d base32 characters, want %d: a character is missing or extra, check the link", len(s), encodedLen+checkLen)
	}
	return decode32(dst, s)
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
