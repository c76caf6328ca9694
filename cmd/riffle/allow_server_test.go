package main

import (
	"strings"
	"testing"
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
