package roster

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/transport"
)

// fakeHost is the part of a host a hello's answer uses.
type fakeHost struct {
	transport.Host
	id    peer.ID
	added map[peer.ID]bool
}

func (h *fakeHost) ID() peer.ID { return h.id }
func (h *fakeHost) Addrs() []ma.Multiaddr {
	return []ma.Multiaddr{ma.StringCast("/ip4/10.0.0.1/tcp/4001")}
}
func (h *fakeHost) AddAddrs(p peer.ID, _ []ma.Multiaddr, _ time.Duration) { h.added[p] = true }

func realID(t *testing.T) peer.ID {
	t.Helper()
	priv, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestOnHello (§3): a server's hello is recorded (Saw) and answered with
// this server's, and the servers it gossips become candidates, dialled
// only by a hello of this server's; a client's hello is answered and
// records nothing; a hello of another version is refused.
func TestOnHello(t *testing.T) {
	self, from, gossiped := realID(t), realID(t), realID(t)
	h := &fakeHost{id: self, added: map[peer.ID]bool{}}
	saw := map[peer.ID]string{}
	hs := &Hellos{Table: &Table{}, H: h, Version: 3, Nick: "me", Log: slog.New(slog.DiscardHandler),
		Saw: func(id peer.ID, nick string, _ []ma.Multiaddr) { saw[id] = nick }}
	p2p, _ := ma.NewComponent("p2p", gossiped.String())
	hello := &wire.Hello{Version: 3, Role: RoleServer, Nick: []byte("them"),
		Addrs: [][]byte{ma.StringCast("/ip4/10.0.0.2/tcp/4001").Bytes()},
		Peers: [][]byte{ma.StringCast("/ip4/10.0.0.3/tcp/4001").Encapsulate(p2p.Multiaddr()).Bytes()}}
	typ, rep, err := hs.OnHello(context.Background(), from, wire.TypeHello, hello.Marshal())
	if err != nil || typ != wire.TypeHello {
		t.Fatalf("server hello: %v %v", typ, err)
	}
	if got, _, err := ParseHello(rep, 3); err != nil || string(got.Nick) != "me" {
		t.Fatalf("answer: %+v %v", got, err)
	}
	if saw[from] != "them" || !h.added[from] {
		t.Fatalf("server hello not recorded: saw %v, addresses %v", saw, h.added)
	}
	next := map[peer.ID]bool{}
	hs.Table.Targets(next)
	if _, ok := saw[gossiped]; ok || !h.added[gossiped] || !next[gossiped] {
		t.Fatalf("gossiped server: saw %v, addresses %v, next hellos %v", saw, h.added, next)
	}
	client := realID(t)
	hello.Role, hello.Peers = 0, nil
	if _, _, err := hs.OnHello(context.Background(), client, wire.TypeHello, hello.Marshal()); err != nil {
		t.Fatalf("client hello: %v", err)
	}
	if _, ok := saw[client]; ok || h.added[client] {
		t.Fatal("a client's hello recorded as a server's")
	}
	hello.Version = 2
	if _, _, err := hs.OnHello(context.Background(), realID(t), wire.TypeHello, hello.Marshal()); err == nil {
		t.Fatal("a hello of another version answered")
	}
}
