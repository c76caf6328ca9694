package mix

import (
	"sync"

	"github.com/riffle-net/riffle/internal/group"
)

// Setup hashes every ciphertext it proves or verifies (the shuffle's σ, the
// batched DLEQ's digest), and an encoding costs about an inversion. The
// vectors a step hashes were, a moment before, decoded from the wire
// (ParseRegistration, ParseStepResult) or encoded for it (SetupStep): this
// file keeps those bytes with the elements they encode, so that no element
// of setup is encoded twice. A kept encoding is used only for the very
// element objects it was made from (compared by pointer, the objects held
// alive by the record), and the package never modifies a published
// element, so the bytes hashed are always the canonical encoding of the
// elements checked.

// encoded is the canonical encoding of a list of elements, with the
// elements it was made from.
type encoded struct {
	elems []*group.Element
	enc   []byte // len(elems) × 32
}

// of reports whether e encodes exactly list (the same objects in order).
func (e *encoded) of(list []*group.Element) bool {
	if e == nil || len(e.elems) != len(list) {
		return false
	}
	for i, p := range list {
		if e.elems[i] != p {
			return false
		}
	}
	return true
}

// encodeList returns the canonical encoding of list, reusing e if it
// encodes exactly list.
func (e *encoded) encodeList(list []*group.Element) []byte {
	if e.of(list) {
		return e.enc
	}
	return encodeAll(list)
}

// flatVectors lists A, B of every component of every vector, in order: the
// order of their encodings ENC(A) ‖ ENC(B) on the wire and in transcripts.
func flatVectors(vs [][]group.Ciphertext) []*group.Element {
	n := 0
	for _, v := range vs {
		n += 2 * len(v)
	}
	flat := make([]*group.Element, 0, n)
	for _, v := range vs {
		for _, ct := range v {
			flat = append(flat, ct.A, ct.B)
		}
	}
	return flat
}

// vectorMemo keeps the encodings of the last few vector lists this package
// handed out (InitialVectors, StepResult.Next), which are the next step's
// inputs. It holds at most vectorMemoSize lists (a few MiB each at
// n = 10,000), evicting the oldest: with m servers in one process (tests,
// benchmarks), each keeps its own.
var vectorMemo struct {
	sync.Mutex
	ring [vectorMemoSize]*encoded
	next int
}

const vectorMemoSize = 8

func rememberVectors(vs [][]group.Ciphertext, enc []byte) {
	e := &encoded{elems: flatVectors(vs), enc: enc}
	vectorMemo.Lock()
	defer vectorMemo.Unlock()
	vectorMemo.ring[vectorMemo.next] = e
	vectorMemo.next = (vectorMemo.next + 1) % vectorMemoSize
}

// encodeVectors returns ENC(A) ‖ ENC(B) of every component of every
// vector, in order: remembered bytes if this package handed out exactly
// these vectors, else encoded now, on all cores.
func encodeVectors(vs [][]group.Ciphertext) []byte {
	flat := flatVectors(vs)
	vectorMemo.Lock()
	for _, e := range vectorMemo.ring {
		if e.of(flat) {
			vectorMemo.Unlock()
			return e.enc
		}
	}
	vectorMemo.Unlock()
	enc := encodeAll(flat)
	rememberVectors(vs, enc) // for the other checks of the same step here
	return enc
}

// vectorRows splits an encoding of n vectors of width w into rows, each
// without its first skip components.
func vectorRows(enc []byte, n, w, skip int) [][]byte {
	rows := make([][]byte, n)
	rb := w * group.CiphertextSize
	for p := range rows {
		rows[p] = enc[p*rb+skip*group.CiphertextSize : (p+1)*rb : (p+1)*rb]
	}
	return rows
}
