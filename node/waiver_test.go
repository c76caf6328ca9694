package node

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestWaiverFromLog (§3, "The refusal budget"): two servers A and B of an
// epoch over A, B, X and P take X's signed fault abort of it; P is gone
// from A's roster and live in B's. A count is taken back only for a cause
// in the log, the same at both, never for a server's own view of the
// roster: before, A waived X's abort at once (P not live there) and B
// counted it for good ({} against {X: 1}); now both count it. Then X's
// abort saying P was down, with X's attestation: A adds its own at once
// (P not live there) and hands it on to B; both then take X's count back
// and charge P once ({P: 1}). B's own probe of P failing 30 s later adds
// nothing: P said hello to B after the epoch ended there, and an outage
// that began after the end is not attested (TestLateOutageNotAttested).
func TestWaiverFromLog(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		a, b := loneServer(t), loneServer(t)
		defer a.Close()
		defer b.Close()
		xKey, x := replayKey(t)
		_, p := replayKey(t)
		ids := []peer.ID{a.ID(), b.ID(), x, p}
		sortChain(ids)
		name := map[peer.ID]string{a.ID(): "A", b.ID(): "B", x: "X", p: "P"}
		id := fixtureChain(t, a, ids, chainPos(ids, a.ID())).v.ID
		eb := fixtureChain(t, b, ids, chainPos(ids, b.ID()))
		for _, s := range []*Server{a, b} {
			for _, q := range []peer.ID{a.ID(), b.ID(), x} {
				if q != s.ID() {
					s.roster.saw(q, "", nil)
				}
			}
		}
		b.roster.saw(p, "", nil) // P is live at B only
		a.h.AddAddrs(b.ID(), b.h.Addrs(), time.Hour)
		b.h.AddAddrs(a.ID(), a.h.Addrs(), time.Hour)
		abort := waiverAbort(t, xKey, id, 1, wire.AbortFault, 0)
		for _, s := range []*Server{a, b} {
			if _, _, err := s.evs().OnAbort(x, abort.Marshal()); err != nil {
				t.Fatalf("%s refused X's abort: %v", name[s.ID()], err)
			}
		}
		// Longer than any waiting a server might do.
		for range 60 {
			time.Sleep(time.Second)
			for _, q := range []peer.ID{a.ID(), x} {
				b.roster.saw(q, "", nil)
			}
			b.roster.saw(p, "", nil)
			a.roster.saw(b.ID(), "", nil)
			a.roster.saw(x, "", nil)
		}
		counts := func(s *Server) map[string]int {
			out := map[string]int{}
			for q, c := range s.ref.RefusalCounts() {
				out[name[q]] = c
			}
			return out
		}
		want := map[string]int{"X": 1}
		if ca, cb := counts(a), counts(b); !maps.Equal(ca, want) || !maps.Equal(cb, want) {
			t.Errorf("X's abort, P gone at A only: A counts %v, B %v; want %v at both", ca, cb, want)
		}

		// Then X's abort saying P was down, with X's attestation alone:
		// A, where P is not live, adds its own (two of the three
		// others: backed) at once and hands the grown evidence to B.
		j := chainPos(ids, p)
		xa := wire.Attest{AttestReq: wire.AttestReq{Epoch: id, Number: 1, Kind: wire.AbortDown, Round: uint32(j)}, Lacking: 1 << uint(j), Signer: uint16(chainPos(ids, x))}
		xa.Sig, _ = proto.Sign(xKey, blame.AttestDigest(&xa))
		down := &wire.Charge{Kind: wire.EvAbort, Number: 1, Item: waiverAbort(t, xKey, id, 1, wire.AbortDown, uint32(j)).Marshal(), Attests: []wire.Attest{xa}}
		for _, s := range []*Server{a, b} {
			if _, _, err := s.evs().OnCharge(x, down.Marshal()); err != nil {
				t.Fatalf("%s refused the down abort: %v", name[s.ID()], err)
			}
		}
		want = map[string]int{"P": 1}
		_ = wait.Until(context.Background(), time.Minute, func() bool { return maps.Equal(counts(a), want) && maps.Equal(counts(b), want) })
		if ca, cb := counts(a), counts(b); !maps.Equal(ca, want) || !maps.Equal(cb, want) {
			t.Errorf("with P's attested departure: A counts %v, B %v; want %v at both", ca, cb, want)
		}
		time.Sleep(30 * time.Second)
		b.roster.Expire(p) // B's probe of P failed (onServerDisconnect)
		b.mu.Lock()
		b.evs().AttestDown(evEp(eb), p)
		late := eb.down.Attested(j)
		b.mu.Unlock()
		if late != nil {
			t.Errorf("B attested P down at an outage that began after the epoch ended there")
		}
	})
}

