//go:build riffletest

package node

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// dupFixture is the hostile fixture's "mid" epoch (this server S_1, chain
// [a, s, b], slot i served by primary i) with a duplicate abort naming
// slots 1 (served here, by the peer client) and 2 (served by b), and the
// secrets of two clients: holder knows the value, copier does not.
type dupFixture struct {
	*hostileFixture
	client           peerKey
	holder, copier   *mix.ClientSecret
	value            *group.Element
	abort            wire.DupAbort
	sigA, sigS, sigB [64]byte
}

func newDupFixture(t *testing.T) *dupFixture {
	f := &dupFixture{hostileFixture: newHostileFixture(t), client: newPeerKey(t)}
	e := f.mid
	var keys []*group.Element
	for range 3 {
		k, err := mix.NewServerSecret(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.Public())
	}
	var err error
	if f.holder, _, err = mix.Register(mix.EpochID(e.v.ID), f.clients[1].Public().(ed25519.PublicKey), keys, rand.Reader); err != nil {
		t.Fatal(err)
	}
	if f.copier, _, err = mix.Register(mix.EpochID(e.v.ID), f.clients[2].Public().(ed25519.PublicKey), keys, rand.Reader); err != nil {
		t.Fatal(err)
	}
	f.value, _ = f.holder.Share(1)
	f.abort = wire.DupAbort{Epoch: e.v.ID, S: 1, Comp: 1, SlotA: 1, SlotB: 2, Sigs: make([][64]byte, 3)}
	copy(f.abort.Value[:], f.value.Bytes())
	d := proto.DupDigest(&f.abort)
	f.sigA, f.sigB = mustSign(t, f.a.priv, d), mustSign(t, f.b.priv, d)
	if f.sigS, err = proto.Sign(f.s.priv, d); err != nil {
		t.Fatal(err)
	}
	f.s.mu.Lock()
	e.reg.Table().RegFrom = map[[32]byte]peer.ID{e.final.Desc.Clients[1].RegKey: f.client.id}
	ab := f.abort
	ab.Sigs = [][64]byte{{}, f.sigS, {}}
	*e.dup.Dup() = blame.NewDup(ab, f.value)
	f.s.mu.Unlock()
	return f
}

func (f *dupFixture) proof(t *testing.T, cs *mix.ClientSecret, slot uint32) []byte {
	p, err := cs.ProveShare(mix.EpochID(f.mid.v.ID), slot, 1, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return (&wire.DupProof{Epoch: f.mid.v.ID, Slot: slot, Proof: [64]byte(p)}).Marshal()
}

// A share proof is taken only from the client registered here for its
// slot, or from the primary of the slot; only for a slot the abort names;
// once a slot; and every server verifies it itself.
func TestDupProofSenders(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		f := newDupFixture(t)
		ctx := context.Background()
		s, ds := f.s, *f.mid.dup.Dup()
		good := f.proof(t, f.holder, 1)
		refused := map[string]func() error{
			"stranger for slot 1": func() error { return handlerErr(s.dups.OnProof(ctx, f.stranger.id, good, true)) },
			"server a for slot 1": func() error { return handlerErr(s.dups.OnProof(ctx, f.a.id, good, false)) },
			"client for slot 0":   func() error { return handlerErr(s.dups.OnProof(ctx, f.client.id, f.proof(t, f.holder, 0), true)) },
			"server a for slot 2": func() error { return handlerErr(s.dups.OnProof(ctx, f.a.id, f.proof(t, f.copier, 2), false)) },
			"truncated":           func() error { return handlerErr(s.dups.OnProof(ctx, f.client.id, truncated(good), true)) },
			"oversized":           func() error { return handlerErr(s.dups.OnProof(ctx, f.client.id, oversized(good), true)) },
			"other epoch (led)": func() error {
				return handlerErr(s.dups.OnProof(ctx, f.client.id, append([]byte{0xA0}, good[1:]...), true))
			},
			"client on server path": func() error { return handlerErr(s.dups.OnProof(ctx, f.client.id, good, false)) },
		}
		for name, fn := range refused {
			if fn() == nil {
				t.Errorf("%s: accepted", name)
			}
		}
		if ds.Answers() != 0 {
			t.Fatalf("a refused proof was recorded: %d answers", ds.Answers())
		}
		// The copier's proof, relayed by b (slot 2's primary), fails.
		if err := handlerErr(s.dups.OnProof(ctx, f.b.id, f.proof(t, f.copier, 2), false)); err != nil {
			t.Fatal(err)
		}
		if err := handlerErr(s.dups.OnProof(ctx, f.client.id, good, true)); err != nil {
			t.Fatal(err)
		}
		if !ds.Proved(1) || ds.Failed(1) || ds.Proved(2) || !ds.Failed(2) {
			t.Fatalf("proved %v %v failed %v %v", ds.Proved(1), ds.Proved(2), ds.Failed(1), ds.Failed(2))
		}
		// A second answer changes nothing.
		if err := handlerErr(s.dups.OnProof(ctx, f.b.id, f.proof(t, f.holder, 2), false)); err != nil || ds.Proved(2) {
			t.Fatalf("second answer: %v, proved %v", err, ds.Proved(2))
		}
	})
}

