//go:build amd64 && !purego

package pir

import "testing"

// testKernels names every kernel level this CPU can run, best first.
func testKernels() []string {
	names := []string{"avx512", "avx2", "generic"}
	return names[levelAVX512-kernelLevel:]
}

// useKernel selects the named level (one of testKernels) for the rest of
// the test.
func useKernel(t testing.TB, name string) {
	old := kernelLevel
	for l, n := range [...]string{levelGeneric: "generic", levelAVX2: "avx2", levelAVX512: "avx512"} {
		if n == name && l <= old {
			kernelLevel = l
			t.Cleanup(func() { kernelLevel = old })
			return
		}
	}
	t.Fatalf("kernel %q not available on this CPU (best %s)", name, kernelName())
}
