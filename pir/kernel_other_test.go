//go:build !amd64 || purego

package pir

import "testing"

func testKernels() []string { return []string{"generic"} }

func useKernel(t testing.TB, name string) {
	if name != "generic" {
		t.Fatalf("kernel %q not available on this build", name)
	}
}
