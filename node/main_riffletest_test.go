//go:build riffletest

package node

import (
	"os"
	"testing"

	"github.com/riffle-net/riffle/store"
)

// TestMain turns the stores' fsync off: node's tests run whole networks
// in this one process, where a server's crash closes its store and the
// page cache keeps every write, so a sync changes nothing a test can see
// and costs CPU on every commit. The binary always syncs, and the crash
// tests of real processes (cmd/riffle) run it.
func TestMain(m *testing.M) {
	store.SetNoSync(true)
	os.Exit(m.Run())
}
