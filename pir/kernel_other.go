//go:build !amd64 || purego

package pir

func gatherXOR(acc []byte, nq int, tab []byte, tstride int, idx []byte, idxStride, n, g, w int, init bool) {
	gatherXORGeneric(acc, nq, tab, tstride, idx, idxStride, n, g, w, init)
}

func xorBroadcast(dst, src, row []byte) { xorBroadcastGeneric(dst, src, row) }

// kernelName names the inner loops in use, for logs and benchmarks.
func kernelName() string { return "generic" }
