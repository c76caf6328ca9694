package wire

import (
	"fmt"
	"reflect"
	"strings"
)

// Markdown is the message table as docs/proto-node.md shows it: one row per
// request with its reply, caps computed within l (the node's ceilings), and
// after each cap the Limits fields it grows with.
func Markdown(l Limits) string {
	var b strings.Builder
	used := map[string]bool{}
	cell := func(c func(Limits) int) string {
		if c == nil {
			return "the epoch's"
		}
		s := byteSize(c(l))
		if deps := dependsOn(c, l); len(deps) > 0 {
			for _, d := range deps {
				used[d] = true
			}
			s += " (" + strings.Join(deps, ", ") + ")"
		}
		return s
	}
	b.WriteString("| protocol | request | cap | reply | reply cap |\n| --- | --- | --- | --- | --- |\n")
	for _, m := range Messages {
		if m.Dir != Request {
			continue
		}
		r, _ := Lookup(m.Proto, Reply, m.Reply)
		fmt.Fprintf(&b, "| %s | %s (%d) | %s | %s (%d) | %s |\n", m.Proto, m.Name, m.Type, cell(m.Cap), r.Name, r.Type, cell(r.Cap))
	}
	for _, m := range Messages {
		if m.Proto == ProtoAny {
			fmt.Fprintf(&b, "| %s | — | — | %s (%d), instead of any reply | %s |\n", m.Proto, m.Name, m.Type, cell(m.Cap))
		}
	}
	var at []string
	v := reflect.ValueOf(l)
	for i := 0; i < v.NumField(); i++ {
		if name := v.Type().Field(i).Name; used[name] {
			at = append(at, fmt.Sprintf("%s = %s", name, thousands(int(v.Field(i).Int()))))
		}
	}
	if len(at) > 0 {
		fmt.Fprintf(&b, "\nIn parentheses, the `wire.Limits` fields a cap grows with; here %s.\n", strings.Join(at, ", "))
	}
	return b.String()
}

// dependsOn names the Limits fields whose change changes c.
func dependsOn(c func(Limits) int, l Limits) []string {
	base := c(l)
	var out []string
	t := reflect.TypeOf(l)
	for i := 0; i < t.NumField(); i++ {
		x := l
		f := reflect.ValueOf(&x).Elem().Field(i)
		f.SetInt(2*f.Int() + 1)
		if c(x) != base {
			out = append(out, t.Field(i).Name)
		}
	}
	return out
}

// byteSize writes n in the largest binary unit that divides it, else in
// bytes with thousands separators.
func byteSize(n int) string {
	for _, u := range []struct {
		s    int
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n >= u.s && n%u.s == 0 {
			return fmt.Sprintf("%d %s", n/u.s, u.name)
		}
	}
	return thousands(n) + " B"
}

func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
