// Command vulncheck runs govulncheck over the module with the Go
// vulnerability database read from the OSV files of the golang.org/x/vulndb
// module, which the go command fetches like any module: no web host of its
// own is needed (docs/testing.md, Static checks). It fails on a vulnerable
// function the module's code calls in a required module; one in the
// standard library is a warning naming the Go release that fixes it (the
// fix is a newer toolchain, which go.mod's toolchain line asks for). It
// skips, saying so, only when the database cannot be fetched.
//
//	go run ./scripts/vulncheck [packages]
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

const (
	// Bump both together, on purpose: a newer database can fail the build.
	govulncheck = "golang.org/x/vuln/cmd/govulncheck@v1.9.0"
	vulndb      = "golang.org/x/vulndb@v0.0.0-20261105234957-e22db6528018"
)

func main() {
	tags := flag.String("tags", "", "build tags, as go build takes them")
	flag.Parse()
	pkgs := flag.Args()
	if len(pkgs) == 0 {
		pkgs = []string{"./..."}
	}
	dir, err := database()
	if err != nil {
		fmt.Printf("vulncheck: SKIPPED: the vulnerability database %s cannot be fetched: %v\n", vulndb, err)
		return
	}
	// A package-level scan costs a second; the call graph of the symbol
	// level half a minute. A called function of a required module is in a
	// package the module imports, so the symbol level runs only when the
	// package level found such a package: the check fails exactly as the
	// symbol level alone would.
	r, err := scan(dir, *tags, pkgs, "package")
	if err == nil && len(r.mods) > 0 {
		r, err = scan(dir, *tags, pkgs, "symbol")
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "vulncheck: %v\n", err)
		os.Exit(1)
	}
	if len(r.std) > 0 {
		ids := make([]string, len(r.std))
		for i, l := range r.std {
			ids[i], _, _ = strings.Cut(l, ":")
		}
		where := "code this module reaches"
		if r.level == "package" {
			where = "packages this module imports"
		}
		fmt.Printf("vulncheck: warning: %s has %d known vulnerabilities in %s (%s); build with %s or newer\n", r.goVersion, len(r.std), where, strings.Join(ids, ", "), r.stdFix)
	}
	for _, f := range r.mods {
		fmt.Printf("vulncheck: %s\n", f)
	}
	if len(r.mods) > 0 {
		fmt.Printf("vulncheck: FAIL: %d known vulnerabilities in required modules are called; raise them in go.mod\n", len(r.mods))
		os.Exit(1)
	}
	fmt.Printf("vulncheck: ok: no called vulnerability in a required module (database %s)\n", vulndb)
}

// scan runs govulncheck at a scan level, "package" or "symbol".
func scan(db, tags string, pkgs []string, level string) (report, error) {
	args := []string{"run", govulncheck, "-db", (&url.URL{Scheme: "file", Path: filepath.ToSlash(db)}).String(), "-format", "json", "-scan", level}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	var out bytes.Buffer
	cmd := exec.Command("go", append(args, pkgs...)...)
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return report{}, fmt.Errorf("govulncheck: %w", err)
	}
	return parse(&out, level)
}

// database fetches the vulndb module and returns its directory of OSV
// files, which govulncheck reads as a flat database.
func database() (string, error) {
	var out, errb bytes.Buffer
	cmd := exec.Command("go", "mod", "download", "-json", vulndb)
	cmd.Stdout, cmd.Stderr = &out, &errb
	runErr := cmd.Run()
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out.Bytes(), &m); err != nil && runErr == nil {
		return "", err
	}
	switch {
	case m.Error != "":
		return "", errors.New(m.Error)
	case runErr != nil:
		return "", fmt.Errorf("%v: %s", runErr, strings.TrimSpace(errb.String()))
	}
	dir := filepath.Join(m.Dir, "data", "osv")
	if _, err := os.Stat(dir); err != nil {
		return "", err
	}
	return dir, nil
}

// report is what a govulncheck run found in code the module calls, or at
// the package level in packages it imports.
type report struct {
	level     string
	goVersion string
	std, mods []string // one line per vulnerability
	stdFix    string   // the newest Go release a standard library finding needs
}

type frame struct {
	Module, Version, Package, Function, Receiver string
}

// parse reads govulncheck's JSON stream and keeps the findings of a level,
// one per OSV id: at "symbol" a vulnerable function on a call path from the
// module, at "package" a vulnerable package the module imports.
func parse(r io.Reader, level string) (report, error) {
	rep := report{level: level}
	summary := map[string]string{}
	seen := map[string]bool{}
	dec := json.NewDecoder(r)
	for {
		var msg struct {
			Config *struct {
				GoVersion string `json:"go_version"`
			}
			OSV *struct {
				ID      string
				Summary string
			}
			Finding *struct {
				OSV          string
				FixedVersion string `json:"fixed_version"`
				Trace        []frame
			}
		}
		if err := dec.Decode(&msg); err == io.EOF {
			break
		} else if err != nil {
			return rep, fmt.Errorf("reading govulncheck's output: %w", err)
		}
		switch {
		case msg.Config != nil:
			rep.goVersion = msg.Config.GoVersion
		case msg.OSV != nil:
			summary[msg.OSV.ID] = msg.OSV.Summary
		case msg.Finding != nil:
			f := msg.Finding
			if len(f.Trace) == 0 || seen[f.OSV] {
				continue
			}
			if v := f.Trace[0]; v.Package == "" || level == "symbol" && v.Function == "" {
				continue
			}
			seen[f.OSV] = true
			v, caller := f.Trace[0], f.Trace[len(f.Trace)-1]
			fix := "no fixed version"
			if f.FixedVersion != "" {
				fix = "fixed in " + f.FixedVersion
			}
			line := fmt.Sprintf("%s: %s@%s (%s): %s; %s reaches %s", f.OSV, v.Module, v.Version, fix, summary[f.OSV], name(caller), name(v))
			if level == "package" {
				line = fmt.Sprintf("%s: %s@%s (%s): %s; in %s", f.OSV, v.Module, v.Version, fix, summary[f.OSV], v.Package)
			}
			if v.Module == "stdlib" || v.Module == "toolchain" {
				rep.std = append(rep.std, line)
				if fv := "go" + strings.TrimPrefix(f.FixedVersion, "v"); f.FixedVersion != "" && newer(fv, rep.stdFix) {
					rep.stdFix = fv
				}
			} else {
				rep.mods = append(rep.mods, line)
			}
		}
	}
	sort.Strings(rep.std)
	sort.Strings(rep.mods)
	return rep, nil
}

func name(f frame) string {
	if f.Receiver != "" {
		return fmt.Sprintf("%s.%s.%s", f.Package, strings.TrimPrefix(f.Receiver, "*"), f.Function)
	}
	return f.Package + "." + f.Function
}

// newer compares Go release names of one form (go1.26.10 > go1.26.9).
func newer(a, b string) bool {
	if b == "" {
		return true
	}
	pa, pb := strings.Split(strings.TrimPrefix(a, "go"), "."), strings.Split(strings.TrimPrefix(b, "go"), ".")
	for i := 0; i < max(len(pa), len(pb)); i++ {
		var x, y int
		if i < len(pa) {
			fmt.Sscan(pa[i], &x)
		}
		if i < len(pb) {
			fmt.Sscan(pb[i], &y)
		}
		if x != y {
			return x > y
		}
	}
	return false
}
