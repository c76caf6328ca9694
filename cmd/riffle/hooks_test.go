package main

import (
	"debug/elf"
	"debug/gosym"
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestBinaryHasNoTestHooks reads the symbols of the binary TestMain built
// as a user does: none of node's may be one that only riffletest builds
// declare (observers, cheats, misbehaviours, the old decoy rule), and
// none a hook point (hook*), which there must be empty and inlined away.
// It lives here, not in node, so that the binary is linked once.
func TestBinaryHasNoTestHooks(t *testing.T) {
	t.Parallel()
	forbidden := hookOnlyNames(t)
	for _, name := range []string{"testObserver", "ClientObserver", "leaderCheat", "serverHooks", "ClientHooks", "DupClientTest", "recvHook", "RecvHook", "heldDraw", "ownPool", "leadHooks", "walkHooks", "chargeHooks"} {
		if !forbidden[name] {
			t.Fatalf("%s is not declared in a riffletest-only file", name)
		}
	}
	syms := nmSymbols(t, riffleBin)
	// The scan reads the binary: node's own symbols are there.
	if !slices.ContainsFunc(syms, func(l string) bool { return strings.HasSuffix(l, " github.com/riffle-net/riffle/node.NewServer") }) {
		t.Fatalf("go tool nm shows no node.NewServer among %d symbols", len(syms))
	}
	if found := hookSymbols(t, syms, forbidden); len(found) > 0 {
		t.Errorf("the binary links test hooks:\n%s", strings.Join(found, "\n"))
	}
	// Positive control: a build with the tag holds them. This test's own
	// binary is one, so no second build: go test strips its symbol table,
	// so its functions are read from its pclntab (no variables there:
	// transport's hook shows as its hook point, not as RecvHook).
	if !taggedTest {
		t.Skip("the positive control needs a test binary built with -tags riffletest")
	}
	found := strings.Join(hookSymbols(t, ownFuncs(t), forbidden), "\n")
	for _, want := range []string{"serverHooks", "ClientHooks", "heldDraw", "hookCfg).ClientHandlers", "ownPool", "transport.hookRecv", "leadHooks).CheatKeys", "walkHooks).LieDrop", "chargeHooks).SpreadLate"} {
		if !strings.Contains(found, want) {
			t.Errorf("the scan does not see %s in a riffletest build", want)
		}
	}
}

// taggedTest is whether this test binary was built with riffletest
// (hooks_riffletest_test.go), so that it links node's hooks.
var taggedTest bool

// nodeDir is node's source directory, seen from this package's.
const nodeDir = "../../node"

// nmSymbols are the lines of go tool nm of binary bin.
func nmSymbols(t *testing.T, bin string) []string {
	t.Helper()
	out, err := exec.Command("go", "tool", "nm", bin).Output()
	if err != nil {
		t.Fatalf("go tool nm %s: %v", bin, err)
	}
	return strings.Split(string(out), "\n")
}

// ownFuncs are the names of the functions of the running test binary.
func ownFuncs(t *testing.T) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(exe)
	if err != nil {
		t.Skipf("not an ELF binary: %v", err)
	}
	defer f.Close()
	pcln, text := f.Section(".gopclntab"), f.Section(".text")
	if pcln == nil || text == nil {
		t.Fatalf("%s has no .gopclntab or .text", exe)
	}
	data, err := pcln.Data()
	if err != nil {
		t.Fatal(err)
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, text.Addr))
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(tab.Funcs))
	for i, fn := range tab.Funcs {
		names[i] = fn.Name
	}
	return names
}

// hookDirs are node's packages below it that the binary links, whose
// riffletest-only names it must not: node/transport's receive path has a
// hook of its own (RecvHook); the client's hooks and accessors are
// node/client's. Every directory below node with Go files is one, but
// the harnesses built on node for tests and the benchmark (nodeHarnesses):
// a package that leaves node is checked from its first commit, with no
// list to keep.
func hookDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(nodeDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() || path == nodeDir {
			return nil
		}
		path, err = filepath.Rel(nodeDir, path)
		if err != nil {
			return err
		}
		if nodeHarnesses[path] {
			return filepath.SkipDir
		}
		if goFiles, _ := filepath.Glob(filepath.Join(nodeDir, path, "*.go")); len(goFiles) > 0 {
			dirs = append(dirs, filepath.ToSlash(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// nodeHarnesses are the packages below node that import it to run
// networks (tests, the benchmark): not the node the binary is.
var nodeHarnesses = map[string]bool{"localnet": true, "nodetest": true}

// hookOnlyNames are the top-level names declared in node's and hookDirs'
// files built only with the riffletest tag and in none of the others.
func hookOnlyNames(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(nodeDir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range hookDirs(t) {
		more, err := filepath.Glob(filepath.Join(nodeDir, dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, more...)
	}
	tagged, untagged := map[string]bool{}, map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		with, without := true, true
		for _, cg := range f.Comments {
			if cg.Pos() > f.Package {
				break
			}
			for _, c := range cg.List {
				if expr, err := constraint.Parse(c.Text); err == nil {
					with = expr.Eval(func(tag string) bool { return tag == "riffletest" })
					without = expr.Eval(func(string) bool { return false })
				}
			}
		}
		if !with {
			continue // a production-only file
		}
		into := untagged
		if !without {
			into = tagged
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				into[d.Name.Name] = true
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						into[s.Name.Name] = true
					case *ast.ValueSpec:
						for _, n := range s.Names {
							into[n.Name] = true
						}
					}
				}
			}
		}
	}
	for name := range untagged {
		delete(tagged, name) // an empty stub of the binary's (hooks.go)
	}
	return tagged
}

// hookSymbols returns the symbols of syms that name a forbidden
// identifier or a hook point of node or of hookDirs.
func hookSymbols(t *testing.T, syms []string, forbidden map[string]bool) []string {
	t.Helper()
	// What follows the package path up to the end of the symbol, e.g.
	// "(*hookCfg).Stage" or "serverHooks]).Load".
	sym := regexp.MustCompile(`github\.com/riffle-net/riffle/node(?:/` + strings.Join(hookDirs(t), "|/") + `)?\.(\S+)`)
	ident := regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
	var found []string
	for _, line := range syms {
		for _, m := range sym.FindAllStringSubmatch(line, -1) {
			bad := false
			for _, id := range ident.FindAllString(m[1], -1) {
				bad = bad || forbidden[id] || strings.HasPrefix(id, "hook")
			}
			if bad {
				found = append(found, strings.TrimSpace(line))
				break
			}
		}
	}
	return found
}
