package node

import (
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// TestPrepareFromNumbersLeader: a server prepares epoch N only for N's
// leader in its own eligible chain, chain[N mod |chain|]; the other
// server's Prepare for the same N is refused before any key is drawn, and
// so is one from a sender outside its own chain.
func TestPrepareFromNumbersLeader(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		s := loneServer(t)
		defer s.Close()
		a := newPeerID(t)
		s.roster.saw(a, "a", nil)
		chain := []peer.ID{a, s.ID()}
		sortChain(chain)
		var one wire.Cert
		prep := func(n uint64) []byte {
			p := wire.Prepare{Number: n, Params: s.cfg.Params.Wire()}
			if n == 2 {
				p.Previous = one
			}
			for _, c := range chain {
				p.Chain = append(p.Chain, []byte(c))
			}
			return p.Marshal()
		}
		// Numbers led by a, and by s.
		na, ns := uint64(1), uint64(2)
		if chain[1] != a {
			na, ns = 2, 1
		}
		// The certificate of epoch 1, kept here as if certified: a Prepare of
		// 2 carries it (certs.go).
		one = wire.Cert{Kind: wire.CertTimeout, Number: 1, Chain: [][]byte{[]byte(chain[0]), []byte(chain[1])}}
		if na == 2 && !s.cert.Keep(&one) {
			t.Fatal("certificate of 1 not kept")
		}
		if _, _, err := s.onPrepare(a, prep(ns)); err == nil || !strings.Contains(err.Error(), "leads epoch") {
			t.Fatalf("prepare of a number a does not lead: %v", err)
		}
		if _, _, err := s.onPrepare(newPeerID(t), prep(na)); err == nil || !strings.Contains(err.Error(), "outside its chain") {
			t.Fatalf("prepare from outside its chain: %v", err)
		}
		s.mu.Lock()
		held := len(s.prep)
		s.mu.Unlock()
		if held != 0 {
			t.Fatalf("refused prepares left %d prepared epochs", held)
		}
		if _, _, err := s.onPrepare(a, prep(na)); err != nil {
			t.Fatalf("prepare from the number's leader: %v", err)
		}
	})
}
