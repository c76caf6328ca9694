package chunker

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// tagSize is the GCM tag that every sealed segment and the sealed metadata
// carry.
const tagSize = 16

// nonceSize is the GCM nonce size.
const nonceSize = 12

// Domain tags of the two keys derived from a file key (§2 naming).
const (
	infoData = "riffle/v2/file-data"
	infoMeta = "riffle/v2/file-meta"
)

// ErrDecrypt is wrapped when a segment or the sealed metadata fails to
// open: a wrong key or tampered ciphertext.
var ErrDecrypt = errors.New("riffle: decryption failed (wrong key or tampered data)")

// fileCipher holds the two AEADs derived from one file key. The data key
// seals the segments, the metadata key seals the real name and media type,
// the manifest key seals the manifest chunks (sealed.go); being distinct
// keys, their nonces never collide.
type fileCipher struct {
	data, meta, man cipher.AEAD
}

func newFileCipher(k *FileKey) (*fileCipher, error) {
	dk, err := hkdf.Key(sha256.New, k[:], nil, infoData, 32)
	if err != nil {
		return nil, fmt.Errorf("derive data key: %w", err)
	}
	mk, err := hkdf.Key(sha256.New, k[:], nil, infoMeta, 32)
	if err != nil {
		return nil, fmt.Errorf("derive metadata key: %w", err)
	}
	nk, err := hkdf.Key(sha256.New, k[:], nil, infoManifest, 32)
	if err != nil {
		return nil, fmt.Errorf("derive manifest key: %w", err)
	}
	defer clear(dk)
	defer clear(mk)
	defer clear(nk)
	fc := &fileCipher{}
	if fc.data, err = newGCM(dk); err != nil {
		return nil, err
	}
	if fc.meta, err = newGCM(mk); err != nil {
		return nil, err
	}
	if fc.man, err = newGCM(nk); err != nil {
		return nil, err
	}
	return fc, nil
}

func newGCM(key []byte) (cipher.AEAD, error) {
	blk, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("aes key: %w", err)
	}
	g, err := cipher.NewGCM(blk)
	if err != nil {
		return nil, fmt.Errorf("gcm: %w", err)
	}
	return g, nil
}

// segmentNonce is the STREAM nonce of segment i: 3 zero bytes, u64 i
// big-endian, and a last-segment flag. A file key seals one file only, so
// no random prefix is needed; the flag stops truncation at a segment
// boundary and the counter stops reordering.
func segmentNonce(i uint64, last bool) [nonceSize]byte {
	var n [nonceSize]byte
	binary.BigEndian.PutUint64(n[3:11], i)
	if last {
		n[11] = 1
	}
	return n
}

// sealSegment appends segment i's ciphertext and tag to dst.
func (fc *fileCipher) sealSegment(dst, plain []byte, i uint64, last bool) []byte {
	n := segmentNonce(i, last)
	return fc.data.Seal(dst, n[:], plain, nil)
}

// openSegment appends segment i's plaintext to dst.
func (fc *fileCipher) openSegment(dst, ct []byte, i uint64, last bool) ([]byte, error) {
	n := segmentNonce(i, last)
	out, err := fc.data.Open(dst, n[:], ct, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: segment %d", ErrDecrypt, i)
	}
	return out, nil
}

// metaAD binds the sealed metadata to the public fields of its root, so
// that it cannot be moved to another manifest.
func metaAD(b int, size int64, n int) []byte {
	ad := make([]byte, 0, len(infoMeta)+16)
	ad = append(ad, infoMeta...)
	ad = binary.BigEndian.AppendUint32(ad, uint32(b))
	ad = binary.BigEndian.AppendUint64(ad, uint64(size))
	return binary.BigEndian.AppendUint32(ad, uint32(n))
}

// encodeMeta is the plaintext of the sealed metadata: u16 name length,
// name, u16 media type length, media type.
func encodeMeta(name, mediaType string) []byte {
	p := make([]byte, 0, 4+len(name)+len(mediaType))
	p = binary.BigEndian.AppendUint16(p, uint16(len(name)))
	p = append(p, name...)
	p = binary.BigEndian.AppendUint16(p, uint16(len(mediaType)))
	return append(p, mediaType...)
}

// decodeMeta parses and checks the plaintext of the sealed metadata. The
// creator of a link may be hostile: the hidden fields are checked as
// strictly as the public ones.
func decodeMeta(p []byte) (name, mediaType string, err error) {
	if len(p) > maxSealedMeta-tagSize {
		return "", "", fmt.Errorf("%w: sealed metadata of %d bytes, at most %d", ErrBadManifest, len(p), maxSealedMeta-tagSize)
	}
	r := &reader{b: p}
	name = string(r.take(r.u16("name length"), "name"))
	mediaType = string(r.take(r.u16("media type length"), "media type"))
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%d trailing bytes", len(r.b))
	}
	if r.err != nil {
		return "", "", fmt.Errorf("%w: sealed metadata: %w", ErrBadManifest, r.err)
	}
	if len(name) > MaxNameBytes || SanitizeName(name) != name {
		return "", "", fmt.Errorf("%w: sealed name %q is not a safe file name", ErrBadManifest, name)
	}
	if NormalizeMediaType(mediaType) != mediaType {
		return "", "", fmt.Errorf("%w: sealed media type %q is not canonical", ErrBadManifest, mediaType)
	}
	return name, mediaType, nil
}

// sealMeta seals the real name and media type (both already canonical).
// The metadata key seals exactly one message, so the nonce is zero.
func (fc *fileCipher) sealMeta(name, mediaType string, b int, size int64, n int) []byte {
	var nonce [nonceSize]byte
	return fc.meta.Seal(nil, nonce[:], encodeMeta(name, mediaType), metaAD(b, size, n))
}

// openMeta opens and checks the sealed metadata of root m.
func (fc *fileCipher) openMeta(m *Manifest) (name, mediaType string, err error) {
	var nonce [nonceSize]byte
	p, err := fc.meta.Open(nil, nonce[:], m.SealedMeta, metaAD(m.ChunkSize, m.Size, m.NumChunks))
	if err != nil {
		return "", "", fmt.Errorf("%w: sealed metadata", ErrDecrypt)
	}
	return decodeMeta(p)
}
