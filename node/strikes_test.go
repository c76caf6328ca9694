package node

import (
	"context"
	"crypto/rand"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/roundblame"
)

// TestClientStrikesSurviveRestart: a primary that named a client (a round
// blame's culprit, by peer id; another by the address it connected from)
// still refuses both after a restart on its data directory, with the same
// reason, and the next strike doubles the span instead of starting over
// (docs/protocol.md §8 "After a blame"; store bucket client-strikes).
func TestClientStrikesSurviveRestart(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		dir := t.TempDir()
		start := func() *Server {
			s, err := NewServer(context.Background(), ServerConfig{Network: testNet(t), DataDir: dir, Listen: []string{"/ip4/127.0.0.1/tcp/0"}, NoLAN: true, MinServers: 2})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		newPeer := func() peer.ID {
			_, pub, err := crypto.GenerateEd25519Key(rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			p, err := peer.IDFromPublicKey(pub)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
		bad, other, sameAddr := newPeer(), newPeer(), newPeer()
		const addr = "198.51.100.7"
		const number = 5
		// A round blame names bad's slot in epoch 5 at its primary (name, the
		// path every blame takes); other is struck from addr.
		s := start()
		regKey := [32]byte{1}
		e := &sepoch{pos: 0}
		e.reg.Table().RegFrom = map[[32]byte]peer.ID{regKey: bad}
		e.final = &proto.View{ID: [32]byte{9}, Chain: []peer.ID{s.ID(), newPeer()},
			Desc: &wire.Descriptor{Number: number, Clients: []wire.ClientEntry{{RegKey: regKey, Primary: 0}}}}
		s.name(e, 1, &roundblame.Culprit{Server: -1, Slot: 0, Why: "test"}, nil)
		s.mu.Lock()
		_, recs := s.strikes.Client(other, []string{addr}, number)
		before := s.clientRefusal(bad, number+1)
		s.mu.Unlock()
		s.saveStrikes(recs)
		if before == nil {
			t.Fatal("the named client is not refused before the restart")
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}

		s = start()
		defer s.Close()
		s.mu.Lock()
		defer s.mu.Unlock()
		after := s.clientRefusal(bad, number+1)
		if after == nil || after.Error() != before.Error() {
			t.Fatalf("after a restart the named client is refused with %v, want %v", after, before)
		}
		if s.clientRefusal(bad, number+blame.ExcludeEpochs+1) != nil {
			t.Fatal("refused beyond its first span")
		}
		if s.strikes.Refusal(sameAddr, []string{addr}, number+1) == nil {
			t.Fatal("after a restart a fresh peer id from the struck address is let in")
		}
		if s.strikes.Refusal(sameAddr, []string{"198.51.100.8"}, number+1) != nil || s.clientRefusal(newPeer(), number+1) != nil {
			t.Fatal("an unstruck peer or address is refused")
		}
		// The next blame doubles: 2 epochs, then 4, from where it is named.
		for i, span := range []uint64{2 * blame.ExcludeEpochs, 4 * blame.ExcludeEpochs} {
			n := uint64(number + 10*(i+1))
			if until, _ := s.strikes.Client(bad, nil, n); until != n+span {
				t.Fatalf("strike %d after a restart: refused up to %d, want %d", i+2, until, n+span)
			}
		}
	})
}