// Another server's abort signature is taken only from a chain server, over
// this server's own statement.
func TestDupAbortSignatures(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		f := newDupFixture(t)
		s := f.s
		msg := func(j int, sig [64]byte, slotB uint32) []byte {
			a := f.abort
			a.SlotB = slotB
			a.Sigs = make([][64]byte, 3)
			a.Sigs[j] = sig
			return a.Marshal()
		}
		other := f.abort
		other.SlotB = 0
		sigOther := mustSign(t, f.a.priv, proto.DupDigest(&other))
		for name, err := range map[string]error{
			"stranger":           handlerErr(s.dups.OnAbort(f.stranger.id, msg(0, f.sigA, 2))),
			"b's signature by a": handlerErr(s.dups.OnAbort(f.a.id, msg(0, f.sigB, 2))),
			"other statement":    handlerErr(s.dups.OnAbort(f.a.id, msg(0, sigOther, 0))),
			"own position":       handlerErr(s.dups.OnAbort(f.a.id, msg(1, f.sigA, 2))),
			"truncated":          handlerErr(s.dups.OnAbort(f.a.id, truncated(msg(0, f.sigA, 2)))),
		} {
			if err == nil {
				t.Errorf("%s: accepted", name)
			}
		}
		if err := handlerErr(s.dups.OnAbort(f.a.id, msg(0, f.sigA, 2))); err != nil {
			t.Fatal(err)
		}
		if (*f.mid.dup.Dup()).Abort.Sigs[0] != f.sigA {
			t.Error("a's signature not kept")
		}
	})
}

// The verdict rules (§4.1 v3), at the primary of slot 1.
func TestDupVerdictRules(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		for _, c := range []struct {
			name           string
			proved, failed []uint32
			named, leftOut bool
		}{
			{"proves, other silent", []uint32{1}, nil, false, false},
			{"proves, other fails", []uint32{1}, []uint32{2}, false, false},
			{"both prove", []uint32{1, 2}, nil, true, false},
			{"fails", nil, []uint32{1}, true, false},
			{"silent, other proves", []uint32{2}, nil, false, true},
			{"both silent", nil, nil, false, true},
		} {
			f := newDupFixture(t)
			for _, s := range c.proved {
				f.mid.dup.Answer(s, true, nil)
			}
			for _, s := range c.failed {
				f.mid.dup.Answer(s, false, nil)
			}
			f.s.dups.Verdict(dupEp(f.mid))
			_, banned := f.s.strikes.Banned[f.client.id]
			_, left := f.s.leftOut[f.client.id]
			if banned != c.named || left != c.leftOut {
				t.Errorf("%s: named %v left out %v, want %v %v", c.name, banned, left, c.named, c.leftOut)
			}
			if !f.mid.ended {
				t.Errorf("%s: epoch not ended by the verdict", c.name)
			}
			// The next epoch refuses a silent client (a named one meets the
			// ban instead), and only the next.
			f.s.mu.Lock()
			err := f.s.leftOut.Admit(f.client.id, f.mid.v.Desc.Number+1)
			later := f.s.leftOut.Admit(f.client.id, f.mid.v.Desc.Number+2)
			f.s.mu.Unlock()
			if (err != nil) != c.leftOut || later != nil {
				t.Errorf("%s: next epoch %v, the one after %v", c.name, err, later)
			}
		}
	})
}

// A client answers only an abort signed by every chain server that names
// its slot.
func TestCheckDupAbort(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		f := newDupFixture(t)
		a := f.abort
		a.Sigs = [][64]byte{f.sigA, f.sigS, f.sigB}
		if err := CheckDupAbort(f.mid.final, 1, &a); err != nil {
			t.Fatalf("good abort: %v", err)
		}
		for name, mut := range map[string]func(x *wire.DupAbort){
			"missing signature":  func(x *wire.DupAbort) { x.Sigs[2] = [64]byte{} },
			"swapped signatures": func(x *wire.DupAbort) { x.Sigs[0], x.Sigs[2] = x.Sigs[2], x.Sigs[0] },
			"two signatures":     func(x *wire.DupAbort) { x.Sigs = x.Sigs[:2] },
			"other slot":         func(x *wire.DupAbort) { x.SlotA = 0 },
			"other value":        func(x *wire.DupAbort) { x.Value[0] ^= 1 },
			"other epoch":        func(x *wire.DupAbort) { x.Epoch[0] ^= 1 },
			"component > m":      func(x *wire.DupAbort) { x.Comp = 4 },
			"equal slots":        func(x *wire.DupAbort) { x.SlotB = x.SlotA },
		} {
			x := a
			x.Sigs = append([][64]byte(nil), a.Sigs...)
			mut(&x)
			if CheckDupAbort(f.mid.final, 1, &x) == nil {
				t.Errorf("%s: accepted", name)
			}
		}
	})
}
