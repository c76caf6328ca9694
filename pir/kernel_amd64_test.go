//go:build amd64 && !purego

package pir

import "testing"

// setKernel selects the assembly (true) or portable (false) kernels for the
// rest of the test.
func setKernel(t testing.TB, asm bool) {
	old := useAVX512
	useAVX512 = asm && old
	t.Cleanup(func() { useAVX512 = old })
}
