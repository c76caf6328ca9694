package pir

import "crypto/subtle"

// The two inner loops of the engine. gatherXOR is where the time goes: for
// one query and one block of groups it XORs one table entry per group into
// the slices of w bytes of all the queries. xorBroadcast builds the tables. Each has a
// portable version here and, on amd64 with AVX-512, an assembly one
// (kernel_amd64.s) that keeps the accumulator in registers.

// gatherXORGeneric: for each query q < nq, its accumulator acc[q·w:(q+1)·w]
// ^= tab[j·tstride + idx[q·idxStride+j]·w :][:w] for each group j < n,
// starting from zero instead of the accumulator's bytes when init is set.
// Every index is below 2^g.
func gatherXORGeneric(acc []byte, nq int, tab []byte, tstride int, idx []byte, idxStride, n, g, w int, init bool) {
	for q := 0; q < nq; q++ {
		dst := acc[q*w : (q+1)*w]
		ix := idx[q*idxStride : q*idxStride+n]
		j := 0
		if init {
			o := int(ix[0]) * w
			copy(dst, tab[o:o+w])
			j = 1
		}
		for ; j < n; j++ {
			o := j*tstride + int(ix[j])*w
			subtle.XORBytes(dst, dst, tab[o:o+w])
		}
	}
}

// xorBroadcastGeneric: dst[x] = src[x] ^ row[x mod len(row)], for x < len(dst).
func xorBroadcastGeneric(dst, src, row []byte) {
	w := len(row)
	for x := 0; x < len(dst); x += w {
		subtle.XORBytes(dst[x:x+w], src[x:x+w], row)
	}
}
