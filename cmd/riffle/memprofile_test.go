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

// TestStartProfiles: riffle server's --cpuprofile and --memprofile (and
// each server's in riffle bench --processes) leave both profiles when the
// server stops, with the peak live heap; an unwritable path is refused at
// the start, and "" writes nothing.
func TestStartProfiles(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.out"), filepath.Join(dir, "heap.out")
	stop, err := startProfiles(cpu, mem)
	if err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 32<<20)
	big[len(big)-1] = 1
	runtime.GC()
	peak, err := stop()
	runtime.KeepAlive(big)
	if err != nil || peak < 32<<20 {
		t.Fatalf("stop: peak %d, %v", peak, err)
	}
	for _, p := range []string{cpu, mem} {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Errorf("no profile at %s: %v", p, err)
		}
	}
	if _, err := startProfiles(filepath.Join(dir, "no", "cpu.out"), ""); err == nil {
		t.Error("a CPU profile path in a missing directory was taken")
	}
	if _, err := startProfiles("", filepath.Join(dir, "no", "heap.out")); err == nil {
		t.Error("a heap profile path in a missing directory was taken")
	}
	stop, err = startProfiles("", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stop(); err != nil {
		t.Fatal(err)
	}
}
