//go:build !amd64 || purego

package pir

import "testing"

func setKernel(t testing.TB, asm bool) {}
