package wire

import (
	"bytes"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestMessageTable: one row per (protocol, way, type); every request's
// reply is a reply of its protocol and every reply answers a request; a
// type has one name; every request has a cap and every row a decoder.
func TestMessageTable(t *testing.T) {
	seen := map[tableKey]bool{}
	names := map[Type]string{}
	byName := map[string]Type{}
	answers := map[tableKey]bool{}
	for _, m := range Messages {
		k := tableKey{m.Proto, m.Dir, m.Type}
		if seen[k] {
			t.Errorf("%s: type %d listed twice", m.Proto, m.Type)
		}
		seen[k] = true
		if n, ok := names[m.Type]; ok && n != m.Name {
			t.Errorf("type %d named %s and %s", m.Type, n, m.Name)
		}
		if ty, ok := byName[m.Name]; ok && ty != m.Type {
			t.Errorf("name %s for types %d and %d", m.Name, ty, m.Type)
		}
		names[m.Type], byName[m.Name] = m.Name, m.Type
		if m.Decode == nil {
			t.Errorf("%s %s: no decoder", m.Proto, m.Name)
		}
		if m.Dir != Request {
			continue
		}
		if m.Cap == nil || m.Cap(testLimits) <= 0 {
			t.Errorf("%s %s: no cap", m.Proto, m.Name)
		}
		if _, ok := Lookup(m.Proto, Reply, m.Reply); !ok {
			t.Errorf("%s %s: its reply %d is not a reply of the protocol", m.Proto, m.Name, m.Reply)
		}
		answers[tableKey{m.Proto, Reply, m.Reply}] = true
	}
	for _, m := range Messages {
		if m.Dir == Reply && m.Proto != ProtoAny && !answers[tableKey{m.Proto, Reply, m.Type}] {
			t.Errorf("%s %s: a reply to no request", m.Proto, m.Name)
		}
	}
	if err := Takes(ProtoRound, TypeHello); !errors.Is(err, ErrNotTaken) {
		t.Errorf("a hello on the round protocol: %v", err)
	}
	if c := RequestCap(ProtoPIR, TypeHello, testLimits); c != 0 {
		t.Errorf("a hello on the PIR protocol has cap %d", c)
	}
	if rt, c, err := ReplyTo(ProtoPIR, TypeQuery, testLimits); rt != TypeAnswer || c != 0 || err != nil {
		t.Errorf("a query's reply: %d, %d, %v; want an answer whose cap the caller gives", rt, c, err)
	}
}

// TestEveryTypeInTable: every Type constant of the package is in the table
// (read from the source, so that a new type cannot be left out).
func TestEveryTypeInTable(t *testing.T) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	inTable := map[string]bool{}
	for _, m := range Messages {
		inTable[typeConst(m.Type)] = true
	}
	n := 0
	for _, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				v := s.(*ast.ValueSpec)
				if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "Type" {
					continue
				}
				for _, name := range v.Names {
					n++
					if !inTable[name.Name] {
						t.Errorf("%s is not in the message table", name.Name)
					}
				}
			}
		}
	}
	if n < len(inTable) {
		t.Fatalf("found %d Type constants, the table has %d types", n, len(inTable))
	}
}

