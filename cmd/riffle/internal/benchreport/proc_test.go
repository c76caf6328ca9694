package benchreport

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// TestReadProc reads this process's figures after burning CPU and holding
// 64 MiB: both must show.
func TestReadProc(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	for start := time.Now(); time.Since(start) < 50*time.Millisecond; {
	}
	st, err := ReadProc(0)
	if err != nil {
		t.Fatal(err)
	}
	if st.CPU <= 0 || st.PeakRSS < 64<<20 {
		t.Fatalf("stats %+v", st)
	}
	byPid, err := ReadProc(os.Getpid())
	if err != nil || byPid.PeakRSS < st.PeakRSS {
		t.Fatalf("by pid: %+v %v", byPid, err)
	}
	runtime.KeepAlive(buf)
	if _, err := ReadProc(1 << 30); err == nil {
		t.Fatal("no error for a process that does not exist")
	}
}
