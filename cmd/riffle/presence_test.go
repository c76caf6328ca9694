package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOneShotNeedsNow (docs/protocol.md §5.4): without a running riffle
// client, share, get and ls refuse to join the network for their job alone
// unless --now, and say why; nothing is sent (the server address is a dead
// port).
func TestOneShotNeedsNow(t *testing.T) {
	var env []string
	for _, kv := range cleanEnv(t) {
		if !strings.HasPrefix(kv, "RIFFLE_NOW=") {
			env = append(env, kv)
		}
	}
	f := filepath.Join(t.TempDir(), "x")
	if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := "/ip4/127.0.0.1/tcp/1/p2p/12D3KooWEUbcN5uGcp14c1WytkD63tKzr8uSb5sSGsUGvPedroqY"
	for _, args := range [][]string{
		{"share", "--server", srv, "--data", t.TempDir(), f},
		{"get", "--server", srv, "--data", t.TempDir(), "-o", filepath.Join(t.TempDir(), "o"), "riffle:" + strings.Repeat("a", 52)},
		{"ls", "--server", srv, "--data", t.TempDir()},
	} {
		_, errOut, err := runBin(t, env, args...)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("%s without --now: err %v, stderr %q", args[0], err, errOut)
		}
		if !strings.HasPrefix(errOut, "riffle: no riffle client runs") || !strings.Contains(errOut, "--now") || strings.Count(errOut, "riffle: ") != 1 {
			t.Fatalf("%s without --now: stderr %q", args[0], errOut)
		}
	}
	// With --now it goes ahead and tries to join (the dead address
	// fails it); the warning of what --now reveals follows a join (the
	// end-to-end CLI tests run with RIFFLE_NOW=1).
	_, errOut, err := runBin(t, env, "share", "--now", "--server", srv, "--data", t.TempDir(), f)
	if err == nil || strings.Contains(errOut, "no riffle client runs") || !strings.Contains(errOut, "cannot reach the server") {
		t.Fatalf("share --now: err %v, stderr %q", err, errOut)
	}
}
