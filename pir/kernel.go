package pir

import "crypto/subtle"

// The two inner loops of the engine. gatherXOR is where the time goes: for
// one query and one block of groups it XORs one table entry per group into
// the query's slice of w bytes. xorBroadcast builds the tables. Each has a
// portable version here and, on amd64 with AVX-512, an assembly one
// (kernel_amd64.s) that keeps the accumulator in registers.

// gatherXORGeneric: dst (w bytes) ^= tab[j·tstride + idx[j]·w :][:w] for each j,
// starting from zero instead of dst's bytes when init is set.
func gatherXORGeneric(dst, tab []byte, tstride int, idx []byte, w int, init bool) {
	j := 0
	if init {
		o := int(idx[0]) * w
		copy(dst, tab[o:o+w])
		j = 1
	}
	for ; j < len(idx); j++ {
		o := j*tstride + int(idx[j])*w
		subtle.XORBytes(dst, dst, tab[o:o+w])
	}
}

// xorBroadcastGeneric: dst[x] = src[x] ^ row[x mod len(row)], for x < len(dst).
func xorBroadcastGeneric(dst, src, row []byte) {
	w := len(row)
	for x := 0; x < len(dst); x += w {
		subtle.XORBytes(dst[x:x+w], src[x:x+w], row)
	}
}