// TestEveryTypeFuzzed: the Go type every row of the table decodes to has
// a fuzz target of its own, a Fuzz function of the package that decodes it
// (read from the source: a fuzzDecoder call naming one of its vectors, or a
// var or new of the type), beside FuzzMessages. Bodies without a layout
// (Raw: an Ack's, a StateReq's, a refusal's text) are FuzzReadAny's.
func TestEveryTypeFuzzed(t *testing.T) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]vector{}
	for _, v := range vectors() {
		byName[v.name] = v
	}
	fuzzed := map[string]string{} // Go type → a Fuzz function that decodes it
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || !strings.HasPrefix(fn.Name.Name, "Fuzz") || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.ValueSpec:
					if id, ok := n.Type.(*ast.Ident); ok {
						fuzzed[id.Name] = fn.Name.Name
					}
				case *ast.CallExpr:
					id, ok := n.Fun.(*ast.Ident)
					if !ok {
						break
					}
					switch id.Name {
					case "new":
						if a, ok := n.Args[0].(*ast.Ident); ok {
							fuzzed[a.Name] = fn.Name.Name
						}
					case "fuzzDecoder":
						for _, a := range n.Args[1:] {
							lit, ok := a.(*ast.BasicLit)
							if !ok {
								continue
							}
							name, _ := strconv.Unquote(lit.Value)
							if v, ok := byName[name]; ok {
								fuzzed[goType(v.msg)] = fn.Name.Name
							}
						}
					}
				}
				return true
			})
		}
	}
	for _, m := range Messages {
		var body Body
		for _, v := range vectors() {
			if v.t == m.Type {
				if body, err = m.Decode(v.msg.Marshal(), testLimits); err != nil {
					t.Fatalf("%s %s: %v", m.Proto, m.Name, err)
				}
				break
			}
		}
		if body == nil {
			t.Errorf("%s %s: no vector", m.Proto, m.Name)
			continue
		}
		if g := goType(body); g != "Raw" && fuzzed[g] == "" {
			t.Errorf("%s %s: no fuzz target decodes its type %s", m.Proto, m.Name, g)
		}
	}
}

// goType is the name of a body's Go type.
func goType(b Body) string {
	t := reflect.TypeOf(b)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// typeConst is the constant's name of a type in the table: Type + Name.
func typeConst(t Type) string {
	for _, m := range Messages {
		if m.Type == t {
			return "Type" + m.Name
		}
	}
	return ""
}

// TestTableDecoders: every row of a vector's type decodes its body to the
// same bytes.
func TestTableDecoders(t *testing.T) {
	for _, v := range vectors() {
		body := v.msg.Marshal()
		for _, m := range Messages {
			if m.Type != v.t {
				continue
			}
			got, err := m.Decode(body, testLimits)
			if err != nil {
				t.Errorf("%s (%s %s): %v", v.name, m.Proto, m.Name, err)
				continue
			}
			if !bytes.Equal(got.Marshal(), body) {
				t.Errorf("%s (%s %s): decode→encode differs", v.name, m.Proto, m.Name)
			}
		}
	}
}

// FuzzMessages runs every decoder of the table on the type in the first
// byte: one round trip for every message type, seeded with every vector.
func FuzzMessages(f *testing.F) {
	for _, v := range vectors() {
		f.Add(append([]byte{byte(v.t)}, v.msg.Marshal()...))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		for _, m := range Messages {
			if m.Type != Type(b[0]) {
				continue
			}
			got, err := m.Decode(b[1:], testLimits)
			if err != nil {
				continue
			}
			if out := got.Marshal(); !bytes.Equal(out, b[1:]) {
				t.Fatalf("%s %s: decode→encode changed the bytes:\n%x\n%x", m.Proto, m.Name, b[1:], out)
			}
		}
	})
}

// TestMarkdown: the doc's table names each request's reply and what its
// caps grow with.
func TestMarkdown(t *testing.T) {
	md := Markdown(testLimits)
	for _, want := range []string{
		"| pir | Query (46) | 88 B (K, MaskSize) | Answer (47) | the epoch's |",
		"| epoch | Prepare (10) | 298,724 B | Entry (11) | 1 MiB |",
		"| round | GetChunk (48) | 64 B | Chunk (49) | 128 B (Chunk) |",
		"| any | — | — | Error (255), instead of any reply | 1 KiB |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("no row %q in\n%s", want, md)
		}
	}
	if !strings.Contains(md, "K = 2, Chunk = 64, Onion = 256, MaskSize = 4") {
		t.Errorf("the limits the caps grow with are not named:\n%s", md)
	}
	if got := byteSize(13514); got != "13,514 B" {
		t.Errorf("byteSize(13514) = %q", got)
	}
}
