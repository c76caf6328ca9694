package shuffle

import (
	"errors"
	"fmt"

	"github.com/riffle-net/riffle/internal/group"
)

// Caps on the statement, checked before anything is allocated from n or w
// (docs/proto-shuffle.md §5.1 item 1).
const (
	// MaxN bounds the number of vectors (clients of one epoch).
	MaxN = 1 << 20
	// MaxW bounds the width (m+1 components for m servers).
	MaxW = 256
	// MaxNW bounds n·w: 2^22 ciphertexts are 256 MiB of inputs and outputs.
	MaxNW = 1 << 22
	// MaxContext bounds the caller's context string (epoch id || u32 s ||
	// step name in riffle).
	MaxContext = 1024
)

// Errors. Every error returned by this package wraps one of them.
var (
	// ErrStatement: the statement is malformed (shape, caps, nil or identity
	// keys). Nothing was checked cryptographically.
	ErrStatement = errors.New("invalid shuffle statement")
	// ErrWitness: the witness does not fit the statement.
	ErrWitness = errors.New("invalid shuffle witness")
	// ErrProofEncoding: the proof bytes do not parse (length, header,
	// non-canonical or forbidden identity points, non-canonical scalars).
	ErrProofEncoding = errors.New("malformed shuffle proof")
	// ErrProofInvalid: the proof parsed but does not verify.
	ErrProofInvalid = errors.New("shuffle proof does not verify")
)

// Statement is the public statement of one shuffle: Outputs[i][j] re-encrypts
// Inputs[π(i)][j] under Keys[j] for a secret permutation π. The caller
// supplies Context, which must name this shuffle uniquely (riffle: epoch id ||
// u32 s || step name) so that no proof is valid for another server or epoch.
type Statement struct {
	Context []byte
	Keys    []*group.Element     // w component keys, none the identity
	Inputs  [][]group.Ciphertext // n × w
	Outputs [][]group.Ciphertext // n × w

	// InputsEnc and OutputsEnc optionally hold the canonical encodings of
	// Inputs and Outputs, one slice of w·64 bytes per vector (ENC(A) ‖
	// ENC(B) per component), for a caller that already has them (decoded
	// from, or encoded for, the wire): σ then hashes them instead of
	// encoding every element again. The caller vouches that they encode
	// exactly Inputs and Outputs. A list of the wrong shape is ignored.
	InputsEnc, OutputsEnc [][]byte
}

// checkShape validates the shape of keys and one n×w ciphertext list. It
// returns n and w.
func checkShape(keys []*group.Element, lists ...[][]group.Ciphertext) (n, w int, err error) {
	n, w = len(lists[0]), len(keys)
	if n < 1 || n > MaxN {
		return 0, 0, fmt.Errorf("%w: n = %d vectors, want 1..%d", ErrStatement, n, MaxN)
	}
	if w < 1 || w > MaxW {
		return 0, 0, fmt.Errorf("%w: w = %d keys, want 1..%d", ErrStatement, w, MaxW)
	}
	if n*w > MaxNW { // no overflow: n ≤ 2^20, w ≤ 2^8
		return 0, 0, fmt.Errorf("%w: n·w = %d·%d exceeds %d", ErrStatement, n, w, MaxNW)
	}
	for j, y := range keys {
		if y == nil {
			return 0, 0, fmt.Errorf("%w: key %d is nil", ErrStatement, j)
		}
		// An identity key makes the encryption plaintext-revealing.
		if group.IsIdentity(y) {
			return 0, 0, fmt.Errorf("%w: key %d is the identity", ErrStatement, j)
		}
	}
	for l, list := range lists {
		if len(list) != n {
			return 0, 0, fmt.Errorf("%w: list %d has %d vectors, want %d", ErrStatement, l, len(list), n)
		}
		for i, row := range list {
			if len(row) != w {
				return 0, 0, fmt.Errorf("%w: list %d vector %d has %d components, want %d", ErrStatement, l, i, len(row), w)
			}
			for j, ct := range row {
				// Identity components are legitimate (§5.1 item 4); nil is a bug.
				if ct.A == nil || ct.B == nil {
					return 0, 0, fmt.Errorf("%w: list %d vector %d component %d is nil", ErrStatement, l, i, j)
				}
			}
		}
	}
	return n, w, nil
}

// check validates the whole statement (docs/proto-shuffle.md §5.1 item 1 and the
// key rule of item 4). Points are already canonical: they are decoded
// elements, and every decoder in group is strict.
func (st *Statement) check() (n, w int, err error) {
	if st == nil {
		return 0, 0, fmt.Errorf("%w: nil", ErrStatement)
	}
	if len(st.Context) > MaxContext {
		return 0, 0, fmt.Errorf("%w: context of %d bytes exceeds %d", ErrStatement, len(st.Context), MaxContext)
	}
	return checkShape(st.Keys, st.Inputs, st.Outputs)
}
