//go:build riffletest

package node

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/store"
)

// TestMain turns the stores' fsync off: node's tests run whole networks
// in this one process, where a server's crash closes its store and the
// page cache keeps every write, so a sync changes nothing a test can see
// and costs CPU on every commit. The binary always syncs, and the crash
// tests of real processes (cmd/riffle) run it. It turns mix's memo of
// layer-key shares on: here every client and server of a pair derives
// the same Diffie–Hellman share, and the second takes it from the first
// (mix/dhmemo_riffletest.go); the binary computes its own.
//
// Under -race -short (make test's race pass) it leaves out the tests and
// cases of raceLeftOut (racepass_test.go, made by scripts/raceselect):
// the rest cover every statement of node/... they cover
// (docs/testing.md, "The race pass"). RIFFLE_RACE_ALL=1 runs them too.
func TestMain(m *testing.M) {
	store.SetNoSync(true)
	mix.SetDHMemo(true)
	flag.Parse()
	// Two tests a core, not go test's one: a test on libp2p or real
	// time holds its slot while it waits, and a core then idles beside
	// it (the full pass on 2 cores: 296 s of wall time at one a core,
	// 182 s at two). -parallel overrides.
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", strconv.Itoa(2*runtime.GOMAXPROCS(0)))
	}
	if raceOn && testing.Short() && os.Getenv("RIFFLE_RACE_ALL") == "" && len(raceLeftOut) > 0 {
		skip := raceSkip(raceLeftOut)
		if prev := flag.Lookup("test.skip").Value.String(); prev != "" {
			skip = prev + "|" + skip
		}
		if err := flag.Set("test.skip", skip); err != nil {
			fmt.Fprintln(os.Stderr, "node: test.skip:", err)
			os.Exit(2)
		}
	}
	os.Exit(m.Run())
}

// raceSkip is -test.skip's pattern for exactly the names, a parent's
// before its subtests': an alternative that matches a name's first
// elements only would hide a later one that matches it whole.
func raceSkip(names []string) string {
	names = slices.Clone(names)
	slices.SortStableFunc(names, func(a, b string) int {
		return strings.Count(a, "/") - strings.Count(b, "/")
	})
	alt := make([]string, len(names))
	for i, n := range names {
		el := strings.Split(n, "/")
		for j, e := range el {
			el[j] = "^" + regexp.QuoteMeta(e) + "$"
		}
		alt[i] = strings.Join(el, "/")
	}
	return strings.Join(alt, "|")
}
