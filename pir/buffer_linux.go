//go:build linux

package pir

import (
	"fmt"
	"syscall"
)

// hugeMin is the size from which a Buffer is mapped and advised for huge
// pages (one 2 MiB page); smaller ones come from the heap.
const hugeMin = 2 << 20

func allocHuge(n int) ([]byte, func() error) {
	if n < hugeMin {
		return make([]byte, n), nil
	}
	mem, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return make([]byte, n), nil
	}
	// Advice only: without transparent huge pages this fails harmlessly.
	_ = syscall.Madvise(mem, syscall.MADV_HUGEPAGE)
	return mem, func() error {
		if err := syscall.Munmap(mem); err != nil {
			return fmt.Errorf("pir: unmap buffer of %d bytes: %w", n, err)
		}
		return nil
	}
}
