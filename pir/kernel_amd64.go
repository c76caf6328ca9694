//go:build amd64 && !purego

package pir

import "golang.org/x/sys/cpu"

// useAVX512 selects the assembly kernels; the tests switch it off to check
// the portable ones too.
var useAVX512 = cpu.X86.HasAVX512F

// gatherXORAVX512 is gatherXOR for w a multiple of 64 (kernel_amd64.s).
//
//go:noescape
func gatherXORAVX512(dst, tab, idx *byte, n, w, tstride int, init bool)

// xorBroadcastAVX512 is xorBroadcast for len(row) a multiple of 64 and
// len(dst) a multiple of len(row).
//
//go:noescape
func xorBroadcastAVX512(dst, src, row *byte, n, w int)

func gatherXOR(dst, tab []byte, tstride int, idx []byte, w int, init bool) {
	n := len(idx)
	if !useAVX512 || n == 0 || w == 0 || w%64 != 0 || len(dst) < w {
		gatherXORGeneric(dst, tab, tstride, idx, w, init)
		return
	}
	// The assembly does no bounds checks: check once per call that every
	// selected entry lies in tab (cheap: n is a handful of groups).
	if len(tab) < (n-1)*tstride+256*w && !idxFits(tab, tstride, idx, w) {
		panic("pir: gatherXOR table index out of range")
	}
	gatherXORAVX512(&dst[0], &tab[0], &idx[0], n, w, tstride, init)
}

// idxFits reports whether every entry that idx selects lies inside tab.
func idxFits(tab []byte, tstride int, idx []byte, w int) bool {
	for j, v := range idx {
		if j*tstride+(int(v)+1)*w > len(tab) {
			return false
		}
	}
	return true
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
