package node_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/node/client"
	"github.com/riffle-net/riffle/node/nodetest"
)

// TestChurn has clients join, act and leave one after another, as the CLI's
// share and get do, while a crowd stays. Nobody's departure may stall the
// network: the round limit is set far beyond the test's deadline, so a
// round left waiting for a departed client's slot (or a PIR answer that
// can no longer come) fails the test instead of costing a limit.
func TestChurn(t *testing.T) {
	t.Parallel()
	node.Virtual(t, func(t *testing.T) {
		if testing.Short() {
			t.Skip("runs a loopback network")
		}
		p := node.TestParams(16)
		p.RoundLimitMs = 300000
		tn := nodetest.New(t, nodetest.Config{Network: node.VirtualNet(t), Servers: 3, Clients: 3, Params: p})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		for i := 0; i < 3; i++ {
			data := nodetest.RandBytes(t, 20000+i)
			start := time.Now()
			up, err := tn.NewClient(ctx, i%3, client.ClientConfig{Logger: nodetest.Logger()})
			if err != nil {
				t.Fatal(err)
			}
			link, err := up.Share(ctx, bytes.NewReader(data), fmt.Sprintf("c%d.bin", i), false)
			up.Close()
			if err != nil {
				t.Fatalf("share %d: %v", i, err)
			}
			t.Logf("share %d: %v", i, time.Since(start))
			start = time.Now()
			down, err := tn.NewClient(ctx, (i+1)%3, client.ClientConfig{Logger: nodetest.Logger()})
			if err != nil {
				t.Fatal(err)
			}
			path, err := down.Get(ctx, link, t.TempDir())
			down.Close()
			if err != nil {
				t.Fatalf("get %d: %v", i, err)
			}
			got, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("get %d: bytes differ (%v)", i, err)
			}
			t.Logf("get %d: %v", i, time.Since(start))
		}
		// Every share and get above took an epoch or two: a server keeps only
		// the newest ended epochs besides the running one, not all of them.
		for i, s := range tn.Servers {
			kept, prep := s.EpochsHeld()
			if kept > 4 || prep > 1 {
				t.Errorf("server %d holds %d epochs and %d prepared ones", i, kept, prep)
			}
		}
	})
}
