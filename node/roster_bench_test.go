package node

import (
	"context"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/riffle-net/riffle/node/transport/memnet"
)

// BenchmarkHelloTick is one tick of the roster's hellos (roster.Hellos.Loop) from a server
// whose roster holds 4 live servers and 252 ids that never answer (peers
// that said hello once and left, kept for rosterForget): a hello built for
// each target (each, as sayHello does) against one for the tick (once).
func BenchmarkHelloTick(b *testing.B) {
	net := memnet.New(memnet.Link{}, 1)
	h, err := net.NewHost(nil, []string{"/ip4/127.0.0.1/tcp/0"})
	if err != nil {
		b.Fatal(err)
	}
	s := &Server{h: h, cfg: ServerConfig{Nick: "bench"}, log: quietLogger()}
	addr := ma.StringCast("/ip4/127.0.0.1/tcp/4001")
	var targets []peer.ID
	for i := range 256 {
		k, _, err := crypto.GenerateEd25519Key(nil)
		if err != nil {
			b.Fatal(err)
		}
		id, err := peer.IDFromPrivateKey(k)
		if err != nil {
			b.Fatal(err)
		}
		s.roster.saw(id, "", []ma.Multiaddr{addr})
		if i >= 4 {
			s.roster.Expire(id)
		}
		targets = append(targets, id)
	}
	ctx := context.Background()
	b.Run("each", func(b *testing.B) {
		for b.Loop() {
			for _, id := range targets {
				_ = s.sayHello(ctx, id)
			}
		}
	})
	b.Run("once", func(b *testing.B) {
		for b.Loop() {
			body := s.hellos.Hello().Marshal()
			for _, id := range targets {
				_ = s.hellos.Send(ctx, id, body)
			}
		}
	})
}
