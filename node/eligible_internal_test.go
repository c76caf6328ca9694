package node

import (
	"context"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// TestNewcomerPrepareWithdraws (§3 "Who may serve"): number 1 without
// founders puts nobody on probation (a brand-new group forms); past it, a
// peer id that no certificate held here records, in a chain or as a
// candidate, is on probation, and a Prepare whose chain holds it gets a
// withdrawal, not a refusal.
func TestNewcomerPrepareWithdraws(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		s, err := NewServer(context.Background(), ServerConfig{Network: testNet(t), DataDir: t.TempDir(), Listen: []string{"/ip4/127.0.0.1/tcp/0"}, NoLAN: true, Store: NewMemStore(), Probation: 3, MinServers: 2})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		old, fresh := newPeerID(t), newPeerID(t)
		s.roster.saw(old, "old", nil)
		s.roster.saw(fresh, "fresh", nil)
		if err := s.eligible(fresh); err != nil {
			t.Fatalf("number 1 without founders put %s on probation: %v", fresh.ShortString(), err)
		}
		lead := []peer.ID{old, s.ID(), fresh}
		sortChain(lead)
		prep := wire.Prepare{Number: 6, Params: s.cfg.Params.Wire()}
		for _, p := range lead {
			prep.Chain = append(prep.Chain, []byte(p))
		}
		_, _, err = s.onPrepare(lead[0], prep.Marshal())
		if err == nil || !strings.Contains(err.Error(), withdrawMark) || !strings.Contains(err.Error(), "probation") {
			t.Fatalf("prepare of 6 with a newcomer no certificate records: %v", err)
		}
	})
}
