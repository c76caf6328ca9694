// Package group wraps the prime-order group ristretto255 (RFC 9496) that the
// whole of riffle's public-key cryptography runs in (§2).
//
// It is deliberately small: strict decoders that reject non-canonical
// encodings (and, where asked, the identity), the independent generators of
// §2, random scalars from an injected reader, the domain-separated
// transcript hash used by every Fiat–Shamir challenge, the ElGamal ciphertext
// type and a parallel variable-time multi-scalar multiplication (Straus for
// small, Pippenger for large inputs) for verifiers. Secret-dependent code must use the constant-time calls of the
// underlying library (ScalarBaseMult, ScalarMult, MultiScalarMult) and never
// VarTimeMSM.
//
// The implementation is github.com/gtank/ristretto255 on
// filippo.io/edwards25519 (≥ v1.1.1: earlier versions did not initialise the
// receiver of MultiScalarMult, CVE-2026-26958). Every receiver here is made
// with NewIdentityElement.
//
// Library choice. gtank/ristretto255 v0.2.0 was compared with
// cloudflare/circl v1.6.5's group.Ristretto255 (which wraps
// bwesterb/go-ristretto) by circl_bench_test.go (build tag "circl";
// BenchmarkLibPaired alternates the libraries in bursts so that both see the
// same load on the shared 2-core machine), µs per operation, two runs:
//
//	operation              gtank        circl        circl/gtank
//	ScalarBaseMult         11.2–11.9    14.3–15.1    1.27
//	ScalarMult (CT)        38.4–42.6    48.5–52.9    1.25
//	decode (canonical)      3.2–3.4      4.0–4.6     1.23–1.34
//	encode                  3.1–3.2      3.6–3.9     1.14–1.28
//	VarTime MSM, 512 pts   12.3–13.3/pt  none: naive Σ Mul 49–51/pt
//
// Both compute the same k·G and k·P and reject non-canonical encodings, but
// circl offers no multi-scalar multiplication (constant-time or variable-
// time), which every proof here lives on, and is 14–34% slower on every
// single operation measured. gtank stays.
package group

import (
	"crypto/sha512"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/gtank/ristretto255"
)

// Element is a ristretto255 group element; Scalar an integer modulo ℓ.
type (
	Element = ristretto255.Element
	Scalar  = ristretto255.Scalar
)

// Sizes of the canonical encodings (RFC 9496).
const (
	ElementSize    = 32
	ScalarSize     = 32
	CiphertextSize = 2 * ElementSize
)

// Errors returned by the decoders.
var (
	ErrNonCanonical = errors.New("non-canonical encoding")
	ErrIdentity     = errors.New("identity element")
	ErrLength       = errors.New("wrong length")
)

// NewElement returns the identity element, the only safe zero value.
func NewElement() *Element { return ristretto255.NewIdentityElement() }

// NewScalar returns the scalar 0.
func NewScalar() *Scalar { return ristretto255.NewScalar() }

// Base returns a new copy of the canonical generator G.
func Base() *Element { return ristretto255.NewGeneratorElement() }

// DecodeElement decodes a canonical 32-byte encoding. The identity is allowed.
func DecodeElement(b []byte) (*Element, error) {
	if len(b) != ElementSize {
		return nil, fmt.Errorf("group element: %w: %d bytes, want %d", ErrLength, len(b), ElementSize)
	}
	e := NewElement()
	if _, err := e.SetCanonicalBytes(b); err != nil {
		return nil, fmt.Errorf("group element: %w", ErrNonCanonical)
	}
	return e, nil
}

// DecodeNonIdentity decodes a canonical encoding and rejects the identity, as
// §2 requires wherever a public key, a decrypted U or P, or a client's
// ciphertext component is expected.
func DecodeNonIdentity(b []byte) (*Element, error) {
	e, err := DecodeElement(b)
	if err != nil {
		return nil, err
	}
	if IsIdentity(e) {
		return nil, fmt.Errorf("group element: %w", ErrIdentity)
	}
	return e, nil
}

// IsIdentity reports whether e is the identity element.
func IsIdentity(e *Element) bool { return e.Equal(NewElement()) == 1 }

