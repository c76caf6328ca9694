package leader

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// fakeHost answers each request of the leader from reply, and records
// what it sent.
type fakeHost struct {
	mu    sync.Mutex
	sent  []wire.Type
	to    [][]peer.ID
	reply func(t wire.Type, chain []peer.ID) ([][]byte, error)
	gone  peer.ID // not on the roster
	wg    sync.WaitGroup
}

func (h *fakeHost) Ctx() context.Context { return context.Background() }
func (h *fakeHost) Go(f func()) {
	h.wg.Add(1)
	go func() { defer h.wg.Done(); f() }()
}
func (h *fakeHost) Each(_ context.Context, chain []peer.ID, r transport.Request) ([][]byte, error) {
	h.mu.Lock()
	h.sent, h.to = append(h.sent, r.Type), append(h.to, chain)
	h.mu.Unlock()
	if h.reply == nil {
		return make([][]byte, len(chain)), nil
	}
	return h.reply(r.Type, chain)
}
func (h *fakeHost) Live(p peer.ID) bool                         { return p != h.gone }
func (h *fakeHost) Epoch([32]byte) Epoch                        { return nil }
func (h *fakeHost) Registering([32]byte) (Epoch, int, bool)     { return nil, 0, false }
func (h *fakeHost) Led()                                        {}
func (h *fakeHost) AbortBody(id [32]byte, reason string) []byte { return []byte(reason) }
func (h *fakeHost) HandEvidence(context.Context, []peer.ID, uint64) {
}
func (h *fakeHost) NoteWithdrawal(error) bool             { return false }
func (h *fakeHost) Candidates(uint64, []peer.ID) [][]byte { return nil }

func (h *fakeHost) LeaderGap(_ uint64, g []wire.Cert) []wire.Cert              { return g }
func (h *fakeHost) LeaderWindow(_ uint64, w []wire.WindowRef) []wire.WindowRef { return w }
func (h *fakeHost) OpenLate(peer.ID) time.Duration                             { return 0 }
func (h *fakeHost) SignedTo(_ bool, chain []peer.ID) []peer.ID                 { return chain }
func (h *fakeHost) HoldOpen() bool                                             { return false }
func (h *fakeHost) FinalSigned(*wire.Signed)                                   {}
func (h *fakeHost) CheatKeys(_ []peer.ID, keys [][32]byte, _ *Closed) [][32]byte {
	return keys
}
func (h *fakeHost) CheatList(*wire.RegList) {}

func chainOf(n int) []peer.ID {
	c := make([]peer.ID, n)
	for i := range c {
		c[i] = peer.ID(string(rune('a' + i)))
	}
	return c
}

// TestSigsOnePerPosition: the chain's signatures are taken one a
// position, in chain order; a reply signed for another position, or one
// that does not decode, is refused.
func TestSigsOnePerPosition(t *testing.T) {
	chain := chainOf(3)
	sig := func(i int) []byte { return (&wire.Sig{Index: uint16(i), Sig: [64]byte{byte(i + 1)}}).Marshal() }
	for _, c := range []struct {
		name string
		reps [][]byte
		bad  string
	}{
		{"in order", [][]byte{sig(0), sig(1), sig(2)}, ""},
		{"position swapped", [][]byte{sig(0), sig(2), sig(1)}, "server 1"},
		{"undecodable", [][]byte{sig(0), sig(1), {1, 2}}, "server 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &fakeHost{reply: func(wire.Type, []peer.ID) ([][]byte, error) { return c.reps, nil }}
			l := New(context.Background(), Config{Self: chain[0]}, h, chain, 7)
			got, err := l.sigs(&wire.Signed{})
			if c.bad != "" {
				if err == nil || !strings.Contains(err.Error(), c.bad) {
					t.Fatalf("err = %v, want one naming %s", err, c.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if got[i][0] != byte(i+1) {
					t.Errorf("signature %d is %d's", i, got[i][0]-1)
				}
			}
			if len(h.sent) != 1 || h.sent[0] != wire.TypeSignReq {
				t.Errorf("sent %v, want one sign request", h.sent)
			}
		})
	}
}

// TestServerLeftAborts: a chain server gone from the roster during the
// registration ends the epoch with the leader's abort to the whole chain,
// sent at once for an epoch not held here (no other abort to wait for).
func TestServerLeftAborts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		chain := chainOf(3)
		h := &fakeHost{gone: chain[2]}
		l := New(context.Background(), Config{Self: chain[0], Timing: &proto.Tunables{AbortSettle: time.Hour}}, h, chain, 7)
		_, err := l.awaitRegistrations(wire.Params{RegWindowMs: 1000})
		if err == nil || !strings.Contains(err.Error(), "left during registration") {
			t.Fatalf("err = %v", err)
		}
		if len(h.sent) != 1 || h.sent[0] != wire.TypeAbort || len(h.to[0]) != len(chain) {
			t.Fatalf("sent %v to %v, want one abort to the chain", h.sent, h.to)
		}
	})
}
