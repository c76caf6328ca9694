package registry

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/intake"
	"github.com/riffle-net/riffle/node/internal/ltkeys"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// fakeHost is a server without a network: its epochs, what ended, the
// round lists, and what the handlers asked of it.
type fakeHost struct {
	self peer.ID
	priv crypto.PrivKey

	mu        sync.Mutex
	open      *Ep
	epochs    map[[32]byte]*Ep
	ended     map[*Ep]string
	lists     map[uint32][]byte
	closed    []*Ep
	named     []error
	refusal   error
	noReceipt bool
}

func (h *fakeHost) Self() peer.ID        { return h.self }
func (h *fakeHost) Priv() crypto.PrivKey { return h.priv }
func (h *fakeHost) Rand() io.Reader      { return rand.Reader }
func (h *fakeHost) Range(peer.ID) string { return "r" }
func (h *fakeHost) NoReceipt() bool      { return h.noReceipt }

func (h *fakeHost) KeepOut(peer.ID, [32]byte) bool { return false }

func (h *fakeHost) Call(context.Context, peer.ID, transport.Request) ([]byte, error) {
	return nil, errors.New("no network")
}

// WaitFor checks cond once: the tests set the state first, and a wait
// that would block ends at once with ctx's error or "would wait".
func (h *fakeHost) WaitFor(ctx context.Context, cond func() bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if cond() {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return errors.New("would wait")
}

func (h *fakeHost) Locked(f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f()
}

func (h *fakeHost) Open() *Ep                   { return h.open }
func (h *fakeHost) Epoch(id [32]byte) *Ep       { return h.epochs[id] }
func (h *fakeHost) Aborted(*Ep) bool            { return false }
func (h *fakeHost) List(_ *Ep, r uint32) []byte { return h.lists[r] }
func (h *fakeHost) Closed(ep *Ep)               { h.closed = append(h.closed, ep) }

func (h *fakeHost) Ended(ep *Ep) (bool, string) {
	why, ok := h.ended[ep]
	return ok, why
}

func (h *fakeHost) Refusal(peer.ID, uint64) error { return h.refusal }

func (h *fakeHost) NameForwarder(_ *Ep, _ *wire.Forwarded, why error) {
	h.named = append(h.named, why)
}

type member struct {
	id   peer.ID
	priv crypto.PrivKey
}

func newMember(t *testing.T) member {
	t.Helper()
	priv, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return member{id, priv}
}

// chainFixture: a chain of three, this server at position pos, one
// epoch open here led by leader.
func chainFixture(t *testing.T, pos, leader int) (*Service, *fakeHost, *Ep, []member) {
	t.Helper()
	ms := []member{newMember(t), newMember(t), newMember(t)}
	chain := []peer.ID{ms[0].id, ms[1].id, ms[2].id}
	v := &proto.View{ID: [32]byte{0xC0}, Desc: &wire.Descriptor{Number: 7, Params: wire.Params{MaxClients: 4}}, Chain: chain}
	ep := &Ep{V: v, Pos: pos, Leader: chain[leader], Reg: &Epoch{}}
	h := &fakeHost{self: chain[pos], priv: ms[pos].priv, open: ep, epochs: map[[32]byte]*Ep{v.ID: ep}, ended: map[*Ep]string{}, lists: map[uint32][]byte{}}
	return &Service{H: h, Keys: &ltkeys.Keys{}, Log: slog.New(slog.DiscardHandler)}, h, ep, ms
}

// forward is primary p's signed forward of a registration that does not
// verify (its proofs are zeros).
func forward(t *testing.T, ep *Ep, ms []member, p int, k int) []byte {
	t.Helper()
	f := wire.Forwarded{Primary: uint16(p), Reg: wire.Register{Epoch: ep.V.ID, RegKey: key(k), Reg: make([]byte, mix.RegistrationSize(len(ms)))}}
	sig, err := proto.Sign(ms[p].priv, proto.ForwardDigest(&f))
	if err != nil {
		t.Fatal(err)
	}
	f.Sig = sig
	return f.Marshal()
}

// TestForwardedReceipts: a chain server receipts a primary's signed
// forward, signed by itself at its position; refuses one from outside the
// chain, of an ended epoch or after the close; the leader checks the
// proofs at once and names the primary of one that fails, receipting
// nothing.
func TestForwardedReceipts(t *testing.T) {
	s, h, ep, ms := chainFixture(t, 1, 0)
	typ, rep, err := s.OnForwarded(ms[2].id, forward(t, ep, ms, 2, 1))
	if err != nil || typ != wire.TypeReceipt {
		t.Fatalf("a primary's forward at a member: %v", err)
	}
	var rc wire.Receipt
	f := wire.Forwarded{Reg: wire.Register{Epoch: ep.V.ID, RegKey: key(1), Reg: make([]byte, mix.RegistrationSize(3))}}
	if err := rc.Unmarshal(rep); err != nil || int(rc.Server) != 1 || proto.CheckReceipt(&rc, ep.V.ID, &f.Reg, ep.V.Chain) != nil {
		t.Fatalf("receipt %+v does not check: %v", rc, err)
	}
	if ep.Reg.ForwardedCount() != 1 {
		t.Fatal("the receipted forward not kept")
	}
	if _, _, err := s.OnForwarded(ms[0].id, forward(t, ep, ms, 2, 2)); err == nil {
		t.Fatal("a forward taken from a server that is not its primary")
	}
	if _, _, err := s.OnForwarded(newMember(t).id, forward(t, ep, ms, 2, 2)); err == nil {
		t.Fatal("a forward taken from outside the chain")
	}
	h.noReceipt = true
	if _, _, err := s.OnForwarded(ms[2].id, forward(t, ep, ms, 2, 2)); err == nil {
		t.Fatal("the test hook's lost forward receipted")
	}
	h.noReceipt = false
	h.ended[ep] = "gone"
	if _, _, err := s.OnForwarded(ms[2].id, forward(t, ep, ms, 2, 2)); err == nil {
		t.Fatal("a forward receipted for an ended epoch")
	}
	delete(h.ended, ep)
	ep.Reg.SetPhase(true, false, false)
	if _, _, err := s.OnForwarded(ms[2].id, forward(t, ep, ms, 2, 2)); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("a forward after the close: %v", err)
	}

	s, h, ep, ms = chainFixture(t, 0, 0)
	if _, _, err := s.OnForwarded(ms[2].id, forward(t, ep, ms, 2, 1)); err == nil {
		t.Fatal("the leader receipted a forward whose proofs fail")
	}
	if len(h.named) != 1 || ep.Reg.ForwardedCount() != 0 {
		t.Fatalf("the leader named %d primaries, kept %d forwards; want 1, 0", len(h.named), ep.Reg.ForwardedCount())
	}
}