// TestLateOutageNotAttested (reviewer rev40b): X signs an abort saying
// P was down while P is live at A and B, the others of the chain: no
// majority backs it and it counts against X. P restarts 30 s later, the
// epoch still held at both, and both probes of P fail. Before, both then
// attested P down, the abort was backed by all three others and the
// charge moved onto P ({P: 1} at both); now an outage that began after
// the epoch ended is not attested and both keep {X: 1}.
func TestLateOutageNotAttested(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		a, b := loneServer(t), loneServer(t)
		defer a.Close()
		defer b.Close()
		xKey, x := replayKey(t)
		_, p := replayKey(t)
		ids := []peer.ID{a.ID(), b.ID(), x, p}
		sortChain(ids)
		name := map[peer.ID]string{a.ID(): "A", b.ID(): "B", x: "X", p: "P"}
		eps := map[*Server]*sepoch{}
		for _, s := range []*Server{a, b} {
			eps[s] = fixtureChain(t, s, ids, chainPos(ids, s.ID()))
			for _, q := range ids {
				if q != s.ID() {
					s.roster.saw(q, "", nil)
				}
			}
		}
		id := eps[a].v.ID
		a.h.AddAddrs(b.ID(), b.h.Addrs(), time.Hour)
		b.h.AddAddrs(a.ID(), a.h.Addrs(), time.Hour)
		j := chainPos(ids, p)
		xa := wire.Attest{AttestReq: wire.AttestReq{Epoch: id, Number: 1, Kind: wire.AbortDown, Round: uint32(j)}, Lacking: 1 << uint(j), Signer: uint16(chainPos(ids, x))}
		xa.Sig, _ = proto.Sign(xKey, blame.AttestDigest(&xa))
		down := &wire.Charge{Kind: wire.EvAbort, Number: 1, Item: waiverAbort(t, xKey, id, 1, wire.AbortDown, uint32(j)).Marshal(), Attests: []wire.Attest{xa}}
		for _, s := range []*Server{a, b} {
			if _, _, err := s.evs().OnCharge(x, down.Marshal()); err != nil {
				t.Fatalf("%s refused the down abort: %v", name[s.ID()], err)
			}
		}
		counts := func(s *Server) map[string]int {
			out := map[string]int{}
			for q, c := range s.ref.RefusalCounts() {
				out[name[q]] = c
			}
			return out
		}
		want := map[string]int{"X": 1}
		for range 30 {
			time.Sleep(time.Second)
			for _, s := range []*Server{a, b} {
				s.roster.saw(p, "", nil) // P live, hello every second
			}
		}
		if ca, cb := counts(a), counts(b); !maps.Equal(ca, want) || !maps.Equal(cb, want) {
			t.Fatalf("X's unbacked down abort of a live P: A counts %v, B %v; want %v at both", ca, cb, want)
		}
		time.Sleep(5 * time.Second) // P restarts: no hello
		for _, s := range []*Server{a, b} {
			s.roster.Expire(p) // the probe of P failed (onServerDisconnect)
			s.mu.Lock()
			s.evs().AttestDown(evEp(eps[s]), p)
			s.mu.Unlock()
		}
		time.Sleep(5 * time.Second) // virtual: the grown evidence spread
		if ca, cb := counts(a), counts(b); !maps.Equal(ca, want) || !maps.Equal(cb, want) {
			t.Errorf("P's outage after the epoch ended: A counts %v, B %v; want %v at both (the charge moved)", ca, cb, want)
		}
	})
}

// chainPos is p's position in chain (-1: none).
func chainPos(chain []peer.ID, p peer.ID) int {
	for i, q := range chain {
		if q == p {
			return i
		}
	}
	return -1
}

// waiverAbort is priv's signed abort of epoch id (number n) of kind and
// round.
func waiverAbort(t *testing.T, priv crypto.PrivKey, id [32]byte, n uint64, kind uint8, round uint32) *wire.Abort {
	t.Helper()
	signer, _ := peer.IDFromPrivateKey(priv)
	a := &wire.Abort{Epoch: id, Number: n, Round: round, Kind: kind, Signer: []byte(signer), Reason: []byte("ended")}
	sig, err := proto.Sign(priv, proto.AbortDigest(a))
	if err != nil {
		t.Fatal(err)
	}
	a.Sig = sig
	return a
}
