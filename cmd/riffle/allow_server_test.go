package main

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestAllowServerFlag: a malformed --allow-server is a usage error named
// once, before the server starts.
func TestAllowServerFlag(t *testing.T) {
	env := cleanEnv(t)
	_, errOut, err := runBin(t, env, "server", "--data", t.TempDir(), "--no-mdns", "--listen", "/ip4/127.0.0.1/tcp/0", "--allow-server", "not-a-peer-id")
	if err == nil || !strings.Contains(errOut, "riffle: --allow-server \"not-a-peer-id\"") || strings.Count(errOut, "riffle:") != 1 {
		t.Fatalf("server with a bad --allow-server: %v %q", err, errOut)
	}
}

// TestFounderFlag: a malformed --founder is a usage error named once,
// before the server starts.
func TestFounderFlag(t *testing.T) {
	env := cleanEnv(t)
	_, errOut, err := runBin(t, env, "server", "--data", t.TempDir(), "--no-mdns", "--listen", "/ip4/127.0.0.1/tcp/0", "--founder", "not-a-peer-id")
	if err == nil || !strings.Contains(errOut, "riffle: --founder \"not-a-peer-id\"") || strings.Count(errOut, "riffle:") != 1 {
		t.Fatalf("server with a bad --founder: %v %q", err, errOut)
	}
}

// TestSmallGroupRefused: --min-servers below 3, or fewer than 3 founders,
// is a usage error before the server starts (a chain of 1 or 2 servers
// gives no anonymity and no majority), unless --insecure-small-group.
func TestSmallGroupRefused(t *testing.T) {
	env := cleanEnv(t)
	a, b := otherPeer(t, env), otherPeer(t, env)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--min-servers", "2"}, "riffle: --min-servers 2: a chain needs at least 3 servers"},
		{[]string{"--min-servers", "1"}, "riffle: --min-servers 1: a chain needs at least 3 servers"},
		{[]string{"--founder", a, "--founder", b}, "riffle: 2 founders (--founder): a group needs at least 3"},
		{[]string{"--founder", a, "--founder", b, "--founder", a}, "riffle: 2 founders (--founder): a group needs at least 3"},
	} {
		args := append([]string{"server", "--data", t.TempDir(), "--no-mdns", "--listen", "/ip4/127.0.0.1/tcp/0"}, tc.args...)
		_, errOut, err := runBinFor(t, 20*time.Second, env, args...)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("server %v: %v %q, want exit 2 and %q", tc.args, err, errOut, tc.want)
		}
	}
}
