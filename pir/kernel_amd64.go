//go:build amd64 && !purego

package pir

import "golang.org/x/sys/cpu"

// The kernel level in use: the AVX-512 assembly where the CPU has it, else
// the AVX2 one for gatherXOR (table building, a small share of the time,
// stays portable there), else the portable Go. The tests lower it to check
// every path on one machine.
const (
	levelGeneric = iota
	levelAVX2
	levelAVX512
)

var kernelLevel = func() int {
	switch {
	case cpu.X86.HasAVX512F:
		return levelAVX512
	case cpu.X86.HasAVX2:
		return levelAVX2
	}
	return levelGeneric
}()

// gatherXORAVX512 is gatherXOR for w a multiple of 64 (kernel_amd64.s).
//
//go:noescape
func gatherXORAVX512(acc, tab, idx *byte, nq, idxStride, n, w, tstride int, init bool)

// gatherXORAVX2 is gatherXOR for w a multiple of 64 (kernel_avx2_amd64.s).
//
//go:noescape
func gatherXORAVX2(acc, tab, idx *byte, nq, idxStride, n, w, tstride int, init bool)

// xorBroadcastAVX512 is xorBroadcast for len(row) a multiple of 64 and
// len(dst) a multiple of len(row).
//
//go:noescape
func xorBroadcastAVX512(dst, src, row *byte, n, w int)

func gatherXOR(acc []byte, nq int, tab []byte, tstride int, idx []byte, idxStride, n, g, w int, init bool) {
	level := kernelLevel
	if level == levelGeneric || w%64 != 0 {
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
	if level == levelAVX512 {
		gatherXORAVX512(&acc[0], &tab[0], &idx[0], nq, idxStride, n, w, tstride, init)
	} else {
		gatherXORAVX2(&acc[0], &tab[0], &idx[0], nq, idxStride, n, w, tstride, init)
	}
}

func xorBroadcast(dst, src, row []byte) {
	w := len(row)
	if kernelLevel != levelAVX512 || w == 0 || w%64 != 0 || len(dst)%w != 0 || len(src) < len(dst) {
		xorBroadcastGeneric(dst, src, row)
		return
	}
	xorBroadcastAVX512(&dst[0], &src[0], &row[0], len(dst)/w, w)
}

// kernelName names the inner loops in use, for logs and benchmarks.
func kernelName() string {
	return [...]string{levelGeneric: "generic", levelAVX2: "avx2", levelAVX512: "avx512"}[kernelLevel]
}
