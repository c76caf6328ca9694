package node

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/libp2p/go-libp2p"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
)

// TestResourceLimits measures libp2p's auto-scaled default limits on this
// machine against riffle's: the defaults cap inbound connections far below
// the hundreds of clients a primary serves.
func TestResourceLimits(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		scaling := rcmgr.DefaultLimits
		libp2p.SetDefaultServiceLimits(&scaling)
		def := scaling.AutoScale().ToPartialLimitConfig()
		ours := ResourceLimits().ToPartialLimitConfig()
		t.Logf("libp2p default: system inbound conns %v, streams/peer %v; riffle: %v, %v",
			def.System.ConnsInbound, def.PeerDefault.StreamsInbound, ours.System.ConnsInbound, ours.PeerDefault.StreamsInbound)
		if int(ours.System.ConnsInbound) < 1000 || int(ours.PeerDefault.StreamsInbound) < 1000 {
			t.Fatalf("riffle limits too low: %+v", ours.System)
		}
	})
}

func TestIdentityPersistsAndIsPrivate(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "data")
		k1, err := LoadIdentity(dir)
		if err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(filepath.Join(dir, IdentityFile))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("identity key mode %v, %v", st.Mode().Perm(), err)
		}
		k2, err := LoadIdentity(dir)
		if err != nil || !k1.Equals(k2) {
			t.Fatalf("identity changed across loads: %v", err)
		}
		if err := os.Chmod(filepath.Join(dir, IdentityFile), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadIdentity(dir); err == nil {
			t.Fatal("a world-readable identity key was accepted")
		}
	})
}
