package dupwalk

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// regs are a primary's registrations: registration key -> peer.
type regs map[[32]byte]peer.ID

func (r regs) From(k [32]byte) (peer.ID, bool) { p, ok := r[k]; return p, ok }
func (r regs) RegisteredBy(p peer.ID) bool {
	for _, q := range r {
		if q == p {
			return true
		}
	}
	return false
}

// fakeHost is a server without a network: one epoch, and what the
// handlers asked of it.
type fakeHost struct {
	self peer.ID
	ep   *Ep

	mu       sync.Mutex
	ended    bool
	endedAs  string
	notified int
	left     map[peer.ID]uint64
	named    []int
	sent     []wire.Type
}

func (h *fakeHost) Self() peer.ID        { return h.self }
func (h *fakeHost) Priv() crypto.PrivKey { return nil }
func (h *fakeHost) Rand() io.Reader      { return rand.Reader }

func (h *fakeHost) Call(context.Context, peer.ID, transport.Request) ([]byte, error) {
	return nil, errors.New("no network")
}

func (h *fakeHost) Each(_ context.Context, peers []peer.ID, r transport.Request) ([][]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range peers {
		if p == h.self {
			panic("sent to itself")
		}
		h.sent = append(h.sent, r.Type)
	}
	return nil, nil
}

func (h *fakeHost) WaitFor(ctx context.Context, cond func() bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if cond() {
		return nil
	}
	return errors.New("would wait")
}

func (h *fakeHost) Locked(f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f()
}

func (h *fakeHost) Epoch(id [32]byte) *Ep {
	if h.ep != nil && h.ep.V.ID == id {
		return h.ep
	}
	return nil
}

func (h *fakeHost) Ended(*Ep) bool               { return h.ended }
func (h *fakeHost) SetupDone(*Ep) bool           { return false }
func (h *fakeHost) Secret(*Ep) *mix.StepSecret   { return nil }
func (h *fakeHost) Notify()                      { h.notified++ }
func (h *fakeHost) End(_ *Ep, why string)        { h.ended, h.endedAs = true, why }
func (h *fakeHost) EndQuiet(_ *Ep, why string)   { h.ended, h.endedAs = true, why }
func (h *fakeHost) LeaveOut(p peer.ID, n uint64) { h.left[p] = n }
func (h *fakeHost) Steps(*Ep) ([][][]group.Ciphertext, []*mix.StepResult) {
	return nil, nil
}

func (h *fakeHost) Name(_ *Ep, slot int, _ string, _ [][]byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.named = append(h.named, slot)
}

// dupFixture: this server is S_0 of [s, a, b], epoch 9 final with four
// slots, slot i served by primary i mod 3; the clients of slots 0 and 1
// registered here as c0 and c1 (c1 at a primary this server is not: a
// record a primary never has, to check the primary's check); an abort
// naming slots 0 and 1 started here.
func dupFixture(t *testing.T) (*Service, *fakeHost, *Ep) {
	t.Helper()
	chain := []peer.ID{"s", "a", "b"}
	desc := &wire.Descriptor{Number: 9}
	r := regs{}
	for i := range 4 {
		k := [32]byte{byte(i + 1)}
		desc.Clients = append(desc.Clients, wire.ClientEntry{RegKey: k, Primary: uint16(i % 3)})
		if i < 2 {
			r[k] = peer.ID("c" + string(rune('0'+i)))
		}
	}
	ep := &Ep{V: &proto.View{ID: [32]byte{9}, Desc: desc, Chain: chain}, Pos: 0, Abort: &Abort{}, Reg: r}
	ep.Abort.Start(wire.DupAbort{Epoch: ep.V.ID, SlotA: 0, SlotB: 1, Sigs: make([][64]byte, 3)}, group.Generators(1)[0], chain)
	h := &fakeHost{self: "s", ep: ep, left: map[peer.ID]uint64{}}
	return &Service{H: h, Log: slog.New(slog.DiscardHandler), Ctx: context.Background()}, h, ep
}

