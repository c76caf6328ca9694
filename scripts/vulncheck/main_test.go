package main

import (
	"strings"
	"testing"
)

// A govulncheck stream in its JSON form: a called module function, two
// called standard library functions fixed in different releases, the same
// OSV again on another path, and a vulnerable package that is imported but
// not called.
const stream = `{"config":{"go_version":"go1.26.8","scan_level":"symbol"}}
{"osv":{"id":"GO-1","summary":"panic in stun"}}
{"osv":{"id":"GO-2","summary":"net/http leak"}}
{"osv":{"id":"GO-3","summary":"x509 slow"}}
{"osv":{"id":"GO-4","summary":"imported only"}}
{"finding":{"osv":"GO-1","fixed_version":"v3.1.5","trace":[{"module":"github.com/pion/stun/v3","version":"v3.1.1","package":"github.com/pion/stun/v3","function":"GetFrom","receiver":"*XORMappedAddress"},{"module":"github.com/riffle-net/riffle","package":"github.com/riffle-net/riffle/node/transport","function":"NewStream","receiver":"libp2pHost"}]}}
{"finding":{"osv":"GO-2","fixed_version":"v1.26.9","trace":[{"module":"stdlib","version":"v1.26.8","package":"net/http","function":"Write"},{"module":"github.com/riffle-net/riffle","package":"github.com/riffle-net/riffle/internal/wire","function":"WriteFrameSegments"}]}}
{"finding":{"osv":"GO-2","fixed_version":"v1.26.9","trace":[{"module":"stdlib","version":"v1.26.8","package":"net/http","function":"Read"}]}}
{"finding":{"osv":"GO-3","fixed_version":"v1.26.10","trace":[{"module":"stdlib","version":"v1.26.8","package":"crypto/x509","function":"Verify"}]}}
{"finding":{"osv":"GO-4","fixed_version":"v1.0.1","trace":[{"module":"example.com/m","version":"v1.0.0","package":"example.com/m"}]}}
`

// TestParse: only called functions count, each OSV once; a module's fails
// the check, the standard library's warn with the newest release needed.
func TestParse(t *testing.T) {
	r, err := parse(strings.NewReader(stream), "symbol")
	if err != nil {
		t.Fatal(err)
	}
	if r.goVersion != "go1.26.8" {
		t.Errorf("go version %q", r.goVersion)
	}
	if len(r.mods) != 1 || !strings.HasPrefix(r.mods[0], "GO-1: github.com/pion/stun/v3@v3.1.1 (fixed in v3.1.5): panic in stun; github.com/riffle-net/riffle/node/transport.libp2pHost.NewStream reaches github.com/pion/stun/v3.XORMappedAddress.GetFrom") {
		t.Errorf("module findings: %q", r.mods)
	}
	if len(r.std) != 2 || !strings.HasPrefix(r.std[0], "GO-2: stdlib@v1.26.8 (fixed in v1.26.9)") || !strings.HasPrefix(r.std[1], "GO-3:") {
		t.Errorf("standard library findings: %q", r.std)
	}
	if r.stdFix != "go1.26.10" {
		t.Errorf("standard library fixed in %q, want go1.26.10", r.stdFix)
	}
	if _, err := parse(strings.NewReader(`{"finding":`), "symbol"); err == nil {
		t.Error("a cut stream parsed")
	}
}

// pkgStream: a package-level scan, which names the imported vulnerable
// package and no function, after the module-level finding of each.
const pkgStream = `{"config":{"go_version":"go1.26.8","scan_level":"package"}}
{"osv":{"id":"GO-2","summary":"net/http leak"}}
{"osv":{"id":"GO-4","summary":"imported only"}}
{"osv":{"id":"GO-5","summary":"required only"}}
{"finding":{"osv":"GO-2","fixed_version":"v1.26.9","trace":[{"module":"stdlib","version":"v1.26.8"}]}}
{"finding":{"osv":"GO-4","fixed_version":"v1.0.1","trace":[{"module":"example.com/m","version":"v1.0.0"}]}}
{"finding":{"osv":"GO-5","fixed_version":"v1.0.1","trace":[{"module":"example.com/r","version":"v1.0.0"}]}}
{"finding":{"osv":"GO-2","fixed_version":"v1.26.9","trace":[{"module":"stdlib","version":"v1.26.8","package":"net/http"}]}}
{"finding":{"osv":"GO-4","fixed_version":"v1.0.1","trace":[{"module":"example.com/m","version":"v1.0.0","package":"example.com/m"}]}}
`

// TestParsePackageLevel: at the package level an imported vulnerable
// package of a required module is a finding (so the symbol level runs),
// a module required but not imported is none, and the standard library's
// imported packages warn.
func TestParsePackageLevel(t *testing.T) {
	r, err := parse(strings.NewReader(pkgStream), "package")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.mods) != 1 || r.mods[0] != "GO-4: example.com/m@v1.0.0 (fixed in v1.0.1): imported only; in example.com/m" {
		t.Errorf("module findings: %q", r.mods)
	}
	if len(r.std) != 1 || !strings.HasPrefix(r.std[0], "GO-2: stdlib@v1.26.8 (fixed in v1.26.9)") || r.stdFix != "go1.26.9" {
		t.Errorf("standard library findings: %q, fixed in %q", r.std, r.stdFix)
	}
	// The symbol level of the first stream: the imported, uncalled GO-4 is
	// no finding there.
	if r, _ := parse(strings.NewReader(stream), "symbol"); strings.Contains(strings.Join(r.mods, ""), "GO-4") {
		t.Errorf("an uncalled package counted at the symbol level: %q", r.mods)
	}
}

func TestNewer(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{{"go1.26.10", "go1.26.9", true}, {"go1.26.9", "go1.26.10", false}, {"go1.27", "go1.26.10", true}, {"go1.26.9", "go1.26.9", false}, {"go1.26.9", "", true}} {
		if got := newer(c.a, c.b); got != c.want {
			t.Errorf("newer(%s, %s) = %v", c.a, c.b, got)
		}
	}
}
