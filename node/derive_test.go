package node

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestLeftOutRefused: a Prepare of N whose chain leaves out a live, honest
// server of N−1's certificate is refused (the leader cannot drop a server
// without cause), and taken when the left-out server withdraws when asked
// (its pins exclude the leader) or is not live. The leader is the one of
// the chain derived from the certificate.
func TestLeftOutRefused(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		newSrv := func(allow []peer.ID) *Server {
			s, err := NewServer(context.Background(), ServerConfig{Network: testNet(t), DataDir: t.TempDir(), Listen: []string{"/ip4/127.0.0.1/tcp/0"}, NoLAN: true, Store: NewMemStore(), MinServers: 2, AllowServers: allow})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
		// A prepares number 2 to B with the chain {A, B}, the certificate of
		// 1 being over {A, B, C}; A is a key only, B and C are servers.
		run := func(cPins bool, cLive bool) error {
			b := newSrv(nil)
			var a certKey
			var allow []peer.ID
			var c *Server
			for {
				a = newCertKeys(t, 1)[0]
				if cPins {
					allow = []peer.ID{b.h.ID()} // not A
				}
				c = newSrv(allow)
				ids := []peer.ID{a.id, b.h.ID(), c.h.ID()}
				sortChain(ids)
				if proto.LeaderOf(2, ids) == a.id {
					break
				}
				c.Close()
			}
			b.roster.saw(a.id, "a", nil)
			b.roster.saw(c.h.ID(), "c", nil)
			b.h.AddAddrs(c.h.ID(), c.h.Addrs(), time.Hour)
			c.roster.saw(b.h.ID(), "b", nil)
			keys := []certKey{a, {b.h.ID(), b.priv}, {c.h.ID(), c.priv}}
			sortKeys(keys)
			prev := finalCertOf(t, keys, keys, 1, heldEpoch(t, b, 1))
			// C holds 1's descriptor and certificate, as a server of 1's
			// chain does, so that it would hold 2's window.
			heldEpoch(t, c, 1)
			c.cert.Add(prev)
			if !cLive {
				c.Close()
			}
			ch := []peer.ID{a.id, b.h.ID()}
			sortChain(ch)
			p := wire.Prepare{Number: 2, Nonce: [32]byte{9}, Params: b.cfg.Params.Wire(), Chain: proto.ChainIDs(ch), Previous: *prev}
			if d := b.derivedChain(prev); len(d) != 3 || proto.LeaderOf(2, d) != a.id {
				t.Fatalf("derived chain %v, want A, B and C led by A", d)
			}
			_, _, err := b.onPrepare(a.id, p.Marshal())
			return err
		}
		if err := run(false, true); err == nil || !strings.Contains(err.Error(), "leaves out") {
			t.Errorf("a chain leaving out an honest live server of the certificate: %v", err)
		}
		if err := run(true, true); err != nil {
			t.Errorf("a chain leaving out a server that withdraws: %v", err)
		}
		if err := run(false, false); err != nil {
			t.Errorf("a chain leaving out a server that is down: %v", err)
		}
	})
}
