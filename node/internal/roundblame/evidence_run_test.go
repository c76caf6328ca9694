package roundblame

import (
	"sync"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
)

// TestOnEquivocationNamesOnce: two roots a server signed for one batch,
// from a chain server, end the epoch and name their signer, once; from
// outside the chain they are refused.
func TestOnEquivocationNamesOnce(t *testing.T) {
	t.Parallel()
	f := newEpoch(t, 3, 2)
	ev := wire.Equivocation{A: f.signedRoot(t, 1, 1, [32]byte{1}), B: f.signedRoot(t, 1, 1, [32]byte{2})}
	nodes, hosts := f.chain(func() *Blame { return nil })
	x, h := nodes[0], hosts[0]
	if _, _, err := x.svc.OnEquivocation(peer.ID("outsider"), ev.Marshal()); err == nil || h.ended {
		t.Fatalf("evidence from outside the chain: %v, ended %v", err, h.ended)
	}
	for range 2 {
		if _, _, err := x.svc.OnEquivocation(f.v.Chain[2], ev.Marshal()); err != nil {
			t.Fatal(err)
		}
	}
	if !h.ended || len(h.named) != 1 || h.named[0].Server != 1 {
		t.Fatalf("ended %v, named %v; want server 1 once", h.ended, h.named)
	}
	if x.blames.NameEquivocation() {
		t.Fatal("the equivocation is not marked named")
	}
}

// TestNoteDoubleOnce: two onions of one slot, seen at every server, name
// its client once at each, send the evidence once, and kill the slot;
// the epoch goes on.
func TestNoteDoubleOnce(t *testing.T) {
	t.Parallel()
	const m, n = 2, 3
	f := newEpoch(t, m, n)
	a := &wire.Submit{Epoch: f.v.ID, Round: f.r, Slot: 2, Onion: []byte("onion a")}
	b := &wire.Submit{Epoch: f.v.ID, Round: f.r, Slot: 2, Onion: []byte("onion b")}
	nodes, hosts := f.chain(func() *Blame { return nil })
	for s, x := range nodes {
		hosts[s].Locked(func() {
			x.svc.NoteDouble(x.ep, a, b)
			x.svc.NoteDouble(x.ep, a, b)
		})
	}
	var wg sync.WaitGroup
	for _, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.goroutines.Wait()
		}()
	}
	wg.Wait()
	for s, h := range hosts {
		if len(h.named) != 1 || h.named[0].Slot != 2 || len(h.sent) != 1 || h.sent[0].typ != wire.TypeDoubleSubmit {
			t.Fatalf("server %d named %v, sent %v", s, h.named, h.sent)
		}
		if !nodes[s].blames.IsDead(2) || h.ended {
			t.Fatalf("server %d: slot dead %v, ended %v (%s)", s, nodes[s].blames.IsDead(2), h.ended, h.endReason)
		}
	}
	d := wire.DoubleSubmit{Epoch: f.v.ID, Round: f.r, Slot: 2, HashA: mix.SubmissionDigest(a.Onion), HashB: mix.SubmissionDigest(b.Onion)}
	if _, _, err := nodes[0].svc.OnDoubleSubmit(f.v.Chain[1], d.Marshal()); err == nil {
		t.Fatal("unsigned onions name a client")
	}
}

// TestOnBadBatchNamesSigner: a signed batch with an entry of the wrong
// size, forwarded by a chain server, ends the epoch and names its
// signer, who is sent no copy of the evidence, once an epoch.
func TestOnBadBatchNamesSigner(t *testing.T) {
	t.Parallel()
	const m, n = 3, 3
	f := newEpoch(t, m, n)
	f.v.Desc.Params.MaxClients, f.v.Desc.Params.MaxRows = 16, 16
	short := append([][]byte{f.inputs[2][0][:10]}, f.inputs[2][1:]...)
	f.pass(t, 1, short)
	r := f.roots[2]
	body := (&wire.Batch{Epoch: f.v.ID, Round: f.r, S: 2, Entries: short, Root: r.Root, Sig: r.Sig}).Marshal()
	nodes, hosts := f.chain(func() *Blame { return nil })
	x, h := nodes[0], hosts[0]
	if _, _, err := x.svc.OnBadBatch(peer.ID("outsider"), body); err == nil {
		t.Fatal("evidence from outside the chain")
	}
	for range 2 {
		if _, _, err := x.svc.OnBadBatch(f.v.Chain[2], body); err != nil {
			t.Fatal(err)
		}
	}
	h.goroutines.Wait()
	if !h.ended || len(h.named) != 1 || h.named[0].Server != 1 || len(h.sent) != 1 || h.sent[0].culprit != 1 {
		t.Fatalf("ended %v, named %v, sent %v", h.ended, h.named, h.sent)
	}
}
