package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestMaxEpochsAndResume (docs/protocol.md §5.4): --max-epochs takes 1 to
// J and is checked before anything joins (a usage error); resume refuses a
// malformed file id, says when no client runs, and asks a running client
// over its local API, which has no paused job to resume.
func TestMaxEpochsAndResume(t *testing.T) {
	env := cleanEnv(t)
	f, _ := writeRandom(t, "x", 10)
	srv := "/ip4/127.0.0.1/tcp/1/p2p/12D3KooWEUbcN5uGcp14c1WytkD63tKzr8uSb5sSGsUGvPedroqY"
	for _, args := range [][]string{
		{"share", "--now", "--server", srv, "--data", t.TempDir(), "--max-epochs", "0", f},
		{"share", "--now", "--server", srv, "--data", t.TempDir(), "--max-epochs", "9", f},
		{"get", "--now", "--server", srv, "--data", t.TempDir(), "--max-epochs", "-1", "-o", filepath.Join(t.TempDir(), "o"), "riffle:" + strings.Repeat("a", 52)},
	} {
		_, errOut, err := runBin(t, env, args...)
		if exitCodeOf(err) != 2 || !strings.Contains(errOut, "--max-epochs") || !strings.Contains(errOut, "give 1 to 8") || strings.Contains(errOut, "cannot reach") {
			t.Fatalf("%v: exit %d, stderr %q", args, exitCodeOf(err), errOut)
		}
	}
	_, errOut, err := runBin(t, env, "resume", "--data", t.TempDir(), "not-an-id")
	if exitCodeOf(err) != 2 || !strings.Contains(errOut, "not a file id") {
		t.Fatalf("resume of a bad id: exit %d, stderr %q", exitCodeOf(err), errOut)
	}
	_, errOut, err = runBin(t, env, "resume", "--data", t.TempDir())
	if exitCodeOf(err) != 1 || !strings.Contains(errOut, "no riffle client runs") {
		t.Fatalf("resume without a client: exit %d, stderr %q", exitCodeOf(err), errOut)
	}
	tn := startNet(t, 1, 2)
	data := t.TempDir()
	tn.startClientDaemon(t, 0, data)
	_, errOut, err = runBin(t, tn.env, "resume", "--data", data, strings.Repeat("a", 52))
	if exitCodeOf(err) != 1 || !strings.Contains(errOut, "no paused job of file "+strings.Repeat("a", 52)) {
		t.Fatalf("resume with nothing paused: exit %d, stderr %q", exitCodeOf(err), errOut)
	}
	out, errOut, err := runBin(t, tn.env, "status", "--data", data)
	if err != nil || strings.Contains(out, "paused") {
		t.Fatalf("status: %v %q %q", err, out, errOut)
	}
}
