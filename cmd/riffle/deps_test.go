package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryDeps: the riffle binary links neither the testing package
// (test helpers live in node/nodetest, which only tests import; the
// demo and bench run on node/localnet) nor gonum's plotting (built
// only with the paper tag, for `riffle bench --paper`): both weighed on
// every build of the binary (issue 27 point 11). With the tag the plots
// are in, which shows the check sees them.
func TestBinaryDeps(t *testing.T) {
	deps := func(tags string) []string {
		t.Helper()
		out, err := exec.Command("go", "list", "-tags="+tags, "-deps", ".").CombinedOutput()
		if err != nil {
			t.Fatalf("go list -tags=%s -deps: %v\n%s", tags, err, out)
		}
		return strings.Fields(string(out))
	}
	heavy := func(pkg string) bool {
		return pkg == "testing" || strings.HasPrefix(pkg, "testing/") || strings.HasPrefix(pkg, "gonum.org/v1/plot")
	}
	for _, p := range deps("") {
		if heavy(p) {
			t.Errorf("go build ./cmd/riffle links %s", p)
		}
	}
	plots := false
	for _, p := range deps("paper") {
		plots = plots || strings.HasPrefix(p, "gonum.org/v1/plot")
	}
	if !plots {
		t.Errorf("a build with the paper tag has no plots: the check would not see them")
	}
	// make demo says what it does before it compiles.
	out, err := exec.Command("make", "-n", "-C", "../..", "demo").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n demo: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "building riffle (first build") {
		t.Errorf("make demo prints nothing before it compiles:\n%s", out)
	}
}
