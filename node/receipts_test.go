//go:build riffletest

package node

import (
	"context"
	"crypto/ed25519"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/leader"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestReceiptsEveryServer checks §3 (v3) "receipts": every client's
// registration reaches every chain server, each of which receipts it, and
// the client holds the m signed receipts, each checked against its
// server's key.
func TestReceiptsEveryServer(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		tn := startAnonNet(t, 3, 6, 6, testParams(8), nil)
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		defer cancel()
		type joined struct {
			v        *proto.View
			slot     uint32
			receipts []wire.Receipt
		}
		epochs := make([]*joined, len(tn.clients))
		for i, c := range tn.clients {
			if err := wait.UntilEvery(ctx, 40*time.Second, 50*time.Millisecond, func() bool {
				if v, slot, rs := c.Inspect().Receipts(); v != nil {
					epochs[i] = &joined{v, slot, rs}
					return true
				}
				return false
			}); err != nil {
				t.Fatalf("client %d joined no epoch", i)
			}
		}
		for i, e := range epochs {
			if len(e.receipts) != 3 {
				t.Fatalf("client %d holds %d receipts, want 3", i, len(e.receipts))
			}
			seen := map[uint16]bool{}
			key := e.v.Desc.Clients[e.slot].RegKey
			for _, r := range e.receipts {
				if seen[r.Server] || r.RegKey != key || r.Epoch != e.v.ID {
					t.Fatalf("client %d: receipt %+v", i, r)
				}
				seen[r.Server] = true
				if err := proto.VerifyPeerSig(e.v.Chain[r.Server], proto.ReceiptDigest(&r), r.Sig); err != nil {
					t.Fatalf("client %d: receipt of server %d: %v", i, r.Server, err)
				}
			}
			// Every server holds the registration it receipted.
			for j, s := range tn.servers {
				s.mu.Lock()
				se := s.epochs[e.v.ID]
				_, ok := se.reg.Forwarded()[key]
				s.mu.Unlock()
				if !ok {
					t.Fatalf("server %d holds no registration of client %d", j, i)
				}
			}
		}
	})
}

// TestLeaderDropsReceipted checks §3 (v3): a leader that leaves out a
// receipted registration from a selection that is not full is refused by
// every server that receipted it, its primary and the others alike; no
// final descriptor is signed.
func TestLeaderDropsReceipted(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		var mu sync.Mutex
		var dropped struct {
			id      [32]byte
			primary int
		}
		tn, logs := cheatNet(t, &leaderCheat{keys: func(keys [][32]byte, cl *leader.Closed) [][32]byte {
			k := keys[len(keys)-1]
			mu.Lock()
			dropped.id, dropped.primary = cl.All[k].Reg.Epoch, int(cl.PrimaryOf[k])
			mu.Unlock()
			return keys[:len(keys)-1]
		}})
		waitLogs(t, logs, 40*time.Second, "final descriptor refused", "receipted here")
		noFinal(t, tn)
		// A server that is neither the leader nor the registration's primary
		// refused it for its receipt.
		mu.Lock()
		id, p := dropped.id, dropped.primary
		mu.Unlock()
		var leader, primary peer.ID
		for _, s := range tn.servers {
			s.mu.Lock()
			if e := s.epochs[id]; e != nil && e.v != nil {
				leader, primary = e.leader, e.v.Chain[p]
			}
			s.mu.Unlock()
		}
		for i, s := range tn.servers {
			if s.ID() == leader || s.ID() == primary {
				continue
			}
			if err := waitUntil(20*time.Second, func() bool { return strings.Contains(logs[i].String(), "receipted here") }); err != nil {
				t.Fatalf("server %d (neither leader nor primary) did not refuse for its receipt:\n%s", i, logs[i].String())
			}
			return
		}
		t.Fatal("no server is neither the leader nor the primary")
	})
}

func waitUntil(d time.Duration, f func() bool) error {
	return wait.UntilEvery(context.Background(), d, 50*time.Millisecond, f)
}

