// Command raceselect recomputes which of node's tests the race pass runs
// (docs/testing.md, "The race pass"): the cheapest set of tests and cases
// whose statements of node/... are every statement the whole race pass
// covers. It runs node's race binary once with nothing left out, one test
// at a time, to price each test and case by its race CPU; runs each of
// them alone under -cover -coverpkg=./node/... (-short, without -race);
// chooses; and writes node/racepass_test.go, the list the race pass
// leaves to the full pass.
//
//	make race-select   (go run ./scripts/raceselect -raceflags "$(RACEFLAGS)")
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
)

func main() {
	raceflags := flag.String("raceflags", "-race", "go test's flags of the race pass (the Makefile's RACEFLAGS)")
	jobs := flag.Int("j", 2, "coverage runs at once")
	work := flag.String("work", "", "directory for the binaries, the logs and the profiles (default: a new temporary one); kept")
	costFile := flag.String("costs", "", "a costs.json of an earlier run: skip the race run")
	reuse := flag.Bool("reuse", false, "take a test's coverage from -work's profiles of an earlier run, where one is there")
	out := flag.String("o", "node/racepass_test.go", "the file to write")
	measure := flag.Bool("measure", false, "only run the test binary given as the first argument, with the rest as its flags, one test at a time, and print each test's CPU")
	flag.Parse()
	if *measure {
		if err := measureOnly(flag.Args()); err != nil {
			fmt.Fprintln(os.Stderr, "raceselect:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*raceflags, *jobs, *work, *costFile, *out, *reuse); err != nil {
		fmt.Fprintln(os.Stderr, "raceselect:", err)
		os.Exit(1)
	}
}

func run(raceflags string, jobs int, work, costFile, out string, reuse bool) error {
	if work == "" {
		var err error
		if work, err = os.MkdirTemp("", "raceselect"); err != nil {
			return err
		}
	}
	work, _ = filepath.Abs(work)
	fmt.Fprintln(os.Stderr, "raceselect: working in", work)
	race := filepath.Join(work, "node.race.test")
	cov := filepath.Join(work, "node.cover.test")
	var bflags []string
	for _, f := range strings.Fields(raceflags) {
		if f != "-short" { // a flag of the run, not of the build
			bflags = append(bflags, f)
		}
	}
	if costFile == "" {
		if err := gotest(append(append([]string{"-c", "-o", race}, bflags...), "./node/")...); err != nil {
			return err
		}
	}
	if err := gotest("-c", "-o", cov, "-cover", "-covermode=set", "-coverpkg=./node/...", "./node/"); err != nil {
		return err
	}
	// Each test or case goes to its coverage run as it passes the race
	// run, so that both cores work.
	todo := make(chan string, 1<<16)
	cv := startCover(cov, filepath.Join(work, "cover"), jobs, todo, reuse)
	var c *costs
	if costFile != "" {
		b, err := os.ReadFile(costFile)
		if err != nil {
			return err
		}
		c = newCosts()
		if err := json.Unmarshal(b, c); err != nil {
			return err
		}
		for _, u := range c.leaves() {
			todo <- u
		}
	} else {
		log, err := os.Create(filepath.Join(work, "race.log"))
		if err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, "raceselect: the race pass, nothing left out, one test at a time (race.log), each test and case alone under -cover as it passes")
		c, err = runCosts(race, "node", []string{"-test.short", "-test.timeout", "60m"}, []string{"RIFFLE_RACE_ALL=1"}, log, func(u string) { todo <- u })
		log.Close()
		b, _ := json.MarshalIndent(c, "", "\t")
		if werr := os.WriteFile(filepath.Join(work, "costs.json"), b, 0o644); err == nil {
			err = werr
		}
		var exit *exec.ExitError
		if c.err != nil {
			// A heuristic of the reading: say so, and go on.
			fmt.Fprintln(os.Stderr, "raceselect: WARNING:", c.err)
			if !errors.As(err, &exit) {
				err = nil
			}
		}
		if err != nil && !(errors.As(err, &exit) && len(c.failed()) > 0) {
			close(todo)
			cv.wait()
			return fmt.Errorf("%v (race.log)", err)
		}
	}
	// A test that fails under -race is left out, loudly: the full pass
	// runs it, and what it races is for its owner to fix.
	failed := c.failed()
	for _, n := range failed {
		fmt.Fprintf(os.Stderr, "raceselect: WARNING: %s failed under -race (race.log): left out\n", n)
	}
	close(todo)
	units := c.leaves()
	cover, err := cv.wait()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "raceselect: %d tests and cases\n", len(units))
	sel := choose(units, cover, c.CPU)
	kept := map[string]bool{}
	for _, u := range sel.keep {
		kept[u] = true
	}
	skip := leftOut(c, kept)
	fmt.Fprintf(os.Stderr, "raceselect: %d statements; keeps %d of %d (race CPU %.0f s of %.0f s); leaves out %d names\n",
		sel.stmts, len(sel.keep), len(units), sel.cost, sel.total, len(skip))
	return os.WriteFile(out, render(sel, len(units), skip, failed), 0o644)
}