// TestCloseAndList: only the leader closes, only after the deadline; the
// close ends the epoch's being open here and answers with this primary's
// signed list, r_j revealed.
func TestCloseAndList(t *testing.T) {
	s, h, ep, ms := chainFixture(t, 1, 0)
	ref := (&wire.EpochRef{Epoch: ep.V.ID}).Marshal()
	ep.Reg.Prepared(wire.GroupEntry{}, nil, nil, nil, nil, [wire.CommitSize]byte{9})
	ep.Reg.Opened([]byte("open"), nil, time.Hour, time.Now())
	if _, _, err := s.OnClose(ms[0].id, ref); err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("a close before the deadline: %v", err)
	}
	ep.Reg = &Epoch{}
	ep.Reg.Prepared(wire.GroupEntry{}, nil, nil, nil, nil, [wire.CommitSize]byte{9})
	ep.Reg.Opened([]byte("open"), nil, 0, time.Now().Add(-time.Second))
	if _, _, err := s.OnClose(ms[2].id, ref); err == nil {
		t.Fatal("a close from a server that is not the leader")
	}
	if len(h.closed) != 0 || ep.Reg.Closed() {
		t.Fatal("a refused close closed the registration")
	}
	typ, rep, err := s.OnClose(ms[0].id, ref)
	if err != nil || typ != wire.TypeRegList {
		t.Fatalf("the leader's close: %v", err)
	}
	var rl wire.RegList
	if err := rl.Unmarshal(rep, proto.GenericLimits()); err != nil || rl.Reveal != [wire.CommitSize]byte{9} || len(rl.Orders) != 1 {
		t.Fatalf("list %+v: %v", rl, err)
	}
	if len(h.closed) != 1 || !ep.Reg.Closed() {
		t.Fatal("the close did not close the registration here")
	}
}

// TestClientWaits: a round's list goes only to a client registered here,
// once the list is final, and the epoch's end is said with its reason;
// receipts only to the peer that registered.
func TestClientWaits(t *testing.T) {
	s, h, ep, _ := chainFixture(t, 1, 0)
	ep.Final = ep.V
	client, stranger := peer.ID("client"), peer.ID("stranger")
	if err := ep.Reg.Take(4, wire.Register{RegKey: key(1)}, client, [64]byte{}, intake.LT{}, "r", true); err != nil {
		t.Fatal(err)
	}
	ref := (&wire.EpochRef{Epoch: ep.V.ID, Round: 3}).Marshal()
	ctx := context.Background()
	if _, _, err := s.OnWaitList(ctx, client, ref); err == nil || err.Error() != "would wait" {
		t.Fatalf("a list given before it is final: %v", err)
	}
	h.lists[3] = []byte("list 3")
	if _, _, err := s.OnWaitList(ctx, stranger, ref); err == nil {
		t.Fatal("a stranger got a round's list")
	}
	if _, out, err := s.OnWaitList(ctx, client, ref); err != nil || string(out) != "list 3" {
		t.Fatalf("the final list: %q %v", out, err)
	}
	h.ended[ep] = "round 4 void"
	if _, _, err := s.OnWaitList(ctx, client, (&wire.EpochRef{Epoch: ep.V.ID, Round: 4}).Marshal()); err == nil || !strings.Contains(err.Error(), "round 4 void") {
		t.Fatalf("the end of the epoch: %v", err)
	}
	q := (&wire.ReceiptSet{Epoch: ep.V.ID, RegKey: key(1)}).Marshal()
	if _, _, err := s.OnReceiptSet(stranger, q); err == nil {
		t.Fatal("receipts given to a stranger")
	}
	if _, _, err := s.OnReceiptSet(client, q); err != nil {
		t.Fatalf("receipts to the client: %v", err)
	}
}
