package node_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/node/nodetest"
)

// waitLed waits until every server of tn opened an epoch as leader.
func waitLed(t *testing.T, tn *nodetest.Net, within time.Duration, skip int) {
	t.Helper()
	if err := wait.Until(context.Background(), within, func() bool {
		all := true
		for i, s := range tn.Servers {
			all = all && (i == skip || s.Led() > 0)
		}
		return all
	}); err != nil {
		var led []int
		for _, s := range tn.Servers {
			led = append(led, s.Led())
		}
		t.Fatalf("epochs led per server after %v: %v (last number %d)", within, led, tn.Servers[0].LastNumber())
	}
}

// TestRotatingLeader: the leader of epoch N is chain[N mod |chain|], so
// that three servers running epochs 1, 2, 3 each lead one (before, the
// lowest peer id led every epoch).
func TestRotatingLeader(t *testing.T) {
	t.Parallel()
	node.Virtual(t, func(t *testing.T) {
		tn := nodetest.New(t, nodetest.Config{Network: node.VirtualNet(t), Servers: 3, Clients: 2, Params: node.TestParams(2)})
		waitLed(t, tn, 40*time.Second, -1)
	})
}

// TestSilentLeader: a leader that never leads costs one T_lead per turn.
// The server with the lowest peer id asks for more servers than the group
// has (--min-servers 4 of 3), so it follows but never leads: the others
// sign a timeout of its number 3 after T_lead, and the timeout certificate
// lets the next leader run number 4, which every server, the silent one
// included, takes with that certificate (certs.go; before, each server
// moved past the number on its own, and nothing was certified).
func TestSilentLeader(t *testing.T) {
	t.Parallel()
	node.Virtual(t, func(t *testing.T) {
		dir := t.TempDir()
		ids := serverIDs(t, dir, 3)
		silent := 0
		for i := range ids {
			if bytes.Compare([]byte(ids[i]), []byte(ids[silent])) < 0 {
				silent = i
			}
		}
		tn := nodetest.New(t, nodetest.Config{Network: node.VirtualNet(t), Servers: 3, Clients: 2, MinServers: 3, Dir: dir, Params: node.TestParams(2), Server: func(i int, c *node.ServerConfig) {
			c.LeaderTimeout = time.Second
			if i == silent {
				c.MinServers = 4
			}
		}})
		waitLed(t, tn, 40*time.Second, silent)
		if tn.Servers[silent].Led() != 0 {
			t.Fatal("the silent server led an epoch")
		}
		// Past the silent leader's turn: epochs go on.
		waitNumber(t, tn.Servers[(silent+1)%3], 4, 30*time.Second)
		for i, s := range tn.Servers {
			if err := wait.Until(context.Background(), 30*time.Second, func() bool { return s.CertTop() >= 4 }); err != nil {
				t.Fatalf("server %d: numbers certified up to %d, want 4", i, s.CertTop())
			}
			// The group chain is sorted: the silent server is first, so it
			// leads 3 (3 mod 3 = 0), whose certificate is a timeout.
			if k := s.CertKind(3); k != wire.CertTimeout {
				t.Errorf("server %d: certificate of the silent leader's number 3 of kind %d, want a timeout", i, k)
			}
			if k := s.CertKind(4); k != wire.CertFinal {
				t.Errorf("server %d: certificate of number 4 of kind %d, want a final descriptor", i, k)
			}
		}
	})
}
