//go:build riffletest

package node

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestLateLeaderTimedOut (issue 25): at m = 3, with a founder that never
// votes a timeout (its --min-servers above the group, as in
// TestTimeoutVoteFlood), an honest leader that prepares its number more
// than T_lead after the number before ended. The other server signed the
// number's timeout, so it refuses the open descriptor; a timeout needs
// two signatures and the leader's did not count, so the group held at
// that number for good (TestTimeoutVoteFlood's stall at number 9 or 10).
// Now the leader signs the timeout of its own number too once no open
// descriptor of it came within T_lead, and leads it no more: the two
// certify it and epochs go on.
func TestLateLeaderTimedOut(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		const silent, late = 0, 1
		fn := startFounded(t, 3, 2, 2, testParams(2), func(i int, c *ServerConfig) {
			c.LeaderTimeout = time.Second
			switch i {
			case silent:
				c.MinServers = 4
			case late:
				// Its turn comes up to ten T_lead after the number
				// before ended: the other voter has signed the
				// timeout by then.
				c.Timing.LeaderPoll = 10 * time.Second
			}
		})
		fn.waitEpochs(t, 0, 5*time.Minute)
		e0 := fn.epochs()
		n0 := fn.servers[late].cert.Top()
		if err := wait.Until(context.Background(), 5*time.Minute, func() bool { return fn.epochs() >= e0+3 }); err != nil {
			t.Fatalf("epochs: %d after %d, numbers %v", fn.epochs(), e0, fn.numbers())
		}
		// The late leader's numbers ended in timeouts it signed.
		id := fn.servers[late].ID()
		own := 0
		for n := n0 + 1; n <= fn.servers[late].cert.Top(); n++ {
			c, ok := fn.servers[late].cert.Of(n)
			if !ok || c.Kind != wire.CertTimeout {
				continue
			}
			chain := make([]peer.ID, len(c.Chain))
			for i, b := range c.Chain {
				chain[i] = peer.ID(b)
			}
			if proto.LeaderOf(n, chain) != id {
				continue
			}
			for _, sg := range c.Sigs {
				if chain[sg.Index] == id {
					own++
				}
			}
		}
		if own == 0 {
			t.Errorf("no timeout certificate of numbers %d–%d signed by their leader", n0+1, fn.servers[late].cert.Top())
		}
		t.Logf("3 epochs past the late leader's turns; %d of its numbers timed out by its own signature; numbers %v", own, fn.numbers())
	})
}