// measureOnly prints each test's CPU in a run of a test binary, the
// dearest first, with the whole run's.
func measureOnly(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("-measure: no test binary")
	}
	c, err := runCosts(args[0], "", args[1:], nil, nil, nil)
	if c == nil {
		return err
	}
	names := slices.Clone(c.Order)
	sort.SliceStable(names, func(i, j int) bool { return c.CPU[names[i]] > c.CPU[names[j]] })
	total := 0.0
	for _, n := range names {
		total += c.CPU[n]
	}
	fmt.Printf("%8.1f  total (%d tests and cases)\n", total, len(names))
	for _, n := range names {
		fmt.Printf("%8.1f  %s %s\n", c.CPU[n], n, c.Status[n])
	}
	return err
}

func gotest(args ...string) error {
	cmd := exec.Command("go", append([]string{"test", "-tags", "riffletest"}, args...)...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

// coverRuns run each unit alone in the coverage binary, in node/.
type coverRuns struct {
	mu    sync.Mutex
	cover map[string]profile
	err   error
	wg    sync.WaitGroup
}

func startCover(bin, dir string, jobs int, todo <-chan string, reuse bool) *coverRuns {
	cv := &coverRuns{cover: map[string]profile{}}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		cv.err = err
	}
	old := map[string]string{} // unit -> its profile of an earlier run
	names, _ := filepath.Glob(filepath.Join(dir, "*.out.name"))
	for _, f := range names {
		if b, err := os.ReadFile(f); err == nil && reuse {
			old[string(b)] = strings.TrimSuffix(f, ".name")
		}
	}
	n := len(names)
	var nmu sync.Mutex
	for range jobs {
		cv.wg.Add(1)
		go func() {
			defer cv.wg.Done()
			for u := range todo {
				cv.mu.Lock()
				stop := cv.err != nil
				cv.mu.Unlock()
				if stop {
					continue
				}
				nmu.Lock()
				i := n
				n++
				nmu.Unlock()
				var p profile
				var err error
				if f, ok := old[u]; ok {
					var b []byte
					if b, err = os.ReadFile(f); err == nil {
						p, err = readProfile(bytes.NewReader(b))
					}
				} else {
					p, err = coverOne(bin, dir, i, u)
				}
				cv.mu.Lock()
				if err != nil && cv.err == nil {
					cv.err = err
				}
				cv.cover[u] = p
				cv.mu.Unlock()
			}
		}()
	}
	return cv
}

func (cv *coverRuns) wait() (map[string]profile, error) {
	cv.wg.Wait()
	return cv.cover, cv.err
}

func coverOne(bin, dir string, i int, u string) (profile, error) {
	f := filepath.Join(dir, fmt.Sprintf("%04d.out", i))
	gd := filepath.Join(dir, fmt.Sprintf("%04d.d", i))
	if err := os.MkdirAll(gd, 0o755); err != nil {
		return nil, err
	}
	defer os.RemoveAll(gd)
	cmd := exec.Command(bin, "-test.short", "-test.count", "1", "-test.timeout", "30m",
		"-test.run", runPattern(u), "-test.coverprofile", f, "-test.gocoverdir", gd)
	cmd.Dir = "node"
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s alone: %v\n%s", u, err, out.String())
	}
	b, err := os.ReadFile(f)
	if err != nil {
		return nil, err
	}
	os.WriteFile(f+".name", []byte(u), 0o644)
	return readProfile(bytes.NewReader(b))
}

func failNote(failed []string) string {
	if len(failed) == 0 {
		return ""
	}
	return "\n// Failed under -race, so left out: " + strings.Join(failed, ", ") + "."
}

// render writes the Go file of what the race pass leaves out.
func render(sel selection, units int, skip, failed []string) []byte {
	sort.Strings(skip)
	var b bytes.Buffer
	fmt.Fprintf(&b, `//go:build riffletest

// Code generated by scripts/raceselect (make race-select); DO NOT EDIT.

package node

// raceLeftOut are the tests and cases of node's race pass (-race -short)
// that the full pass alone runs: the race pass keeps %d of its %d tests
// and cases, the cheapest set found whose statements of node/... are all
// %d that the %d cover, each alone (race CPU %.0f s of %.0f s).%s
var raceLeftOut = []string{
`, len(sel.keep), units, sel.stmts, units, sel.cost, sel.total, failNote(failed))
	for _, s := range skip {
		fmt.Fprintf(&b, "\t%q,\n", s)
	}
	b.WriteString("}\n")
	return b.Bytes()
}
