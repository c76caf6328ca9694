package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/riffle-net/riffle/cmd/riffle/internal/webui"
	"github.com/riffle-net/riffle/internal/wait"
)

// TestReadmeWalk follows README.md's "A network by hand" as written: it
// reads the section's command lines and runs each (servers and the client
// as background processes), with the fixed ports swapped for free ones. A
// line it does not know fails the test, so that README and test cannot
// drift apart.
func TestReadmeWalk(t *testing.T) {
	t.Parallel() // real processes or sockets in real time: overlap their waits
	if testing.Short() {
		t.Skip("a whole network with default epoch parameters")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	i := strings.Index(text, "### A network by hand")
	if i < 0 {
		t.Fatal(`README.md lacks "### A network by hand"`)
	}
	section := text[i:]
	if j := strings.Index(section[4:], "\n### "); j >= 0 {
		section = section[:j+4]
	}
	var lines []string
	for _, l := range strings.Split(section, "\n") {
		if !strings.HasPrefix(l, "    ") {
			continue
		}
		l = strings.TrimSpace(l)
		if k := strings.Index(l, "  #"); k >= 0 {
			l = strings.TrimSpace(l[:k])
		}
		lines = append(lines, l)
	}
	if len(lines) < 10 {
		t.Fatalf("README walk has %d command lines:\n%s", len(lines), strings.Join(lines, "\n"))
	}

	env := cleanEnv(t)
	// The servers run at the floor of the group pace (the one setting not
	// the README's), so that the walk's epochs of R = 256 rounds last as
	// long as the machine takes, not R times the default interval.
	cfgDir := filepath.Join(strings.TrimPrefix(env[len(env)-1], "XDG_CONFIG_HOME="), configDirName)
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfgDir, configFileName), []byte("server.round-interval = 10ms\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	ports := map[string]string{}
	for _, p := range []string{"4433", "4434", "4435"} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[p] = fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
		l.Close()
	}
	expand := func(s string) []string {
		for p, q := range ports {
			s = strings.ReplaceAll(s, "/tcp/"+p, "/tcp/"+q)
		}
		var out []string
		for _, f := range strings.Fields(s) {
			for k, v := range vars {
				f = strings.ReplaceAll(f, "$"+k, v)
			}
			out = append(out, f)
		}
		return out
	}
	argAfter := func(args []string, flag string) string {
		for i, a := range args {
			if a == flag && i+1 < len(args) {
				return args[i+1]
			}
		}
		return ""
	}
	for _, l := range lines {
		t.Logf("$ %s", l)
		switch {
		case l == "D=$(mktemp -d)":
			vars["D"] = t.TempDir()
		case strings.HasPrefix(l, "riffle server "), strings.HasPrefix(l, "riffle client "):
			args := expand(l)[1:]
			start(t, env, args...)
			data := argAfter(args, "--data")
			if args[0] == "server" {
				waitAddrs(t, data)
			} else {
				waitFor(t, 20*time.Second, "the client's local socket", func() bool {
					_, err := os.Stat(filepath.Join(data, webui.SocketFile))
					return err == nil
				})
			}
		case strings.HasPrefix(l, "S1=$(riffle id ") && strings.HasSuffix(l, " | sed -n 2p)"):
			args := expand(strings.TrimSuffix(strings.TrimPrefix(l, "S1=$("), " | sed -n 2p)"))[1:]
			out, errOut, err := runBin(t, env, args...)
			if err != nil {
				t.Fatalf("%s: %v\n%s", l, err, errOut)
			}
			vars["S1"] = strings.Split(out, "\n")[1]
		case strings.HasPrefix(l, "riffle status "):
			args := expand(l)[1:]
			// A server's roster fills within a hello period; a client's
			// status is there once its local socket is.
			var out, errOut string
			var err error
			if wait.UntilEvery(context.Background(), 30*time.Second, 500*time.Millisecond, func() bool {
				out, errOut, err = runBin(t, env, args...)
				return err == nil && (!strings.Contains(out, "roster") || strings.Contains(out, "2 live peers"))
			}) != nil {
				t.Fatalf("%s: %v\n%s%s", l, err, out, errOut)
			}
			t.Logf("%s", out)
		case strings.HasPrefix(l, `echo "hello, riffle" > `):
			if err := os.WriteFile(expand(l)[len(expand(l))-1], []byte("hello, riffle\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		case strings.HasPrefix(l, "LINK=$(riffle share ") && strings.HasSuffix(l, ")"):
			args := expand(strings.TrimSuffix(strings.TrimPrefix(l, "LINK=$("), ")"))[1:]
			out, errOut, err := runBin(t, env, args...)
			if err != nil {
				t.Fatalf("%s: %v\n%s", l, err, errOut)
			}
			vars["LINK"] = strings.TrimSpace(out)
		case strings.HasPrefix(l, "riffle get "):
			if out, errOut, err := runBin(t, env, expand(l)[1:]...); err != nil {
				t.Fatalf("%s: %v\n%s%s", l, err, out, errOut)
			}
		case strings.HasPrefix(l, "cmp "):
			f := expand(l)
			a, err1 := os.ReadFile(f[1])
			b, err2 := os.ReadFile(f[2])
			if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
				t.Fatalf("%s: files differ (%v, %v)", l, err1, err2)
			}
		default:
			t.Fatalf("README walk: the test does not know the line %q", l)
		}
	}
}
