package roundblame

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/roundstep"
	"github.com/riffle-net/riffle/node/transport"
)

// epoch is a real epoch of m servers and n clients after setup, with one
// round r mixed in memory: every server's input entries, the roots each
// server signed of its output, and the secrets each proves its steps with.
type epoch struct {
	v       *proto.View
	privs   []crypto.PrivKey
	setup   Setup
	secs    []*mix.StepSecret
	rks     []*mix.RoundKeys
	r       uint32
	subSigs [][64]byte
	inputs  [][][]byte // inputs[t]: server t's input; inputs[m]: the output
	roots   map[int]wire.Root
	final   []int // slot → output position
}

func newEpoch(t *testing.T, m, n int) *epoch {
	t.Helper()
	const R = 2
	f := &epoch{r: 1, roots: map[int]wire.Root{}}
	var id [32]byte
	if _, err := rand.Read(id[:]); err != nil {
		t.Fatal(err)
	}
	eid := mix.EpochID(id)
	desc := &wire.Descriptor{Params: wire.Params{ChunkSize: 64, K: 1, Rounds: R}}
	v := &proto.View{ID: id, Desc: desc}
	for range m {
		priv, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		p, err := peer.IDFromPrivateKey(priv)
		if err != nil {
			t.Fatal(err)
		}
		f.privs, v.Chain = append(f.privs, priv), append(v.Chain, p)
	}
	var sks []*mix.ServerSecret
	for range m {
		sk, err := mix.NewServerSecret(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		rk, err := mix.NewRoundKeys(R, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		y, yp := rk.Public()
		sks, f.rks = append(sks, sk), append(f.rks, rk)
		v.ServerKeys, v.Y, v.Yp = append(v.ServerKeys, sk.Public()), append(v.Y, y), append(v.Yp, yp)
	}
	var regs []*mix.Registration
	var cs []*mix.ClientSecret
	var keys []ed25519.PrivateKey
	for range n {
		pub, key, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		c, reg, err := mix.Register(eid, pub, v.ServerKeys, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		var rk [32]byte
		copy(rk[:], pub)
		desc.Clients = append(desc.Clients, wire.ClientEntry{RegKey: rk})
		regs, cs, keys = append(regs, reg), append(cs, c), append(keys, key)
	}
	in := mix.InitialVectors(regs)
	for s := range m {
		res, sec, err := mix.SetupStep(eid, s, v.ServerKeys, sks[s], in, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		f.setup.Inputs, f.setup.Steps, f.secs = append(f.setup.Inputs, in), append(f.setup.Steps, res), append(f.secs, sec)
		in = res.Next()
	}
	f.v = v
	f.final = make([]int, n)
	for i := range n {
		q := i
		for s := range m {
			q = f.secs[s].Forward()[q]
		}
		f.final[i] = q
	}
	// Round r: every client seals and signs its onion; each server opens
	// its layer, permutes and signs the root of its output.
	var onions [][]byte
	for i := range n {
		lk, err := cs[i].LayerKeys(eid, uint64(f.r), v.Y, v.Yp)
		if err != nil {
			t.Fatal(err)
		}
		payload := make([]byte, mix.PayloadSize(64, 1))
		payload[0] = byte(i + 1)
		o, err := mix.Seal(eid, uint64(f.r), lk, payload)
		if err != nil {
			t.Fatal(err)
		}
		var sig [64]byte
		copy(sig[:], mix.SignSubmission(keys[i], eid, uint64(f.r), uint32(i), o))
		onions, f.subSigs = append(onions, o), append(f.subSigs, sig)
	}
	f.inputs = [][][]byte{onions}
	for s := range m {
		f.pass(t, s, f.layer(t, s, f.inputs[s]))
	}
	return f
}

// layer is server s's input opened and permuted.
func (f *epoch) layer(t *testing.T, s int, in [][]byte) [][]byte {
	t.Helper()
	eid := mix.EpochID(f.v.ID)
	keys, err := mix.ServerLayerKeys(eid, s, uint64(f.r), f.rks[s], f.setup.Steps[s].U)
	if err != nil {
		t.Fatal(err)
	}
	out, err := mix.OpenLayer(eid, uint64(f.r), s, keys, in)
	if err != nil {
		t.Fatal(err)
	}
	return mix.Permute(f.secs[s].Forward(), out)
}

// pass has server s sign out as its output and hand it on.
func (f *epoch) pass(t *testing.T, s int, out [][]byte) {
	t.Helper()
	f.inputs = append(f.inputs[:s+1], out)
	root := proto.MerkleRoot(out)
	sig, err := proto.Sign(f.privs[s], roundstep.BatchDigest(&wire.Batch{Epoch: f.v.ID, Round: f.r, S: uint16(s + 1), Root: root}))
	if err != nil {
		t.Fatal(err)
	}
	f.roots[s+1] = wire.Root{Epoch: f.v.ID, Round: f.r, S: uint16(s + 1), Root: root, Sig: sig}
}

// evidence is server t's input entry at pos, as its sender signed it.
func (f *epoch) evidence(t, pos int) (wire.Evidence, error) {
	var ev wire.Evidence
	if pos < 0 || pos >= len(f.inputs[t]) {
		return ev, errors.New("no such position")
	}
	ev.Entry = append([]byte(nil), f.inputs[t][pos]...)
	if t == 0 {
		ev.Sig = f.subSigs[pos]
		return ev, nil
	}
	root := f.roots[t]
	ev.Path = blame.MerklePath(f.inputs[t], pos)
	ev.Root, ev.Sig = root.Root, root.Sig
	return ev, nil
}

func (f *epoch) rootsAt(r uint32, t int) (wire.Root, bool) {
	x, ok := f.roots[t]
	return x, ok && r == f.r
}

// host is server pos of f: its calls go to the other servers' services in
// memory.
type host struct {
	f     *epoch
	pos   int
	mu    sync.Mutex
	peers map[peer.ID]*node
	calls int
	fail  error // every call fails so
	ended bool  // the epoch ended here

	changed       chan struct{} // closed by Notify
	users         int           // secrets held (Acquire − Release)
	endReason     string
	abortSent     bool // End, not EndQuiet
	named         []Culprit
	voided        []uint32
	forwarded     int
	goroutines    sync.WaitGroup
	refuseSecrets bool // Acquire fails
	sent          []sent
	roundVoid     map[uint32]bool // rounds void here (VoidRound)
	lists         int             // signed lists delivered to the chain
}

// sent is evidence a host sent the chain.
type sent struct {
	typ     wire.Type
	culprit int
}

// node is one server of the test's chain: its service, epoch and blame.
type node struct {
	svc    *Service
	ep     *Ep
	bl     *Blame
	blames Blames
}

func (h *host) Locked(f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f()
}

func (h *host) Call(ctx context.Context, p peer.ID, r transport.Request) ([]byte, error) {
	h.calls++
	if h.fail != nil {
		return nil, h.fail
	}
	x := h.peers[p]
	from := h.f.v.Chain[h.pos]
	var rep []byte
	var err error
	switch r.Type {
	case wire.TypeBlameReq:
		_, rep, err = x.svc.OnStepReq(ctx, from, r.Body)
	case wire.TypeDropReq:
		_, rep, err = x.svc.OnDropReq(ctx, from, r.Body)
	default:
		err = errors.New("not asked in these tests")
	}
	if err == nil && len(rep) > r.Max {
		err = errors.New("reply over its cap")
	}
	return rep, err
}

func (h *host) StepEpoch(id [32]byte, from peer.ID, t uint16, _ string) (*Ep, error) {
	x := h.peers[h.f.v.Chain[h.pos]]
	if id != h.f.v.ID || !slices.Contains(h.f.v.Chain, from) || int(t) != h.pos {
		return nil, errors.New("step asked of the wrong server")
	}
	return x.ep, nil
}

// WaitFor checks cond under the lock at every Notify, as the server's
// wait does.
func (h *host) WaitFor(ctx context.Context, cond func() bool) error {
	for {
		var ok bool
		var ch chan struct{}
		h.Locked(func() { ok, ch = cond(), h.changed })
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (h *host) Ended(*Ep) bool { return h.ended }

func (h *host) AwaitSetup(*Ep) bool {
	var ok bool
	h.Locked(func() { ok = !h.ended })
	return ok
}

func (h *host) FinalEpoch(body []byte) *Ep {
	x := h.peers[h.f.v.Chain[h.pos]]
	if len(body) >= 32 && [32]byte(body[:32]) == h.f.v.ID {
		return x.ep
	}
	return nil
}

func (h *host) Epoch(id [32]byte) (*Ep, error) {
	if id != h.f.v.ID {
		return nil, errors.New("unknown epoch")
	}
	return h.peers[h.f.v.Chain[h.pos]].ep, nil
}

func (h *host) SendEvidence(_ *Ep, typ wire.Type, _ []byte, _ time.Duration, culprit int) error {
	h.Locked(func() { h.sent = append(h.sent, sent{typ, culprit}) })
	return nil
}

func (h *host) Acquire(*Ep) bool {
	if h.ended || h.refuseSecrets {
		return false
	}
	h.users++
	return true
}

func (h *host) Release(*Ep) { h.users-- }

func (h *host) End(_ *Ep, reason string) {
	if !h.ended {
		h.ended, h.endReason, h.abortSent = true, reason, true
	}
}

func (h *host) EndQuiet(_ *Ep, reason string) {
	if !h.ended {
		h.ended, h.endReason = true, reason
	}
}

func (h *host) Notify() {
	close(h.changed)
	h.changed = make(chan struct{})
}

func (h *host) ForwardPending(*Ep) { h.forwarded++ }

func (h *host) Name(_ *Ep, _ uint32, c *Culprit, _ [][]byte) {
	h.Locked(func() { h.named = append(h.named, *c) })
}

func (h *host) VoidRound(_ *Ep, r uint32) bool {
	if h.roundVoid[r] {
		return false
	}
	if h.roundVoid == nil {
		h.roundVoid = map[uint32]bool{}
	}
	h.roundVoid[r] = true
	return true
}

// SignProposal is S_0's signature of its proposal.
func (h *host) SignProposal(rl *wire.RoundList) error {
	h.voided = append(h.voided, rl.Round)
	sig, err := proto.Sign(h.f.privs[h.pos], proto.ListDigest(rl))
	rl.Sigs = [][64]byte{sig}
	return err
}

// Each asks every server of chain in turn: a proposal is signed by its
// SignVoid, a signed list taken.
func (h *host) Each(ctx context.Context, chain []peer.ID, r transport.Request) ([][]byte, error) {
	var reps [][]byte
	for _, p := range chain {
		x := h.peers[p]
		switch r.Type {
		case wire.TypeProposal:
			var rl wire.RoundList
			if err := rl.Unmarshal(r.Body, proto.GenericLimits()); err != nil {
				return nil, err
			}
			handled, _, rep, err := x.svc.SignVoid(ctx, x.ep, &rl)
			if !handled || err != nil {
				return nil, fmt.Errorf("server %d: handled %v, %v", x.ep.Pos, handled, err)
			}
			reps = append(reps, rep)
		case wire.TypeRoundList:
			h.lists++
			reps = append(reps, nil)
		}
	}
	return reps, nil
}

func (h *host) Go(f func()) {
	h.goroutines.Add(1)
	go func() {
		defer h.goroutines.Done()
		f()
	}()
}

func (h *host) Setup(*Ep) Setup { return h.f.setup }

func (h *host) Secrets(*Ep) Secrets {
	return Secrets{Sec: h.f.secs[h.pos], RK: h.f.rks[h.pos], U: h.f.setup.Steps[h.pos].U, Forward: h.f.secs[h.pos].Forward()}
}

func (h *host) Root(_ *Ep, r uint32, t int) (wire.Root, bool) { return h.f.rootsAt(r, t) }

func (h *host) InputEvidence(_ *Ep, r uint32, pos int) (wire.Evidence, error) {
	if r != h.f.r {
		return wire.Evidence{}, errors.New("round not kept")
	}
	return h.f.evidence(h.pos, pos)
}

// chain is every server of f as a node, each with blame mk() of its own.
func (f *epoch) chain(mk func() *Blame) ([]*node, []*host) {
	peers := map[peer.ID]*node{}
	var nodes []*node
	var hosts []*host
	for s := range f.v.Chain {
		h := &host{f: f, pos: s, peers: peers, changed: make(chan struct{})}
		cfg := Config{Ctx: context.Background(), Priv: f.privs[s], Rand: rand.Reader, Log: slog.New(slog.DiscardHandler), StepTimeout: time.Minute, StepWait: time.Minute}
		x := &node{svc: New(cfg, h), bl: mk()}
		x.ep = &Ep{V: f.v, Pos: s, Blames: &x.blames}
		if x.bl != nil {
			x.blames.Start(x.bl)
		}
		peers[f.v.Chain[s]], nodes, hosts = x, append(nodes, x), append(hosts, h)
	}
	return nodes, hosts
}

// accuse is server s's signed accusation of its input position p.
func (f *epoch) accuse(t *testing.T, s, p int) *wire.Accuse {
	t.Helper()
	ev, err := f.evidence(s, p)
	if err != nil {
		t.Fatal(err)
	}
	Zp, proof, err := mix.ProveRoundKey(mix.EpochID(f.v.ID), s, uint64(f.r), p, mix.MACKey, f.rks[s], f.setup.Steps[s].U[p], rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	a := &wire.Accuse{Epoch: f.v.ID, Round: f.r, S: uint16(s), Pos: uint32(p), In: ev}
	copy(a.Zp[:], Zp.Bytes())
	copy(a.ZpProof[:], proof)
	if a.Sig, err = proto.Sign(f.privs[s], blame.AccuseDigest(a)); err != nil {
		t.Fatal(err)
	}
	return a
}
