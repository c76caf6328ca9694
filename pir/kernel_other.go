//go:build !amd64 || purego

package pir

func gatherXOR(dst, tab []byte, tstride int, idx []byte, w int, init bool) {
	gatherXORGeneric(dst, tab, tstride, idx, w, init)
}

func xorBroadcast(dst, src, row []byte) { xorBroadcastGeneric(dst, src, row) }

// kernelName names the inner loops in use, for logs and benchmarks.
func kernelName() string { return "generic" }
