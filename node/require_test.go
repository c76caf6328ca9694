package node_test

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/node/client"
	"github.com/riffle-net/riffle/node/nodetest"
)

// TestRequireServer: a client pinned to a server that is not in the chain
// refuses every epoch (§3 v2), while the others run.
func TestRequireServer(t *testing.T) {
	t.Parallel()
	node.Virtual(t, func(t *testing.T) {
		tn := nodetest.New(t, nodetest.Config{Network: node.VirtualNet(t), Servers: 3, Clients: 2, Params: node.TestParams(16)})
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
		pinned, err := tn.NewClient(ctx, 1, client.ClientConfig{Require: []peer.ID{absent}})
		if err != nil {
			t.Fatal(err)
		}
		defer pinned.Close()
		present, err := tn.NewClient(ctx, 2, client.ClientConfig{Require: []peer.ID{tn.Servers[0].ID()}})
		if err != nil {
			t.Fatal(err)
		}
		defer present.Close()
		if err := wait.Until(ctx, time.Minute, func() bool {
			return present.Stats().Rounds >= 3 && tn.Clients[0].Stats().Epochs >= 2
		}); err != nil {
			t.Fatal("the network never ran")
		}
		if st := pinned.Stats(); st.Epochs != 0 || pinned.AnonymitySet() != 0 {
			t.Fatalf("client pinned to an absent server joined %d epochs", st.Epochs)
		}
	})
}
