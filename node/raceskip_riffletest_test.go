//go:build riffletest

package node

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestRaceLeftOutNamed: every test raceLeftOut names is one of the
// package's, so that a renamed test is caught rather than raced again
// unnoticed (its new name would run under -race; rerun make race-select).
func TestRaceLeftOutNamed(t *testing.T) {
	t.Parallel()
	decl := regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`)
	have := map[string]bool{}
	files, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !strings.HasSuffix(f.Name(), "_test.go") {
			continue
		}
		b, err := os.ReadFile(f.Name())
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range decl.FindAllSubmatch(b, -1) {
			have[string(m[1])] = true
		}
	}
	for _, n := range raceLeftOut {
		if top, _, _ := strings.Cut(n, "/"); !have[top] {
			t.Errorf("raceLeftOut names %q: no test %s in node (make race-select)", n, top)
		}
	}
}

// TestRaceSkipPattern runs this binary on a probe with raceSkip's pattern:
// exactly the names skip, and a parent named with one of its subtests
// skips whole (go test's -skip takes the first alternative that matches a
// name's first elements).
func TestRaceSkipPattern(t *testing.T) {
	t.Parallel()
	skip := raceSkip([]string{"TestRaceSkipProbe/b/c", "TestRaceSkipProbe/p/q", "TestRaceSkipProbe/x_y", "TestRaceSkipProbe/p"})
	cmd := exec.Command(os.Args[0], "-test.run", "^TestRaceSkipProbe$", "-test.skip", skip, "-test.v")
	cmd.Env = append(os.Environ(), "RIFFLE_RACE_PROBE=1", "RIFFLE_RACE_ALL=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var ran []string
	for _, m := range regexp.MustCompile(`probe ran (\S+)`).FindAllSubmatch(out, -1) {
		ran = append(ran, string(m[1]))
	}
	if want := []string{"a", "b", "b/d.e", "b/q", "z"}; !slices.Equal(ran, want) {
		t.Errorf("ran %q, want %q\n%s", ran, want, out)
	}
}

// TestRaceSkipProbe is TestRaceSkipPattern's probe.
func TestRaceSkipProbe(t *testing.T) {
	if os.Getenv("RIFFLE_RACE_PROBE") == "" {
		t.Skip("TestRaceSkipPattern's probe")
	}
	for _, n := range []string{"a", "b", "p", "x y", "z"} {
		t.Run(n, func(t *testing.T) {
			t.Logf("probe ran %s", n)
			if n == "b" || n == "p" {
				for _, m := range []string{"c", "d.e", "q"} {
					t.Run(m, func(t *testing.T) { t.Logf("probe ran %s/%s", n, m) })
				}
			}
		})
	}
}
