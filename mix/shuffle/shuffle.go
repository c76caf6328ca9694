package shuffle

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/riffle-net/riffle/internal/group"
)

// Witness is the secret of one shuffle. Pi[i] is the input position of output
// i (output i re-encrypts input Pi[i]); R[i][j] is the re-encryption scalar of
// output i, component j. §8's blame needs both until the epoch's end:
// keep the witness in memory only, and Close it then.
type Witness struct {
	Pi []int
	R  [][]*group.Scalar
}

// Close zeroises the witness.
func (wit *Witness) Close() {
	if wit == nil {
		return
	}
	for _, row := range wit.R {
		for _, r := range row {
			if r != nil {
				r.Zero()
			}
		}
	}
	clear(wit.Pi)
	wit.Pi, wit.R = nil, nil
}

// InputToOutput returns §4.2's π_s: input position p → output position
// π_s(p), the inverse of Pi.
func (wit *Witness) InputToOutput() ([]int, error) { return Invert(wit.Pi) }

// Invert returns the inverse of a permutation of {0 … len(perm)-1}: the one
// conversion between this package's Pi (output → input) and §4.2's π_s
// (input → output), in either direction.
func Invert(perm []int) ([]int, error) {
	inv := make([]int, len(perm))
	seen := make([]bool, len(perm))
	for i, p := range perm {
		if p < 0 || p >= len(perm) || seen[p] {
			return nil, fmt.Errorf("%w: entry %d = %d is not a permutation of 0..%d", ErrWitness, i, p, len(perm)-1)
		}
		seen[p] = true
		inv[p] = i
	}
	return inv, nil
}

// randBlock is how many 64-bit words the permutation sampler reads at once.
const randBlock = 256

// uniformPermutation draws a uniform permutation of {0..n-1}: Fisher–Yates
// with unbiased indices (rejection sampling of 64-bit words, never x mod k
// alone).
func uniformPermutation(n int, rand io.Reader) ([]int, error) {
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	var buf [8 * randBlock]byte
	pos := len(buf)
	next := func() (uint64, error) {
		if pos == len(buf) {
			if _, err := io.ReadFull(rand, buf[:]); err != nil {
				return 0, fmt.Errorf("shuffle: permutation randomness: %w", err)
			}
			pos = 0
		}
		v := binary.BigEndian.Uint64(buf[pos:])
		pos += 8
		return v, nil
	}
	for i := n - 1; i > 0; i-- {
		bound := uint64(i + 1)
		// Accept v < limit, the largest multiple of bound ≤ 2^64, so that
		// v mod bound is uniform.
		limit := math.MaxUint64 - (math.MaxUint64%bound+1)%bound
		var v uint64
		for {
			var err error
			if v, err = next(); err != nil {
				return nil, err
			}
			if v <= limit {
				break
			}
		}
		j := int(v % bound)
		perm[i], perm[j] = perm[j], perm[i]
	}
	clear(buf[:])
	return perm, nil
}

// Shuffle draws a uniform permutation π and fresh scalars r'_ij (all from
// rand, crypto/rand in production), and returns outputs[i][j] =
// (A + r'_ij·G, B + r'_ij·Y_j) for (A, B) = inputs[π(i)][j], with the witness.
// It uses constant-time group operations only, on all cores.
func Shuffle(keys []*group.Element, inputs [][]group.Ciphertext, rand io.Reader) ([][]group.Ciphertext, *Witness, error) {
	n, w, err := checkShape(keys, inputs)
	if err != nil {
		return nil, nil, err
	}
	pi, err := uniformPermutation(n, rand)
	if err != nil {
		return nil, nil, err
	}
	wit := &Witness{Pi: pi, R: make([][]*group.Scalar, n)}
	for i := range n {
		wit.R[i] = make([]*group.Scalar, w)
		for j := range w {
			if wit.R[i][j], err = group.RandomScalar(rand); err != nil {
				wit.Close()
				return nil, nil, fmt.Errorf("shuffle: re-encryption scalar: %w", err)
			}
		}
	}
	out := make([][]group.Ciphertext, n)
	parallelRange(n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			src := inputs[pi[i]]
			row := make([]group.Ciphertext, w)
			for j := range w {
				r := wit.R[i][j]
				a := group.NewElement().ScalarBaseMult(r)
				b := group.NewElement().ScalarMult(r, keys[j])
				row[j] = group.Ciphertext{A: a.Add(a, src[j].A), B: b.Add(b, src[j].B)}
			}
			out[i] = row
		}
	})
	return out, wit, nil
}
