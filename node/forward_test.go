//go:build riffletest

package node

import (
	"maps"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestForwardRootBounds (§5.4 "A forward root", principle 3): a server at
// chain position 1 of [S_0, it, Q], Q primary of 14 of 16 slots. Q's
// forward roots are kept one a round of the window, the first; a root
// from a peer other than the primary it names, or of a round outside the
// window, is refused before its entries are decoded; one that names
// another primary's slot, or more entries than Q's slots, is refused; a
// receipt of Q shown here that Q's root leaves out is logged as
// evidence, and one it holds is not.
func TestForwardRootBounds(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		s := loneServer(t)
		defer s.Close()
		_, s0 := replayKey(t)
		qKey, q := replayKey(t)
		chain := []peer.ID{s0, s.ID(), q}
		regFrom := make([]peer.ID, 16)
		for i := range regFrom {
			regFrom[i] = newPeerID(t)
		}
		e := fixtureChain(t, s, chain, 1, regFrom...)
		s.mu.Lock()
		for i := 2; i < 16; i++ {
			e.final.Desc.Clients[i].Primary = 2
		}
		for r := range e.final.Desc.Params.Rounds {
			e.round(r).list = nil // no final list yet
		}
		window := uint32(max(e.final.Desc.Params.W, 1)) + roundsAhead
		s.mu.Unlock()

		root := func(key crypto.PrivKey, r uint32, slots ...uint32) *wire.ForwardRoot {
			f := &wire.ForwardRoot{Epoch: e.final.ID, Round: r, Server: 2}
			for _, sl := range slots {
				f.Entries = append(f.Entries, wire.AccountEntry{Slot: sl, Digest: [32]byte{byte(sl)}})
			}
			var err error
			if f.Sig, err = proto.Sign(key, proto.ForwardRootDigest(f)); err != nil {
				t.Fatal(err)
			}
			return f
		}
		all := make([]uint32, 0, 14)
		for sl := uint32(2); sl < 16; sl++ {
			all = append(all, sl)
		}
		for r := range window {
			f := root(qKey, r, all...)
			if _, _, err := s.onForwardRoot(q, f.Marshal()); err != nil {
				t.Fatalf("Q's root of round %d refused: %v", r, err)
			}
			// A second root of the round does not replace the first.
			g := root(qKey, r, 2)
			if _, _, err := s.onForwardRoot(q, g.Marshal()); err != nil {
				t.Fatalf("Q's second root of round %d: %v", r, err)
			}
		}
		s.mu.Lock()
		held, first := len(e.fwdRoots), len(e.fwdRoots[accountKey{0, 2}].Entries)
		s.mu.Unlock()
		if held != int(window) || first != len(all) {
			t.Errorf("held %d roots (want %d), round 0's with %d entries (want the first's %d)", held, window, first, len(all))
		}

		refused := func(name string, from peer.ID, body []byte, why string) {
			t.Helper()
			if _, _, err := s.onForwardRoot(from, body); err == nil || !strings.Contains(err.Error(), why) {
				t.Errorf("%s: %v, want refused (%q)", name, err, why)
			}
		}
		// A count no decoder takes: refused for the sender or round first.
		huge := append(root(qKey, 0, 2).Marshal()[:38], 0xff, 0xff, 0xff, 0xff)
		refused("a stranger's root", newPeerID(t), huge, "its primary's")
		refused("S_0's root under Q's position", s0, huge, "its primary's")
		refused("a root past the window", q, append(root(qKey, window+1, 2).Marshal()[:38], 0xff, 0xff, 0xff, 0xff), "its primary's")
		s.mu.Lock()
		delete(e.fwdRoots, accountKey{0, 2})
		delete(e.fwdRoots, accountKey{1, 2})
		s.mu.Unlock()
		refused("another primary's slot", q, root(qKey, 0, 1, 2).Marshal(), "another primary's slot")
		refused("more entries than Q's slots", q, root(qKey, 1, append(all, 16, 17)...).Marshal(), "")

		// A receipt shown that Q's root of round 2 leaves out is logged
		// (wire.EvForward); one the root holds is not.
		s.mu.Lock()
		delete(e.fwdRoots, accountKey{2, 2})
		s.mu.Unlock()
		if _, _, err := s.onForwardRoot(q, root(qKey, 2, 3, 4).Marshal()); err != nil {
			t.Fatal(err)
		}
		show := func(sl uint32) {
			rc := wire.OnionReceipt{Epoch: e.final.ID, Round: 2, Slot: sl, Server: 2, Digest: [32]byte{byte(sl)}}
			var err error
			if rc.Sig, err = proto.Sign(qKey, proto.OnionReceiptDigest(&rc)); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.onShowReceipt(rc.Marshal()); err != nil {
				t.Fatalf("receipt of slot %d refused: %v", sl, err)
			}
		}
		show(3)
		s.mu.Lock()
		logged := len(e.fwdLogged)
		s.mu.Unlock()
		if logged != 0 {
			t.Errorf("a receipt the root holds logged against Q")
		}
		show(5)
		s.mu.Lock()
		got := maps.Clone(e.fwdLogged)
		s.mu.Unlock()
		if !got[2] || len(got) != 1 {
			t.Errorf("logged against %v, want Q (position 2) alone for slot 5", got)
		}
	})
}
