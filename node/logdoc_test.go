package node

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// logMessage is one Info, Warn or Error call with a literal message.
type logMessage struct {
	msg, where string
	client     bool // in a method of *Client or in node/client
}

// logMessages parses the non-test Go files under roots and returns every
// call of .Info, .Warn or .Error whose first argument is a string literal.
func logMessages(t *testing.T, roots ...string) []logMessage {
	t.Helper()
	var out []logMessage
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				// A client's: a method of *Client, or anything in the
				// client's packages (their components log to its log).
				client := fn.Recv != nil && len(fn.Recv.List) == 1 && recvName(fn.Recv.List[0].Type) == "Client" ||
					strings.HasPrefix(filepath.ToSlash(path), "client/")
				ast.Inspect(fn.Body, func(n ast.Node) bool {
					call, ok := n.(*ast.CallExpr)
					if !ok || len(call.Args) == 0 {
						return true
					}
					sel, ok := call.Fun.(*ast.SelectorExpr)
					if !ok || (sel.Sel.Name != "Info" && sel.Sel.Name != "Warn" && sel.Sel.Name != "Error") {
						return true
					}
					lit, ok := call.Args[0].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						// A logger's message is a constant: one that is
						// not could not be documented.
						if x, ok := sel.X.(*ast.SelectorExpr); ok && x.Sel.Name == "log" {
							t.Errorf("%s: a log message that is not a string literal", fset.Position(call.Pos()))
						}
						return true
					}
					msg, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatalf("%s: %v", fset.Position(lit.Pos()), err)
					}
					out = append(out, logMessage{msg: msg, where: fset.Position(lit.Pos()).String(), client: client})
					return true
				})
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func recvName(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

var docMessage = regexp.MustCompile("`([^`]+)`")

// documentedMessages returns the messages that the first cell of each
// table row of section (a "## " heading) of file names as "`message`".
func documentedMessages(t *testing.T, file, section string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "\n## "+section+"\n")
	if i < 0 {
		t.Fatalf("%s: no section %q", file, section)
	}
	body := doc[i+len(section)+5:]
	if j := strings.Index(body, "\n## "); j >= 0 {
		body = body[:j]
	}
	out := map[string]bool{}
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, "| ") {
			continue
		}
		cell, _, _ := strings.Cut(line[2:], " | ")
		for _, m := range docMessage.FindAllStringSubmatch(cell, -1) {
			out[m[1]] = true
		}
	}
	return out
}

// TestLogMessagesDocumented: every Info, Warn and Error message of node,
// its subpackages, cmd/riffle, internal and store (whose server logs to the
// server's log) is in the table of the
// server's log (docs/operator.md, "The log") or, for a client's, of the
// client's log (docs/proto-cli.md, "The client's log"), and every message
// in those tables is still logged.
func TestLogMessagesDocumented(t *testing.T) {
	docs := map[bool]struct {
		file, section string
		msgs          map[string]bool
	}{
		false: {file: "../docs/operator.md", section: "The log"},
		true:  {file: "../docs/proto-cli.md", section: "The client's log"},
	}
	for k, d := range docs {
		d.msgs = documentedMessages(t, d.file, d.section)
		docs[k] = d
	}
	logged := map[bool]map[string]bool{false: {}, true: {}}
	var missing []string
	for _, m := range logMessages(t, ".", "../cmd/riffle", "../internal", "../store") {
		logged[m.client][m.msg] = true
		if d := docs[m.client]; !d.msgs[m.msg] {
			missing = append(missing, m.where+": "+strconv.Quote(m.msg)+" is not in "+d.file+", \""+d.section+"\"")
		}
	}
	for k, d := range docs {
		for m := range d.msgs {
			if !logged[k][m] {
				missing = append(missing, d.file+", \""+d.section+"\": "+strconv.Quote(m)+" is not logged")
			}
		}
	}
	slices.Sort(missing)
	for _, m := range missing {
		t.Error(m)
	}
}
