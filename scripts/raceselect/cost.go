package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)

// event matches go test -v's lines that move the running test.
var event = regexp.MustCompile(`^\s*(?:=== (RUN|CONT|PAUSE|NAME)|--- (PASS|FAIL|SKIP)):?\s+(\S+)`)

// costs is a test binary's run read event by event: the CPU between two
// events goes to the test that ran or continued last (-test.parallel 1:
// one at a time), the status each test ended with.
type costs struct {
	CPU      map[string]float64 // seconds, by full test name
	Status   map[string]string  // PASS, FAIL or SKIP
	Children map[string]bool    // names that had a subtest
	Order    []string           // names in the order they first ran
	err      error              // the first name that no pattern tells apart
}

func newCosts() *costs {
	return &costs{CPU: map[string]float64{}, Status: map[string]string{}, Children: map[string]bool{}}
}

// read attributes the CPU that now() reports at each event of r. It
// hands each test that passed without a subtest to leaf, if any, as it
// ends: its subtests have all run by then.
func (c *costs) read(r io.Reader, now func() float64, echo io.Writer, leaf func(string)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	running, last := "", now()
	parent := map[string]string{} // by the events, not the names: t.Run("a/b") is one test
	for sc.Scan() {
		line := sc.Text()
		if echo != nil {
			fmt.Fprintln(echo, line)
		}
		m := event.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		t := now()
		if running != "" {
			c.CPU[running] += t - last
		}
		last = t
		name := m[3]
		switch {
		case m[1] == "RUN":
			if _, ok := c.CPU[name]; !ok {
				c.Order = append(c.Order, name)
				c.CPU[name] += 0
			}
			par := ""
			if i := strings.LastIndexByte(name, '/'); i > 0 {
				p := name[:i]
				// go test -v prints a sequential subtest's end with its
				// parent's, so the test running may be in a sibling's
				// subtree: climb to the parent.
				if _, ran := c.CPU[p]; ran && running != p && !strings.HasPrefix(running, p+"/") {
					// t.Run("a/b") beside t.Run("a"): -run and -skip
					// cannot tell the one from a subtest of the other.
					if c.err == nil {
						c.err = fmt.Errorf("test %s extends the name of %s, which is not its parent: rename it", name, p)
					}
				}
				for par = running; par != "" && !strings.HasPrefix(name, par+"/"); par = parent[par] {
				}
				if par == "" {
					par = p
				}
				c.Children[par] = true
			}
			parent[name] = par
			running = name
		case m[1] == "CONT":
			running = name
		case m[1] == "PAUSE":
			running = parent[name] // the parent goes on until its body returns
		case m[2] != "":
			c.Status[name] = m[2]
			if leaf != nil && m[2] == "PASS" && !c.Children[name] {
				leaf(name)
			}
			running = parent[name]
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return c.err
}

// leaves are the tests that ran to a pass without a subtest of their own:
// the units the selection keeps or leaves out.
func (c *costs) leaves() []string {
	var out []string
	for _, n := range c.Order {
		if !c.Children[n] && c.Status[n] == "PASS" {
			out = append(out, n)
		}
	}
	return out
}

// failed are the tests without subtests that failed, in the order they
// ran. A parent fails too when a race is reported while it waits for its
// subtests, whichever test raced: its subtests decide.
func (c *costs) failed() []string {
	var out []string
	for _, n := range c.Order {
		if c.Status[n] == "FAIL" && !c.Children[n] {
			out = append(out, n)
		}
	}
	return out
}

// procCPU is a process's user and system CPU in seconds, its waited-for
// children's included (a test that builds or runs a program).
func procCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	// Fields after the command, which may hold spaces, in parentheses.
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	var ticks float64
	for _, i := range []int{11, 12, 13, 14} { // utime stime cutime cstime
		v, _ := strconv.ParseFloat(f[i], 64)
		ticks += v
	}
	return ticks / 100 // USER_HZ
}

// runCosts runs bin in dir with args, one test at a time, and reads its
// events.
func runCosts(bin, dir string, args []string, env []string, log io.Writer, leaf func(string)) (*costs, error) {
	cmd := exec.Command(bin, append([]string{"-test.v", "-test.parallel", "1", "-test.count", "1"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = dir
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	pw.Close()
	// Read to the end before Wait: until then the exited process is a
	// zombie whose /proc entry still holds its CPU.
	c := newCosts()
	last := 0.0
	rerr := c.read(pr, func() float64 {
		if v := procCPU(cmd.Process.Pid); v > 0 {
			last = v
		}
		return last
	}, log, leaf)
	pr.Close()
	if err := cmd.Wait(); err != nil {
		return c, fmt.Errorf("%s: %w", bin, errors.Join(err, rerr))
	}
	return c, rerr
}