// TestReceiptsHostile checks that a server receipts only a registration
// its named primary signed, of an epoch open here, of the registration
// size, before its close: forged signatures, wrong or closed epochs,
// senders outside the chain, primaries that name another position and
// oversized registrations are refused before any proof is checked and
// change nothing; a good one is receipted with this server's signature.
func TestReceiptsHostile(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		f := newHostileFixture(t)
		e := f.open // chain a, s, b; led by a; open here
		f.s.mu.Lock()
		e.leader = f.a.id
		f.s.mu.Unlock()
		good := func(ep *sepoch, pos uint16, pk peerKey, size int) wire.Forwarded {
			fw := wire.Forwarded{Primary: pos, Reg: wire.Register{Epoch: ep.v.ID, XKey: [32]byte{7}, Reg: make([]byte, size)}}
			copy(fw.Reg.RegKey[:], f.clients[0].Public().(ed25519.PublicKey))
			dg := proto.RegisterDigest(&fw.Reg)
			copy(fw.Reg.Sig[:], ed25519.Sign(f.clients[0], dg[:]))
			var err error
			if fw.Sig, err = proto.Sign(pk.priv, proto.ForwardDigest(&fw)); err != nil {
				t.Fatal(err)
			}
			return fw
		}
		size := mix.RegistrationSize(3)
		forged := good(e, 0, f.a, size)
		forged.Sig[5] ^= 1
		oversized := good(e, 0, f.a, size+1)
		runHostile(t, f, []hostileCase{
			{name: "forged primary signature", run: func() error { return handlerErr(f.s.regs.OnForwarded(f.a.id, forged.Marshal())) }},
			{name: "signed by another server", run: func() error {
				fw := good(e, 0, f.b, size)
				return handlerErr(f.s.regs.OnForwarded(f.a.id, fw.Marshal()))
			}},
			{name: "names another position", run: func() error {
				fw := good(e, 2, f.a, size)
				return handlerErr(f.s.regs.OnForwarded(f.a.id, fw.Marshal()))
			}},
			{name: "from outside the chain", run: func() error {
				fw := good(e, 0, f.stranger, size)
				return handlerErr(f.s.regs.OnForwarded(f.stranger.id, fw.Marshal()))
			}},
			{name: "unknown epoch", run: func() error {
				fw := good(&sepoch{v: &proto.View{ID: [32]byte{0xEE}}}, 0, f.a, size)
				return handlerErr(f.s.regs.OnForwarded(f.a.id, fw.Marshal()))
			}},
			{name: "closed epoch", run: func() error {
				fw := good(f.mid, 0, f.a, size)
				return handlerErr(f.s.regs.OnForwarded(f.a.id, fw.Marshal()))
			}},
			{name: "oversized registration", run: func() error { return handlerErr(f.s.regs.OnForwarded(f.a.id, oversized.Marshal())) }},
			{name: "over the generic cap", run: func() error {
				fw := good(e, 0, f.a, proto.GenericLimits().Reg+1)
				return handlerErr(f.s.regs.OnForwarded(f.a.id, fw.Marshal()))
			}},
			{name: "receipts asked by a stranger", run: func() error {
				q := wire.ReceiptSet{Epoch: e.v.ID, RegKey: forged.Reg.RegKey}
				return handlerErr(f.s.regs.OnReceiptSet(f.stranger.id, q.Marshal()))
			}},
		})
		// The forged one's messages say why, before any proof.
		if _, _, err := f.s.regs.OnForwarded(f.a.id, forged.Marshal()); err == nil || !strings.Contains(err.Error(), "bad signature") {
			t.Fatalf("forged: %v", err)
		}
		if _, _, err := f.s.regs.OnForwarded(f.a.id, oversized.Marshal()); err == nil || !strings.Contains(err.Error(), "bytes") {
			t.Fatalf("oversized: %v", err)
		}
		// A good one (this server does not lead: no proof now, the leader's
		// list is verified in batch) is receipted, signed by this server.
		fw := good(e, 0, f.a, size)
		typ, rep, err := f.s.regs.OnForwarded(f.a.id, fw.Marshal())
		if err != nil || typ != wire.TypeReceipt {
			t.Fatalf("good forward: %v", err)
		}
		var r wire.Receipt
		if err := r.Unmarshal(rep); err != nil || len(rep) != wire.ReceiptSize {
			t.Fatal(err)
		}
		if err := proto.CheckReceipt(&r, e.v.ID, &fw.Reg, e.v.Chain); err != nil || r.Server != 1 {
			t.Fatalf("receipt: %v (server %d)", err, r.Server)
		}
		// The same again is receipted again; another under its key is not.
		if _, _, err := f.s.regs.OnForwarded(f.a.id, fw.Marshal()); err != nil {
			t.Fatalf("a resend: %v", err)
		}
		other := good(e, 0, f.a, size)
		other.Reg.XKey[0] = 9
		other.Sig, _ = proto.Sign(f.a.priv, proto.ForwardDigest(&other))
		if _, _, err := f.s.regs.OnForwarded(f.a.id, other.Marshal()); err == nil {
			t.Fatal("a second registration under one key was receipted")
		}
	})
}
