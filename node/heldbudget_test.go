package node

import (
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestDryBudgets (§5.4, principle 3): a server at chain position 1 of
// [S_0, it, Q], primary of 2 of 16 slots, Q of the other 14. S_0 hands
// on Q's dry statements of every slot of Q for every round of the window
// (84); the server then still signs its own slots dry, and still keeps a
// dry statement of another primary. Before, the dry statements held here
// shared one cap (4n + 16 = 80) that Q's alone filled: the server signed
// nothing dry and kept nothing more. And a DrySet from a peer other than
// S_0 is refused before it is decoded: before, 4096 statements from a
// stranger were decoded (about 1 MiB a call) and then refused.
func TestDryBudgets(t *testing.T) {
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

		sign := func(key crypto.PrivKey, pos uint16, r, sl uint32) wire.Dry {
			d := wire.Dry{Epoch: e.final.ID, Round: r, Slot: sl, Server: pos}
			var err error
			if d.Sig, err = proto.Sign(key, proto.DryDigest(&d)); err != nil {
				t.Fatal(err)
			}
			return d
		}
		flood := 0
		for r := range window {
			set := wire.DrySet{Epoch: e.final.ID, Round: r}
			for sl := uint32(2); sl < 16; sl++ {
				set.Dries = append(set.Dries, sign(qKey, 2, r, sl))
			}
			flood += len(set.Dries)
			if _, _, err := s.onDrySet(s0, set.Marshal()); err != nil {
				t.Fatalf("S_0's dry set of round %d refused: %v", r, err)
			}
		}
		s.mu.Lock()
		held := len(e.dries)
		_, own := s.signDryLocked(e, 1, 0)
		s.mu.Unlock()
		t.Logf("%d of Q's %d dry statements held", held, flood)
		if !own {
			t.Errorf("after Q's %d dry statements, this primary could not sign its own slot dry", flood)
		}
		if held != flood {
			t.Errorf("held %d of Q's %d dry statements of the window", held, flood)
		}

		// A stranger's DrySet: refused for its sender before its
		// statements are decoded (here, a count no decoder takes).
		body := append((&wire.DrySet{Epoch: e.final.ID, Round: 0}).Marshal()[:36], 0xff, 0xff, 0xff, 0xff)
		_, _, err := s.onDrySet(newPeerID(t), body)
		if err == nil || !strings.Contains(err.Error(), "come from S_0") {
			t.Errorf("a stranger's dry set refused for %v, not for its sender", err)
		}
	})
}
