package shuffle

import (
	"runtime"
	"sync"

	"github.com/riffle-net/riffle/internal/group"
)

// Domain tags of the Fiat–Shamir transcript (docs/proto-shuffle.md §3.2, with the
// project prefix). Each is distinct; the generator tag is group.GeneratorTag.
const (
	tagStatement = "riffle/v2/shuffle/statement"
	tagSeed      = "riffle/v2/shuffle/u-seed"
	tagU         = "riffle/v2/shuffle/u"
	tagC         = "riffle/v2/shuffle/c"
)

// digestSize is the size of σ and η (SHA-512).
const digestSize = 64

// suite names the generator set. Production always uses defaultSuite; tests
// swap it to show that a proof is bound to its generators (BIND-5).
type suite struct {
	genTag string
	gens   func(k int) []*group.Element // H_0 … H_{k-1}
}

var defaultSuite = suite{genTag: group.GeneratorTag, gens: group.Generators}

// encodeRowsBlock is how many vectors are encoded per parallel block before
// being fed to the hash: large enough to amortise goroutine start-up, small
// enough to keep the buffer in cache.
const encodeRowsBlock = 256

// hashCiphertexts feeds ENC(A_ij) || ENC(B_ij), vector by vector, to t. The
// encodings (≈3 µs each) are computed on all cores; the hash stays serial.
func hashCiphertexts(t *group.Transcript, rows [][]group.Ciphertext, enc [][]byte, w int) {
	rowBytes := w * group.CiphertextSize
	if encodedRows(enc, len(rows), rowBytes) {
		for _, r := range enc {
			t.Fixed(r)
		}
		return
	}
	buf := make([]byte, encodeRowsBlock*rowBytes)
	for lo := 0; lo < len(rows); lo += encodeRowsBlock {
		hi := min(lo+encodeRowsBlock, len(rows))
		parallelRange(hi-lo, func(a, b int) {
			for i := a; i < b; i++ {
				dst := buf[i*rowBytes : i*rowBytes : (i+1)*rowBytes]
				for _, ct := range rows[lo+i] {
					dst = ct.Append(dst)
				}
			}
		})
		t.Fixed(buf[:(hi-lo)*rowBytes])
	}
}

// encodedRows reports whether enc has n rows of rowBytes bytes each.
func encodedRows(enc [][]byte, n, rowBytes int) bool {
	if len(enc) != n {
		return false
	}
	for _, r := range enc {
		if len(r) != rowBytes {
			return false
		}
	}
	return true
}

// statementDigest is σ = H(tag_stmt; LP(generator tag) || LP(context) ||
// u32 n || u32 w || keys || inputs || outputs) (§3.3).
func statementDigest(st *Statement, s suite, n, w int) [digestSize]byte {
	t := group.NewTranscript(tagStatement)
	t.Bytes([]byte(s.genTag))
	t.Bytes(st.Context)
	t.U32(uint32(n)).U32(uint32(w))
	for _, y := range st.Keys {
		t.Element(y)
	}
	hashCiphertexts(t, st.Inputs, st.InputsEnc, w)
	hashCiphertexts(t, st.Outputs, st.OutputsEnc, w)
	return t.Sum()
}

// challengeVector returns η = H(tag_seed; σ || u32 n || ENC(C_1..C_n)) and
// u_i = Reduce(H(tag_u; η || u32 i)) for i = 1..n (§3.4). encC holds the n
// canonical encodings of the C_k, as published.
func challengeVector(sigma [digestSize]byte, n int, encC []byte) ([digestSize]byte, []*group.Scalar) {
	eta := group.NewTranscript(tagSeed).Fixed(sigma[:]).U32(uint32(n)).Fixed(encC).Sum()
	u := make([]*group.Scalar, n)
	parallelRange(n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			u[i] = group.NewTranscript(tagU).Fixed(eta[:]).U32(uint32(i + 1)).Challenge()
		}
	})
	return eta, u
}

// challenge returns c = Reduce(H(tag_c; η || u32 n || ENC(Ĉ_1..n) || ENC(T_1,
// T_2, T_3) || u32 w || ENC(T_4A,1..w) || ENC(T_4B,1..w) || u32 n ||
// ENC(T̂_1..n))) (§3.5), reading the encodings from the proof bytes, whose
// layout keeps these fields contiguous and in this order.
func challenge(eta [digestSize]byte, n, w int, enc []byte) *group.Scalar {
	l := newLayout(n, w)
	t := group.NewTranscript(tagC).Fixed(eta[:])
	t.U32(uint32(n)).Fixed(enc[l.cHat:l.t123])
	t.Fixed(enc[l.t123:l.t4a])
	t.U32(uint32(w)).Fixed(enc[l.t4a:l.tHat])
	t.U32(uint32(n)).Fixed(enc[l.tHat:l.s123])
	return t.Challenge()
}

// parallelRange calls f on contiguous sub-ranges of [0, n) on all cores.
func parallelRange(n int, f func(lo, hi int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	for k := range workers {
		lo, hi := k*n/workers, (k+1)*n/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(lo, hi)
		}()
	}
	wg.Wait()
}
