package evidence

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/certs"
	"github.com/riffle-net/riffle/node/internal/chargelog"
	"github.com/riffle-net/riffle/node/internal/ltkeys"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// key is a server's key and id.
type key struct {
	priv crypto.PrivKey
	id   peer.ID
}

func keys(t *testing.T, n int) []key {
	t.Helper()
	out := make([]key, n)
	for i := range out {
		priv, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := peer.IDFromPrivateKey(priv)
		out[i] = key{priv, id}
	}
	return out
}

// sent is one message a fakeHost sent.
type sent struct {
	to  []peer.ID
	typ wire.Type
}

// fakeHost is one server holding one epoch, without a network: what the
// Service sends is recorded, its goroutines run at once.
type fakeHost struct {
	mu     sync.Mutex
	ep     *Ep
	ended  []string
	sent   []sent
	own    *wire.Attest
	roster map[peer.ID]bool
	// end: when the epoch ended here (zero: not yet), and which
	// positions were live then; seen: the last hello of each server.
	end       time.Time
	liveAtEnd uint64
	seen      map[peer.ID]time.Time
	// signs: attestations signed here.
	signs int
}

func (h *fakeHost) Locked(f func()) { f() }
func (h *fakeHost) Each(_ context.Context, chain []peer.ID, r transport.Request) ([][]byte, error) {
	h.record(chain, r.Type)
	return make([][]byte, len(chain)), nil
}
func (h *fakeHost) NotifyAll(to []peer.ID, t wire.Type, _ []byte) { h.record(to, t) }
func (h *fakeHost) Call(_ context.Context, p peer.ID, r transport.Request) ([]byte, error) {
	h.record([]peer.ID{p}, r.Type)
	return nil, nil
}
func (h *fakeHost) Go(f func())                        { f() }
func (h *fakeHost) InRoster(p peer.ID) bool            { return h.roster[p] }
func (h *fakeHost) GroupPeer(p peer.ID) bool           { return h.roster[p] }
func (h *fakeHost) Number() uint64                     { return h.ep.V.Desc.Number }
func (h *fakeHost) Now(ep *Ep) *Ep                     { return ep }
func (h *fakeHost) EndQuiet(_ *Ep, reason string)      { h.ended = append(h.ended, reason) }
func (h *fakeHost) PubAttest(*Ep, uint32) *wire.Attest { return h.own }
func (h *fakeHost) EndOf(*Ep) (bool, time.Time, uint64) {
	return !h.end.IsZero(), h.end, h.liveAtEnd
}
func (h *fakeHost) SignAttest(ep *Ep, kind uint8, round uint32, lacking uint64) *wire.Attest {
	h.signs++
	return &wire.Attest{AttestReq: wire.AttestReq{Epoch: ep.V.ID, Number: ep.V.Desc.Number, Kind: kind, Round: round}, Lacking: lacking}
}
func (h *fakeHost) LastSeen(p peer.ID) (time.Time, bool) {
	t, ok := h.seen[p]
	return t, ok
}
func (h *fakeHost) AskAttests(*Ep, uint8, uint32, peer.ID) []wire.Attest { return nil }
func (h *fakeHost) CertifyAbort(*Ep, *wire.Abort)                        {}
func (h *fakeHost) Voided(*Ep, uint32) bool                              { return false }
func (h *fakeHost) AdmitAttest(*Ep, uint32) *wire.Attest                 { return nil }
func (h *fakeHost) OwnKeyEvidence(*Ep, int) *wire.KeyEvidence            { return nil }
func (h *fakeHost) FinalEpoch(id [32]byte) (*Ep, error) {
	if ep := h.Epoch(id); ep != nil && ep.Final != nil {
		return ep, nil
	}
	return nil, errors.New("no such final epoch")
}
func (h *fakeHost) Epoch(id [32]byte) *Ep {
	if h.ep != nil && h.ep.V.ID == id {
		return h.ep
	}
	return nil
}

func (h *fakeHost) record(to []peer.ID, t wire.Type) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sent = append(h.sent, sent{append([]peer.ID(nil), to...), t})
}

// sentOf is what h sent of type t.
func (h *fakeHost) sentOf(t wire.Type) []sent {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []sent
	for _, x := range h.sent {
		if x.typ == t {
			out = append(out, x)
		}
	}
	return out
}

// fixture is server 0 of a chain of n holding epoch number 7, final or
// not, with its Service over a fakeHost.
type fixture struct {
	ks  []key
	v   *proto.View
	h   *fakeHost
	svc *Service
}

func newFixture(t *testing.T, n int, final bool) *fixture {
	t.Helper()
	ks := keys(t, n)
	v := &proto.View{ID: [32]byte{7, 7}, Desc: &wire.Descriptor{Number: 7}}
	roster := map[peer.ID]bool{}
	for _, k := range ks {
		v.Chain = append(v.Chain, k.id)
		roster[k.id] = true
	}
	ep := &Ep{V: v, PreFinal: &PreFinal{}, Down: &Down{}, KeyNamed: &blame.KeyNamed{}}
	if final {
		ep.Final = v
	}
	h := &fakeHost{ep: ep, roster: roster}
	var ref chargelog.Log
	ref.Init(t.TempDir(), nil, nil)
	svc := New(Config{Ctx: context.Background(), Self: ks[0].id, Priv: ks[0].priv, Log: slog.New(slog.DiscardHandler), Ref: &ref, Certs: &certs.Certs{}, Keys: &ltkeys.Keys{}}, h)
	return &fixture{ks: ks, v: v, h: h, svc: svc}
}

// abort is server i's signed abort of the fixture's epoch.
func (f *fixture) abort(t *testing.T, i int, kind uint8, round uint32) *wire.Abort {
	t.Helper()
	a, err := SignAbort(f.ks[i].priv, f.ks[i].id, f.v, kind, round, "test")
	if err != nil {
		t.Fatal(err)
	}
	return a
}
