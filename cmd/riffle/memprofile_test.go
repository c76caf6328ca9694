package main

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// TestPeakHeap: the profile left is the one taken at the highest live
// heap, which a 64 MiB slice held across a collection raises; a path that
// cannot be written is refused at the start.
func TestPeakHeap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heap.out")
	p, err := startPeakHeap(path, 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 64<<20)
	big[len(big)-1] = 1
	runtime.GC()
	time.Sleep(100 * time.Millisecond)
	runtime.KeepAlive(big)
	peak, err := p.finish()
	if err != nil {
		t.Fatal(err)
	}
	if peak < 64<<20 {
		t.Errorf("peak live heap %d bytes, want at least the 64 MiB held", peak)
	}
	if st, err := os.Stat(path); err != nil || st.Size() == 0 {
		t.Errorf("no profile at %s: %v", path, err)
	}
	if _, err := startPeakHeap(filepath.Join(t.TempDir(), "no", "such", "dir", "heap.out"), time.Second); err == nil {
		t.Error("a profile path in a missing directory was taken")
	}
}