// DecodeScalar decodes a canonical 32-byte little-endian scalar (< ℓ).
func DecodeScalar(b []byte) (*Scalar, error) {
	if len(b) != ScalarSize {
		return nil, fmt.Errorf("scalar: %w: %d bytes, want %d", ErrLength, len(b), ScalarSize)
	}
	s := NewScalar()
	if _, err := s.SetCanonicalBytes(b); err != nil {
		return nil, fmt.Errorf("scalar: %w", ErrNonCanonical)
	}
	return s, nil
}

// RandomScalar draws a uniform scalar: 64 bytes from r reduced modulo ℓ.
func RandomScalar(r io.Reader) (*Scalar, error) {
	var buf [64]byte
	if _, err := io.ReadFull(r, buf[:]); err != nil {
		return nil, fmt.Errorf("random scalar: %w", err)
	}
	s := NewScalar()
	if _, err := s.SetUniformBytes(buf[:]); err != nil {
		return nil, err
	}
	clear(buf[:])
	return s, nil
}

// RandomWeight draws a uniform 128-bit scalar for batch verification: 16
// random bytes followed by 16 zero bytes.
func RandomWeight(r io.Reader) (*Scalar, error) {
	var buf [32]byte
	if _, err := io.ReadFull(r, buf[:16]); err != nil {
		return nil, fmt.Errorf("batch weight: %w", err)
	}
	s := NewScalar()
	if _, err := s.SetCanonicalBytes(buf[:]); err != nil {
		return nil, err
	}
	return s, nil
}

// ScalarFromUint64 returns v as a scalar.
func ScalarFromUint64(v uint64) *Scalar {
	var buf [32]byte
	binary.LittleEndian.PutUint64(buf[:], v)
	s := NewScalar()
	if _, err := s.SetCanonicalBytes(buf[:]); err != nil {
		panic(err) // unreachable: v < 2^64 < ℓ
	}
	return s
}

// GeneratorTag is the domain tag of the independent generators (§2).
const GeneratorTag = "riffle/v2/generator"

var gens struct {
	sync.Mutex
	list []*Element
}

// Generators returns the independent generators H_0 … H_{n-1} of §2:
// H_i = FromUniformBytes(SHA-512("riffle/v2/generator" || u32 i)). Nobody
// knows a discrete-log relation between them and G. The list is prefix-stable
// and cached; callers must not modify the returned elements.
func Generators(n int) []*Element {
	gens.Lock()
	defer gens.Unlock()
	for i := len(gens.list); i < n; i++ {
		gens.list = append(gens.list, DeriveGenerator(GeneratorTag, uint32(i)))
	}
	return gens.list[:n:n]
}

// DeriveGenerator returns FromUniformBytes(SHA-512(tag || u32 i)), the i-th
// generator under tag (uncached). Production code uses Generators; other tags
// exist only so that tests can show that a proof is bound to its generators.
func DeriveGenerator(tag string, i uint32) *Element {
	var ctr [4]byte
	binary.BigEndian.PutUint32(ctr[:], i)
	h := sha512.New()
	h.Write([]byte(tag))
	h.Write(ctr[:])
	e := NewElement()
	if _, err := e.SetUniformBytes(h.Sum(nil)); err != nil {
		panic(err) // unreachable: the digest is 64 bytes
	}
	if IsIdentity(e) {
		panic("group: generator is the identity") // probability ~2^-252
	}
	return e
}

// Ciphertext is an ElGamal ciphertext (A, B) = (ρ·G, M + ρ·Y).
type Ciphertext struct{ A, B *Element }

// Bytes returns ENC(A) || ENC(B).
func (c Ciphertext) Bytes() []byte { return c.Append(make([]byte, 0, CiphertextSize)) }

// Append appends ENC(A) || ENC(B) to dst.
func (c Ciphertext) Append(dst []byte) []byte {
	return append(append(dst, c.A.Bytes()...), c.B.Bytes()...)
}

