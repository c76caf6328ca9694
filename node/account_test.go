//go:build riffletest

package node

import (
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestAccountGiven (§5.4 "The root is binding"): a server at chain
// position 1 of [S_0, it, Q], Q primary of slots 2 and 3, takes Q's
// accounts of round 2 as its asks do. Counted: a final account that says
// Q forwarded the round with a root covering the receipts shown, or says
// it forwarded nothing with slot 3 unreceipted. Not counted: one signed
// before the end, one saying it forwarded nothing while it receipts both
// slots, one whose root is another round's or leaves a shown receipt
// out (that root is then evidence, wire.EvForward). A final account Q
// gave early, before its client showed the receipt it leaves out, is
// evidence once the receipt is shown (wire.EvAccount, the rev44 review's
// N3: before, a receipt shown after an ask was never held against its
// answer, so an early empty account let Q say it forwarded nothing).
func TestAccountGiven(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		s := loneServer(t)
		defer s.Close()
		_, s0 := replayKey(t)
		qKey, q := replayKey(t)
		chain := []peer.ID{s0, s.ID(), q}
		regFrom := make([]peer.ID, 4)
		for i := range regFrom {
			regFrom[i] = newPeerID(t)
		}
		e := fixtureChain(t, s, chain, 1, regFrom...)
		s.mu.Lock()
		e.final.Desc.Clients[2].Primary, e.final.Desc.Clients[3].Primary = 2, 2
		for r := range e.final.Desc.Params.Rounds {
			e.round(r).list = nil // no final list yet
		}
		s.mu.Unlock()

		entry := func(sl uint32) wire.AccountEntry { return wire.AccountEntry{Slot: sl, Digest: [32]byte{byte(sl)}} }
		sign := func(key crypto.PrivKey, a *wire.Account) *wire.Account {
			var err error
			if a.Sig, err = proto.Sign(key, proto.AccountDigest(a)); err != nil {
				t.Fatal(err)
			}
			return a
		}
		root := func(r uint32, slots ...uint32) *wire.ForwardRoot {
			f := &wire.ForwardRoot{Epoch: e.final.ID, Round: r, Server: 2}
			for _, sl := range slots {
				f.Entries = append(f.Entries, entry(sl))
			}
			var err error
			if f.Sig, err = proto.Sign(qKey, proto.ForwardRootDigest(f)); err != nil {
				t.Fatal(err)
			}
			return f
		}
		account := func(ended bool, f *wire.ForwardRoot, slots ...uint32) *wire.Account {
			a := &wire.Account{Epoch: e.final.ID, Round: 2, Server: 2, Ended: ended, Forwarded: f != nil, Root: f}
			for _, sl := range slots {
				a.Entries = append(a.Entries, entry(sl))
			}
			return sign(qKey, a)
		}
		receipt := func(sl uint32) wire.OnionReceipt {
			rc := wire.OnionReceipt{Epoch: e.final.ID, Round: 2, Slot: sl, Server: 2, Digest: [32]byte{byte(sl)}}
			var err error
			if rc.Sig, err = proto.Sign(qKey, proto.OnionReceiptDigest(&rc)); err != nil {
				t.Fatal(err)
			}
			return rc
		}
		reset := func() {
			s.mu.Lock()
			e.fwdRoots, e.accounts, e.fwdLogged, e.accLogged, e.shown = nil, nil, nil, nil, nil
			s.mu.Unlock()
		}
		shown := []wire.OnionReceipt{receipt(2)}
		for _, c := range []struct {
			name string
			a    *wire.Account
			want bool
		}{
			{"final, its root covering the receipt", account(true, root(2, 2, 3), 2, 3), true},
			{"final, nothing forwarded, slot 3 unreceipted", account(true, nil, 2), true},
			{"signed before the end", account(false, root(2, 2, 3), 2, 3), false},
			{"nothing forwarded, both slots receipted", account(true, nil, 2, 3), false},
			{"the root of another round", account(true, root(3, 2, 3), 2, 3), false},
			{"the root without the receipt", account(true, root(2, 3), 2, 3), false},
			{"the account without the receipt", account(true, root(2, 2, 3), 3), false},
		} {
			reset()
			if got := s.accountGiven(e, c.a, 2, 2, shown); got != c.want {
				t.Errorf("%s: counted %v, want %v", c.name, got, c.want)
			}
		}

		// Given early, before the receipt was shown: counted, then
		// evidence once the receipt comes.
		reset()
		if !s.accountGiven(e, account(true, nil), 2, 2, nil) {
			t.Fatal("an early final account saying nothing forwarded and naming no receipt was not counted")
		}
		rc := receipt(2)
		if _, _, err := s.onShowReceipt(rc.Marshal()); err != nil {
			t.Fatal(err)
		}
		s.mu.Lock()
		logged := e.accLogged[2]
		s.mu.Unlock()
		if !logged {
			t.Error("a receipt shown after Q's final account that leaves it out was not logged against Q")
		}

		// An account signed before the end is no evidence.
		reset()
		s.accountGiven(e, account(false, nil), 2, 2, nil)
		if _, _, err := s.onShowReceipt(rc.Marshal()); err != nil {
			t.Fatal(err)
		}
		s.mu.Lock()
		logged = e.accLogged[2]
		s.mu.Unlock()
		if logged {
			t.Error("an account signed before the end was logged as evidence")
		}
	})
}
