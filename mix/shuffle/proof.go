package shuffle

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/riffle-net/riffle/internal/group"
)

// headerSize is the proof header: u32 n || u32 w, big-endian.
const headerSize = 8

// Proof is a shuffle proof in commitment form (docs/proto-shuffle.md §4.3). It is
// immutable: it is made by Prove or Parse and keeps its canonical encoding,
// which the verifier hashes as received (no re-encoding).
type Proof struct {
	n, w int

	c, cHat    []*group.Element // C_k, Ĉ_i: n each, never the identity
	t1, t2, t3 *group.Element
	t4a, t4b   []*group.Element // w each
	tHat       []*group.Element // n
	s1, s2, s3 *group.Scalar
	s4         []*group.Scalar // w
	sHat, sPr  []*group.Scalar // ŝ_i, s'_i: n each

	enc []byte // the wire encoding of all of the above
}

// layout holds the byte offsets of the proof's fields.
type layout struct {
	c, cHat, t123, t4a, t4b, tHat, s123, s4, sHat, sPr, end int
}

func newLayout(n, w int) layout {
	const e, s = group.ElementSize, group.ScalarSize
	var l layout
	l.c = headerSize
	l.cHat = l.c + n*e
	l.t123 = l.cHat + n*e
	l.t4a = l.t123 + 3*e
	l.t4b = l.t4a + w*e
	l.tHat = l.t4b + w*e
	l.s123 = l.tHat + n*e
	l.s4 = l.s123 + 3*s
	l.sHat = l.s4 + w*s
	l.sPr = l.sHat + n*s
	l.end = l.sPr + n*s
	return l
}

// ProofSize returns the encoded size of a proof for n vectors of width w:
// 8 + 32·(5n + 3w + 6) bytes (3n + 2w + 3 points, 2n + w + 3 scalars). It
// returns -1 if n or w is out of range.
func ProofSize(n, w int) int {
	if n < 1 || n > MaxN || w < 1 || w > MaxW || n*w > MaxNW {
		return -1
	}
	return headerSize + group.ElementSize*(3*n+2*w+3) + group.ScalarSize*(2*n+w+3)
}

// MarshalBinary returns the proof's wire encoding (docs/proto-shuffle.md).
func (p *Proof) MarshalBinary() ([]byte, error) {
	if p == nil || p.enc == nil {
		return nil, errors.New("shuffle: marshal of an empty proof")
	}
	return append([]byte(nil), p.enc...), nil
}

// N and W return the proof's dimensions.
func (p *Proof) N() int { return p.n }

// W returns the proof's width.
func (p *Proof) W() int { return p.w }

// points returns every point of the proof in wire order.
func (p *Proof) points() []*group.Element {
	out := make([]*group.Element, 0, 3*p.n+2*p.w+3)
	out = append(out, p.c...)
	out = append(out, p.cHat...)
	out = append(out, p.t1, p.t2, p.t3)
	out = append(out, p.t4a...)
	out = append(out, p.t4b...)
	return append(out, p.tHat...)
}

// scalars returns every scalar of the proof in wire order.
func (p *Proof) scalars() []*group.Scalar {
	out := make([]*group.Scalar, 0, 2*p.n+p.w+3)
	out = append(out, p.s1, p.s2, p.s3)
	out = append(out, p.s4...)
	out = append(out, p.sHat...)
	return append(out, p.sPr...)
}

// encode fills p.enc from the fields.
func (p *Proof) encode() {
	p.enc = make([]byte, newLayout(p.n, p.w).end)
	p.encodePoints(0)
	p.encodeScalars()
}

// encodePoints writes the header and the points from index from (in wire
// order) into p.enc, on all cores.
func (p *Proof) encodePoints(from int) {
	binary.BigEndian.PutUint32(p.enc[0:], uint32(p.n))
	binary.BigEndian.PutUint32(p.enc[4:], uint32(p.w))
	pts := p.points()[from:]
	parallelRange(len(pts), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			off := headerSize + (from+i)*group.ElementSize
			copy(p.enc[off:], pts[i].Bytes())
		}
	})
}

// encodeScalars writes the scalars into p.enc.
func (p *Proof) encodeScalars() {
	off := newLayout(p.n, p.w).s123
	for _, s := range p.scalars() {
		copy(p.enc[off:], s.Bytes())
		off += group.ScalarSize
	}
}

// Parse decodes a proof for a statement of n vectors of width w, taken from
// the statement and never from the proof (docs/proto-shuffle.md §5.1 items 2–5):
// exact length, header equal to (n, w), every point canonical, C_k and Ĉ_i
// not the identity, every scalar canonical (< ℓ).
func Parse(b []byte, n, w int) (*Proof, error) {
	size := ProofSize(n, w)
	if size < 0 {
		return nil, fmt.Errorf("%w: shape n = %d, w = %d out of range", ErrProofEncoding, n, w)
	}
	if len(b) != size {
		return nil, fmt.Errorf("%w: %d bytes, want %d for n = %d, w = %d", ErrProofEncoding, len(b), size, n, w)
	}
	hn, hw := binary.BigEndian.Uint32(b[0:]), binary.BigEndian.Uint32(b[4:])
	if uint64(hn) != uint64(n) || uint64(hw) != uint64(w) {
		return nil, fmt.Errorf("%w: header n = %d, w = %d, statement n = %d, w = %d", ErrProofEncoding, hn, hw, n, w)
	}
	l := newLayout(n, w)
	np := 3*n + 2*w + 3
	pts := make([]*group.Element, np)
	errs := make([]error, np)
	parallelRange(np, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			off := headerSize + i*group.ElementSize
			pts[i], errs[i] = group.DecodeElement(b[off : off+group.ElementSize])
		}
	})
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("%w: point %d: %w", ErrProofEncoding, i, err)
		}
	}
	p := &Proof{n: n, w: w}
	p.c, pts = pts[:n:n], pts[n:]
	p.cHat, pts = pts[:n:n], pts[n:]
	p.t1, p.t2, p.t3, pts = pts[0], pts[1], pts[2], pts[3:]
	p.t4a, pts = pts[:w:w], pts[w:]
	p.t4b, pts = pts[:w:w], pts[w:]
	p.tHat = pts
	// Defence in depth (§5.1 item 4): an honest prover makes the identity
	// here with probability 2^-252, and every verifier must decide alike.
	for k := range n {
		if group.IsIdentity(p.c[k]) {
			return nil, fmt.Errorf("%w: C_%d is the identity", ErrProofEncoding, k+1)
		}
		if group.IsIdentity(p.cHat[k]) {
			return nil, fmt.Errorf("%w: Ĉ_%d is the identity", ErrProofEncoding, k+1)
		}
	}
	ns := 2*n + w + 3
	sc := make([]*group.Scalar, ns)
	for i := range ns {
		off := l.s123 + i*group.ScalarSize
		s, err := group.DecodeScalar(b[off : off+group.ScalarSize])
		if err != nil {
			return nil, fmt.Errorf("%w: scalar %d: %w", ErrProofEncoding, i, err)
		}
		sc[i] = s
	}
	p.s1, p.s2, p.s3, sc = sc[0], sc[1], sc[2], sc[3:]
	p.s4, sc = sc[:w:w], sc[w:]
	p.sHat, p.sPr = sc[:n:n], sc[n:]
	p.enc = append([]byte(nil), b...)
	return p, nil
}