// DecodeCiphertext decodes ENC(A) || ENC(B). With nonIdentity set, either
// component being the identity is an error (a client's ciphertext, §2).
func DecodeCiphertext(b []byte, nonIdentity bool) (Ciphertext, error) {
	if len(b) != CiphertextSize {
		return Ciphertext{}, fmt.Errorf("ciphertext: %w: %d bytes, want %d", ErrLength, len(b), CiphertextSize)
	}
	dec := DecodeElement
	if nonIdentity {
		dec = DecodeNonIdentity
	}
	a, err := dec(b[:ElementSize])
	if err != nil {
		return Ciphertext{}, fmt.Errorf("ciphertext A: %w", err)
	}
	bb, err := dec(b[ElementSize:])
	if err != nil {
		return Ciphertext{}, fmt.Errorf("ciphertext B: %w", err)
	}
	return Ciphertext{A: a, B: bb}, nil
}

// Equal reports whether two ciphertexts are the same pair of elements.
func (c Ciphertext) Equal(d Ciphertext) bool { return c.A.Equal(d.A) == 1 && c.B.Equal(d.B) == 1 }

// MSMChunk is the number of points per chunk of VarTimeMSMChunked. The
// underlying Straus MSM costs ~9 µs a point at 256–1024 points and nearly
// twice that at 16 384 (cache), so large Straus MSMs are split
// (docs/proto-shuffle.md §6.3).
const MSMChunk = 512

// Thresholds of VarTimeMSM. BenchmarkMSMPaired (both methods alternated in
// every iteration, all cores, loaded 2-core machine) measured chunked
// Straus / Pippenger at 256 points 8.8–12.4 / 10.9–12.6 µs per point, at
// 1024 points 1.5× slower for Straus, at 12 011 points (n = 1000, w = 2 in
// the shuffle verifier) 9.3–9.7 / 5.5 and at 50 000 points 4.7–7.2 /
// 2.6–3.6. Pippenger takes over at 512 points, where the two are even.
// Pippenger runs on pieces of at most pippengerMaxPoints so that its digit
// table (4·windows bytes per point) stays a few MB.
const (
	pippengerMinPoints = 512
	pippengerMaxPoints = 1 << 16
)

// VarTimeMSM returns Σ s_i·P_i in variable time: one Straus call below
// pippengerMinPoints, the bucket method on all cores above. Only for public
// scalars and points (verifiers).
func VarTimeMSM(s []*Scalar, p []*Element) *Element {
	if len(s) != len(p) {
		panic(fmt.Sprintf("group: VarTimeMSM length mismatch: %d scalars, %d points", len(s), len(p)))
	}
	if len(s) < pippengerMinPoints {
		return NewElement().VarTimeMultiScalarMult(s, p)
	}
	sum := NewElement()
	for lo := 0; lo < len(s); lo += pippengerMaxPoints {
		hi := min(lo+pippengerMaxPoints, len(s))
		sum.Add(sum, VarTimeMSMPippenger(s[lo:hi], p[lo:hi]))
	}
	return sum
}

// VarTimeMSMChunked returns Σ s_i·P_i in variable time with Straus MSMs over
// chunks of the given size (≥ 1) on all cores. VarTimeMSM is faster from 512
// points on; this one remains for tests of chunk boundaries and benchmarks.
func VarTimeMSMChunked(s []*Scalar, p []*Element, chunk int) *Element {
	if len(s) != len(p) {
		panic(fmt.Sprintf("group: VarTimeMSM length mismatch: %d scalars, %d points", len(s), len(p)))
	}
	if chunk < 1 {
		panic(fmt.Sprintf("group: VarTimeMSM chunk size %d", chunk))
	}
	n := len(s)
	if n <= chunk {
		return NewElement().VarTimeMultiScalarMult(s, p)
	}
	chunks := (n + chunk - 1) / chunk
	parts := make([]*Element, chunks)
	workers := min(runtime.GOMAXPROCS(0), chunks)
	var wg sync.WaitGroup
	next := make(chan int, chunks)
	for c := range chunks {
		next <- c
	}
	close(next)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range next {
				lo, hi := c*chunk, min((c+1)*chunk, n)
				parts[c] = NewElement().VarTimeMultiScalarMult(s[lo:hi], p[lo:hi])
			}
		}()
	}
	wg.Wait()
	sum := NewElement()
	for _, e := range parts {
		sum.Add(sum, e)
	}
	return sum
}
