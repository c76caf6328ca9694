package node

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

// TestRequireServer: a client pinned to a server that is not in the chain
// refuses every epoch (§3 v2), while the others run.
func TestRequireServer(t *testing.T) {
	tn := startNet(t, 3, 2, testParams(16))
	_, pub, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	absent, err := peer.IDFromPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pinned, err := NewClient(ctx, ClientConfig{MinAnonymity: 1, Server: tn.servers[1].Addrs()[0].String(), Require: []peer.ID{absent}})
	if err != nil {
		t.Fatal(err)
	}
	defer pinned.Close()
	present, err := NewClient(ctx, ClientConfig{MinAnonymity: 1, Server: tn.servers[2].Addrs()[0].String(), Require: []peer.ID{tn.servers[0].ID()}})
	if err != nil {
		t.Fatal(err)
	}
	defer present.Close()
	for present.Stats().Rounds < 3 || tn.clients[0].Stats().Epochs < 2 {
		if ctx.Err() != nil {
			t.Fatal("the network never ran")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st := pinned.Stats(); st.Epochs != 0 || pinned.AnonymitySet() != 0 {
		t.Fatalf("client pinned to an absent server joined %d epochs", st.Epochs)
	}
}
