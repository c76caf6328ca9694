//go:build riffletest

package node

import (
	"os"
	"testing"

	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/store"
)

// TestMain turns the stores' fsync off: node's tests run whole networks
// in this one process, where a server's crash closes its store and the
// page cache keeps every write, so a sync changes nothing a test can see
// and costs CPU on every commit. The binary always syncs, and the crash
// tests of real processes (cmd/riffle) run it. It turns mix's memo of
// layer-key shares on: here every client and server of a pair derives
// the same Diffie–Hellman share, and the second takes it from the first
// (mix/dhmemo_riffletest.go); the binary computes its own.
func TestMain(m *testing.M) {
	store.SetNoSync(true)
	mix.SetDHMemo(true)
	os.Exit(m.Run())
}
