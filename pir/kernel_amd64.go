//go:build amd64 && !purego

package pir

import "golang.org/x/sys/cpu"

// useAVX512 selects the assembly kernels; the tests switch it off to check
// the portable ones too.
var useAVX512 = cpu.X86.HasAVX512F

// gatherXORAVX512 is gatherXOR for w a multiple of 64 (kernel_amd64.s).
//
//go:noescape
func gatherXORAVX512(acc, tab, idx *byte, nq, idxStride, n, w, tstride int, init bool)

// xorBroadcastAVX512 is xorBroadcast for len(row) a multiple of 64 and
// len(dst) a multiple of len(row).
//
//go:noescape
func xorBroadcastAVX512(dst, src, row *byte, n, w int)

func gatherXOR(acc []byte, nq int, tab []byte, tstride int, idx []byte, idxStride, n, g, w int, init bool) {
	if !useAVX512 || w%64 != 0 {
		gatherXORGeneric(acc, nq, tab, tstride, idx, idxStride, n, g, w, init)
		return
	}
	// The assembly does no bounds checks: check the extent of every
	// argument once per call. Entries stay inside their table because every
	// index is below 2^g (the engine builds them so).
	if nq < 1 || n < 1 || g < 1 || g > 8 || tstride < w<<g || len(acc) < nq*w ||
		len(idx) < (nq-1)*idxStride+n || len(tab) < (n-1)*tstride+w<<g {
		panic("pir: gatherXOR arguments out of bounds")
	}
	gatherXORAVX512(&acc[0], &tab[0], &idx[0], nq, idxStride, n, w, tstride, init)
}

func xorBroadcast(dst, src, row []byte) {
	w := len(row)
	if !useAVX512 || w == 0 || w%64 != 0 || len(dst)%w != 0 || len(src) < len(dst) {
		xorBroadcastGeneric(dst, src, row)
		return
	}
	xorBroadcastAVX512(&dst[0], &src[0], &row[0], len(dst)/w, w)
}

// kernelName names the inner loops in use, for logs and benchmarks.
func kernelName() string {
	if useAVX512 {
		return "avx512"
	}
	return "generic"
}
