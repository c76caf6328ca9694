package benchreport

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHz is the unit of the CPU times in /proc/PID/stat: USER_HZ, which
// Linux fixes at 100 for user space whatever the kernel's tick.
const userHz = 100

// ProcStats is what /proc says of a process: its CPU time (user and
// system) so far and its peak resident set (VmHWM).
type ProcStats struct {
	CPU     time.Duration
	PeakRSS uint64 // bytes
}

// ReadProc reads /proc/PID/stat and /proc/PID/status (pid 0: this
// process).
func ReadProc(pid int) (ProcStats, error) {
	who := "self"
	if pid != 0 {
		who = strconv.Itoa(pid)
	}
	var st ProcStats
	b, err := os.ReadFile("/proc/" + who + "/stat")
	if err != nil {
		return st, fmt.Errorf("proc stats: %w", err)
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// count fields after its closing one. utime and stime are fields 14
	// and 15, so the 12th and 13th after it.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return st, fmt.Errorf("proc stats: malformed /proc/%s/stat", who)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return st, fmt.Errorf("proc stats: short /proc/%s/stat", who)
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	sy, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return st, fmt.Errorf("proc stats: /proc/%s/stat: utime %q stime %q", who, f[11], f[12])
	}
	st.CPU = time.Duration(ut+sy) * time.Second / userHz
	b, err = os.ReadFile("/proc/" + who + "/status")
	if err != nil {
		return st, fmt.Errorf("proc stats: %w", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return st, fmt.Errorf("proc stats: VmHWM %q", v)
			}
			st.PeakRSS = kb << 10
		}
	}
	return st, nil
}
