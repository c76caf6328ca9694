package main

import (
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// A run at -test.parallel 1: each event's CPU goes to the test that ran
// or continued last, a paused subtest's parent goes on, and the units are
// the leaves that passed.
func TestReadAttributes(t *testing.T) {
	out := `=== RUN   TestA
--- PASS: TestA (0.00s)
=== RUN   TestB
=== RUN   TestB/x
=== PAUSE TestB/x
=== RUN   TestB/y_z
=== PAUSE TestB/y_z
=== CONT  TestB/x
    foo_test.go:1: a log line
=== CONT  TestB/y_z
    --- SKIP: TestB/y_z (0.00s)
    --- PASS: TestB/x (0.00s)
--- PASS: TestB (0.00s)
=== RUN   TestC
--- FAIL: TestC (0.00s)
`
	clock := []float64{0, 0, 1, 3, 4, 4.5, 5, 5.5, 8, 10, 10.5, 11, 11.5, 12, 15}
	i := 0
	var passed []string
	c := newCosts()
	if err := c.read(strings.NewReader(out), func() float64 { v := clock[i]; i++; return v }, nil, func(n string) { passed = append(passed, n) }); err != nil {
		t.Fatal(err)
	}
	if i != len(clock) {
		t.Fatalf("%d events read, want %d (a log line is none)", i, len(clock))
	}
	want := map[string]float64{
		"TestA":     1,
		"TestB":     1 + 0.5 + 2.5 + 0.5 + 0.5, // its body before, between and after its subtests
		"TestB/x":   0.5 + 2,
		"TestB/y_z": 0.5 + 0.5,
		"TestC":     3,
	}
	for n, w := range want {
		if math.Abs(c.CPU[n]-w) > 1e-9 {
			t.Errorf("%s: %v s, want %v", n, c.CPU[n], w)
		}
	}
	if l := c.leaves(); !slices.Equal(l, []string{"TestA", "TestB/x"}) {
		t.Errorf("leaves %q, want TestA and TestB/x (y_z skipped, C failed, B a parent)", l)
	}
	if !slices.Equal(passed, []string{"TestA", "TestB/x"}) {
		t.Errorf("handed on %q as they passed, want TestA and TestB/x", passed)
	}
	if c.Status["TestB/y_z"] != "SKIP" || c.Status["TestC"] != "FAIL" {
		t.Errorf("status %v", c.Status)
	}
}

// The choice covers every block some unit covers, prefers the cheap
// units, and keeps none whose blocks the others cover.
func TestChooseCoversAllCheaply(t *testing.T) {
	cover := map[string]profile{
		"big":   {"a": 1, "b": 1, "c": 1, "d": 1},
		"ab":    {"a": 1, "b": 1},
		"cd":    {"c": 1, "d": 1},
		"d":     {"d": 1},
		"e":     {"e": 5},
		"empty": {},
	}
	cost := map[string]float64{"big": 10, "ab": 1, "cd": 2, "d": 0.5, "e": 3, "empty": 7}
	units := []string{"big", "ab", "cd", "d", "e", "empty"}
	sel := choose(units, cover, cost)
	if !slices.Equal(sel.keep, []string{"ab", "cd", "e"}) {
		t.Errorf("kept %q, want ab, cd, e (d: cd covers it)", sel.keep)
	}
	if sel.stmts != 9 || sel.cost != 6 || sel.total != 23.5 {
		t.Errorf("stmts %d cost %v total %v, want 9, 6, 23.5", sel.stmts, sel.cost, sel.total)
	}
	// Every block stays covered.
	got := profile{}
	for _, u := range sel.keep {
		for b, n := range cover[u] {
			got[b] = n
		}
	}
	if len(got) != 5 {
		t.Errorf("kept units cover %v, want a to e", got)
	}
}

// A parent none of whose subtests is kept is left out whole; a skipped
// test is not named (it skips by itself).
func TestLeftOutFolds(t *testing.T) {
	c := newCosts()
	c.Order = []string{"TestA", "TestB", "TestB/x", "TestB/y", "TestC", "TestC/x", "TestC/y", "TestC/y/1", "TestC/y/2", "TestD"}
	for _, n := range c.Order {
		c.Status[n] = "PASS"
	}
	c.Status["TestD"] = "SKIP"
	kept := map[string]bool{"TestA": true, "TestC/y/2": true}
	got := leftOut(c, kept)
	want := []string{"TestB", "TestC/x", "TestC/y/1"}
	if !slices.Equal(got, want) {
		t.Errorf("left out %q, want %q", got, want)
	}
}

func TestRunPattern(t *testing.T) {
	p := runPattern("TestX/[600_11_19]/a.b")
	if p != `^TestX$/^\[600_11_19\]$/^a\.b$` {
		t.Errorf("pattern %q", p)
	}
	for i, el := range strings.Split(p, "/") {
		if !regexp.MustCompile(el).MatchString(strings.Split("TestX/[600_11_19]/a.b", "/")[i]) {
			t.Errorf("element %d %q does not match", i, el)
		}
	}
}

func TestReadProfile(t *testing.T) {
	p, err := readProfile(strings.NewReader("mode: set\na.go:1.2,3.4 2 1\na.go:5.1,6.2 3 0\nb.go:1.1,1.9 1 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(p) != 2 || p["a.go:1.2,3.4"] != 2 || p["b.go:1.1,1.9"] != 1 {
		t.Errorf("profile %v, want the two blocks run", p)
	}
	if _, err := readProfile(strings.NewReader("a.go:1.2,3.4 x 1\n")); err == nil {
		t.Error("a bad line read without an error")
	}
}

// A name that extends a sibling's, not its parent's, fails the read:
// no pattern of -run or -skip tells the two apart.
func TestReadRefusesSlashedSibling(t *testing.T) {
	out := `=== RUN   TestE
=== RUN   TestE/1s/x
=== PAUSE TestE/1s/x
=== RUN   TestE/1s/x/late
=== PAUSE TestE/1s/x/late
`
	err := newCosts().read(strings.NewReader(out), func() float64 { return 0 }, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "TestE/1s/x/late") {
		t.Errorf("read: %v, want an error naming TestE/1s/x/late", err)
	}
	// Sequential subtests: go test -v prints their ends with the parent's.
	nested := "=== RUN   TestE\n=== RUN   TestE/a\n=== RUN   TestE/a/b\n=== RUN   TestE/c\n=== RUN   TestE/c/d\n--- PASS: TestE (0.00s)\n"
	if err := newCosts().read(strings.NewReader(nested), func() float64 { return 0 }, nil, nil); err != nil {
		t.Errorf("a real subtest refused: %v", err)
	}
}
