package node

import (
	"context"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/certs"
)

// TestProbationPersists: the chains a server signed are kept in its data
// directory, so that probation holds across a restart. A server with no
// chain on record puts nobody on probation (a brand-new group forms); after
// a restart with one on record, a new peer id waits P_prob epochs, a peer
// of a recorded chain does not, and a chain holding the newcomer is
// refused as a withdrawal.
func TestProbationPersists(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		dir := t.TempDir()
		start := func() *Server {
			s, err := NewServer(context.Background(), ServerConfig{Network: testNet(t), DataDir: dir, Listen: []string{"/ip4/127.0.0.1/tcp/0"}, NoLAN: true, Store: NewMemStore(), Probation: 3, MinServers: 2})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		old, fresh := newPeerID(t), newPeerID(t)
		s := start()
		s.roster.saw(fresh, "fresh", nil)
		if err := s.eligible(fresh); err != nil {
			t.Fatalf("bootstrap: a server with no chain on record put %s on probation: %v", fresh.ShortString(), err)
		}
		chain := []peer.ID{old, s.ID()}
		sortChain(chain)
		if err := certs.SaveNumber(dir, 5); err != nil {
			t.Fatal(err)
		}
		if err := s.who.Record(dir, 5, chain); err != nil {
			t.Fatal(err)
		}
		s.Close()

		s = start()
		defer s.Close()
		if err := s.eligible(old); err != nil {
			t.Fatalf("a server of a recorded chain on probation after a restart: %v", err)
		}
		s.roster.saw(old, "old", nil)
		s.roster.saw(fresh, "fresh", nil)
		err := s.eligible(fresh)
		if err == nil || !strings.Contains(err.Error(), "on probation here until epoch 8") || !strings.Contains(err.Error(), withdrawMark) {
			t.Fatalf("a new peer id after a restart: %v", err)
		}
		if ec := s.eligibleChain(); len(ec) != 2 {
			t.Fatalf("eligible chain %v holds the probationer", ec)
		}
		// A leader proposing the newcomer gets a withdrawal.
		lead := []peer.ID{old, s.ID(), fresh}
		sortChain(lead)
		prep := wire.Prepare{Number: 6, Params: s.cfg.Params.Wire()}
		for _, p := range lead {
			prep.Chain = append(prep.Chain, []byte(p))
		}
		if _, _, err := s.onPrepare(lead[0], prep.Marshal()); err == nil || !strings.Contains(err.Error(), withdrawMark) {
			t.Fatalf("prepare with a probationer: %v", err)
		}
		// Three epochs later it may serve.
		s.mu.Lock()
		s.number = 8
		s.mu.Unlock()
		if err := s.eligible(fresh); err != nil {
			t.Fatalf("after its probation: %v", err)
		}
	})
}
