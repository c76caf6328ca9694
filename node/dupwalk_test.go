//go:build riffletest

package node_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/node/client"
	"github.com/riffle-net/riffle/node/nodetest"
)

// leak models a malicious S_0: it learns every value U_{i,0} = b − x_0·a a
// client registers (component 0 is under A_{0,0} = X_0 alone) and hands
// the victim's to an accomplice in the same epoch.
type leak struct {
	mu   sync.Mutex
	u0   map[[32]byte]*group.Element
	seen chan struct{}
}

func newLeak() *leak { return &leak{u0: map[[32]byte]*group.Element{}, seen: make(chan struct{}, 64)} }

// victim records the victim's U_{i,0} as S_0 would decrypt it.
func (l *leak) victim(epoch [32]byte, _ []*group.Element, _ ed25519.PublicKey, cs *mix.ClientSecret, _ *mix.Registration) {
	U0, err := cs.Share(0)
	if err != nil {
		return
	}
	l.mu.Lock()
	l.u0[epoch] = U0
	l.mu.Unlock()
	l.seen <- struct{}{}
}

// accomplice replaces its component 0 by a fresh encryption of the
// victim's U_{i,0}: a registration every check accepts, whose value it
// cannot prove.
func (l *leak) accomplice(epoch [32]byte, serverKeys []*group.Element, regKey ed25519.PublicKey, _ *mix.ClientSecret, reg *mix.Registration) {
	deadline := time.After(2 * time.Second)
	for {
		l.mu.Lock()
		U0 := l.u0[epoch]
		l.mu.Unlock()
		if U0 != nil {
			ct, pf, err := mix.SealComponent(mix.EpochID(epoch), regKey, serverKeys, 0, U0, rand.Reader)
			if err == nil {
				reg.Ciphertexts[0], reg.Proofs[0] = ct, pf
			}
			return
		}
		select {
		case <-l.seen:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			return
		}
	}
}

// lowKey is a registration key whose public key sorts before almost every
// drawn one: the accomplice registers "first" (slot order is by
// registration key), so that a walk of only the later position lands on
// the victim.
func lowKey() func() ed25519.PrivateKey {
	var seed [32]byte
	for i := 0; ; i++ {
		seed[0], seed[1], seed[2] = byte(i), byte(i>>8), byte(i>>16)
		k := ed25519.NewKeyFromSeed(seed[:])
		if pub := k.Public().(ed25519.PublicKey); pub[0] == 0 && pub[1] < 0x10 {
			return func() ed25519.PrivateKey { return k }
		}
	}
}

func contains(ps []peer.ID, p peer.ID) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

// dupNet starts 3 servers and 4 clients: client 0 the victim, client 1
// the accomplice answering as given.
func dupNet(t *testing.T, answer client.DupAnswer) *nodetest.Net {
	l := newLeak()
	low := lowKey()
	// MinClients 3: the next epochs run without the accomplice.
	return nodetest.New(t, nodetest.Config{Network: node.VirtualNet(t), Servers: 3, Clients: 4, MinClients: 3, Params: node.TestParams(8),
		Client: func(i int, c *client.ClientConfig) {
			switch i {
			case 0:
				node.SetDupTest(c, l.victim, client.DupHonest, nil)
			case 1:
				node.SetDupTest(c, l.accomplice, answer, low)
			}
		}})
}

// waitEnded waits until every server has been seen holding an epoch
// ended for reason (servers forget old epochs: each is noted when seen).
func waitEnded(t *testing.T, tn *nodetest.Net, reason string) {
	t.Helper()
	seen := map[int]bool{}
	err := wait.Until(context.Background(), 40*time.Second, func() bool {
		for i, s := range tn.Servers {
			if s.EndedWith(reason) {
				seen[i] = true
			}
		}
		return len(seen) == len(tn.Servers)
	})
	if err != nil {
		t.Fatalf("no setup ended with %q at every server within 40 s", reason)
	}
}

// TestDupFramedHonestClient: a malicious S_0 gives an honest client's
// U_{i,0} to an accomplice that registers a copy first (§4.1 v3). Both
// slots are walked and asked to prove; the honest client proves, the
// accomplice answers with a proof that fails. The accomplice is named,
// the honest client never (walking only the later position named it), and
// the honest client runs rounds in a later epoch.
func TestDupFramedHonestClient(t *testing.T) {
	t.Parallel()
	node.Virtual(t, func(t *testing.T) {
		tn := dupNet(t, client.DupForge)
		victim, acc := tn.Clients[0].Inspect().PeerID(), tn.Clients[1].Inspect().PeerID()
		waitEnded(t, tn, "setup share fault: client excluded")
		var banned []peer.ID
		for _, s := range tn.Servers {
			banned = append(banned, s.Banned()...)
			if contains(s.LeftOut(), victim) {
				t.Error("the honest client is left out")
			}
		}
		if contains(banned, victim) {
			t.Fatalf("the honest client is named (banned %v)", banned)
		}
		if !contains(banned, acc) {
			t.Fatalf("the accomplice is not named (banned %v)", banned)
		}
		// The honest client takes part in a later epoch's rounds.
		if err := wait.Until(context.Background(), 30*time.Second, func() bool { return tn.Clients[0].Stats().Rounds > 0 }); err != nil {
			t.Fatal("the honest client ran no round in a later epoch within 30 s")
		}
	})
}

// TestDupBothProve: two clients that hold one discrete log (u_{i,1}
// drawn equal) both prove it; both are culprits, named in the same setup.
func TestDupBothProve(t *testing.T) {
	t.Parallel()
	node.Virtual(t, func(t *testing.T) {
		tn := nodetest.New(t, nodetest.Config{Network: node.VirtualNet(t), Servers: 3, Clients: 4, Params: node.TestParams(8),
			Client: func(i int, c *client.ClientConfig) {
				if i == 1 || i == 2 {
					c.Rand = &dupReader{}
				}
			}})
		waitEnded(t, tn, "setup share fault: client excluded")
		var banned []peer.ID
		for _, s := range tn.Servers {
			banned = append(banned, s.Banned()...)
		}
		for i, c := range tn.Clients {
			if bad := i == 1 || i == 2; bad != contains(banned, c.Inspect().PeerID()) {
				t.Errorf("client %d: culprit %v, banned %v", i, bad, contains(banned, c.Inspect().PeerID()))
			}
		}
	})
}

// TestDupSilent: the accomplice does not answer. Nobody is named; the
// silent client is only left out of the next epoch, the honest one is
// not.
func TestDupSilent(t *testing.T) {
	t.Parallel()
	node.Virtual(t, func(t *testing.T) {
		tn := dupNet(t, client.DupSilent)
		victim, acc := tn.Clients[0].Inspect().PeerID(), tn.Clients[1].Inspect().PeerID()
		waitEnded(t, tn, "setup duplicate share: nobody named")
		var left []peer.ID
		for _, s := range tn.Servers {
			if b := s.Banned(); len(b) > 0 {
				t.Errorf("named %v after a silent client", b)
			}
			left = append(left, s.LeftOut()...)
		}
		if contains(left, victim) || !contains(left, acc) {
			t.Errorf("left out %v: want the accomplice %s only", left, acc)
		}
	})
}