func proofBody(slot uint32) []byte {
	return (&wire.DupProof{Epoch: [32]byte{9}, Slot: slot}).Marshal()
}

// TestProofSenders: a share proof is taken from the client registered
// here for a slot this server is the primary of (then forwarded to the
// other chain servers), or from the slot's primary; once a slot; only for
// a slot the abort names.
func TestProofSenders(t *testing.T) {
	s, h, ep := dupFixture(t)
	ctx := context.Background()
	for name, run := range map[string]func() error{
		"stranger for slot 0":         func() error { _, _, err := s.OnProof(ctx, "x", proofBody(0), true); return err },
		"c1, not this primary's":      func() error { _, _, err := s.OnProof(ctx, "c1", proofBody(1), true); return err },
		"server b for slot 1 (a's)":   func() error { _, _, err := s.OnProof(ctx, "b", proofBody(1), false); return err },
		"client on the servers' path": func() error { _, _, err := s.OnProof(ctx, "c0", proofBody(0), false); return err },
		"slot 2, not named":           func() error { _, _, err := s.OnProof(ctx, "b", proofBody(2), false); return err },
		"another epoch": func() error {
			_, _, err := s.OnProof(ctx, "c0", (&wire.DupProof{Epoch: [32]byte{8}}).Marshal(), true)
			return err
		},
	} {
		if err := run(); err == nil {
			t.Errorf("%s: taken", name)
		}
	}
	if _, _, answered, _ := ep.Abort.Open(0); answered || len(h.sent) != 0 {
		t.Fatal("a refused proof answered a slot or was forwarded")
	}
	if _, _, err := s.OnProof(ctx, "c0", proofBody(0), true); err != nil {
		t.Fatal(err)
	}
	if _, _, answered, _ := ep.Abort.Open(0); !answered || len(h.sent) != 2 {
		t.Fatalf("the client's proof: answered %v, sent to %d servers (want 2)", answered, len(h.sent))
	}
	if _, _, err := s.OnProof(ctx, "c0", proofBody(0), true); err != nil || len(h.sent) != 2 {
		t.Fatalf("a second answer: %v, sent %d", err, len(h.sent))
	}
	if _, _, err := s.OnProof(ctx, "a", proofBody(1), false); err != nil {
		t.Fatalf("slot 1's primary: %v", err)
	}
}

// TestVerdictAtPrimary: a silent client is left out of the next epoch
// only by its own primary; one whose proof fails is named; the epoch ends
// either way.
func TestVerdictAtPrimary(t *testing.T) {
	s, h, _ := dupFixture(t)
	s.Verdict(h.ep)
	if len(h.left) != 1 || h.left["c0"] != 10 || len(h.named) != 0 || !strings.Contains(h.endedAs, "nobody named") {
		t.Fatalf("both silent: left out %v, named %v, ended %q", h.left, h.named, h.endedAs)
	}
	s, h, ep := dupFixture(t)
	ep.Abort.Answer(0, false, []byte("proof"))
	ep.Abort.Answer(1, true, []byte("proof"))
	s.Verdict(ep)
	if len(h.left) != 0 || len(h.named) != 1 || h.named[0] != 0 || !strings.Contains(h.endedAs, "excluded") {
		t.Fatalf("slot 0 failed: left out %v, named %v, ended %q", h.left, h.named, h.endedAs)
	}
}

// TestAbortSenders: a signature of the abort is taken only from another
// chain server, with one signature a server.
func TestAbortSenders(t *testing.T) {
	s, h, ep := dupFixture(t)
	msg := func(n int) []byte {
		return (&wire.DupAbort{Epoch: ep.V.ID, Sigs: make([][64]byte, n)}).Marshal()
	}
	for from, body := range map[peer.ID][]byte{"x": msg(3), "s": msg(3), "a": msg(2)} {
		if _, _, err := s.OnAbort(from, body); err == nil {
			t.Errorf("from %s with %d bytes: taken", from, len(body))
		}
	}
	if h.notified != 0 {
		t.Fatal("a refused signature woke the waiters")
	}
}
