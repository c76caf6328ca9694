package group

import (
	"crypto/sha512"
	"encoding/binary"
	"hash"
)

// Transcript is the SHA-512 transcript of §2: it starts with a domain
// tag ("riffle/v2/<purpose>", length-prefixed) and frames every
// variable-length field with a u32 big-endian length. Fixed-size fields
// (elements, scalars, digests, integers) carry no prefix, so that, given the
// tag, the input parses uniquely.
type Transcript struct{ h hash.Hash }

// NewTranscript starts a transcript under the given domain tag.
func NewTranscript(tag string) *Transcript {
	t := &Transcript{h: sha512.New()}
	t.Bytes([]byte(tag))
	return t
}

// Bytes appends a length-prefixed byte string.
func (t *Transcript) Bytes(b []byte) *Transcript {
	t.U32(uint32(len(b)))
	t.h.Write(b)
	return t
}

// Fixed appends bytes of a length fixed by the context, without a prefix.
func (t *Transcript) Fixed(b []byte) *Transcript {
	t.h.Write(b)
	return t
}

// U32 appends v big-endian.
func (t *Transcript) U32(v uint32) *Transcript {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	t.h.Write(b[:])
	return t
}

// U64 appends v big-endian.
func (t *Transcript) U64(v uint64) *Transcript {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	t.h.Write(b[:])
	return t
}

// Element appends ENC(e).
func (t *Transcript) Element(e *Element) *Transcript {
	t.h.Write(e.Bytes())
	return t
}

// Scalar appends SC(s).
func (t *Transcript) Scalar(s *Scalar) *Transcript {
	t.h.Write(s.Bytes())
	return t
}

// Ciphertext appends ENC(A) || ENC(B).
func (t *Transcript) Ciphertext(c Ciphertext) *Transcript { return t.Element(c.A).Element(c.B) }

// Sum returns the 64-byte digest so far; the transcript can go on.
func (t *Transcript) Sum() [64]byte {
	var out [64]byte
	t.h.Sum(out[:0])
	return out
}

// Challenge returns the digest reduced modulo ℓ (64 bytes: uniform).
func (t *Transcript) Challenge() *Scalar {
	d := t.Sum()
	s := NewScalar()
	if _, err := s.SetUniformBytes(d[:]); err != nil {
		panic(err)
	}
	return s
}
