//go:build riffletest

package node

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// chargedNumbers is what s counts: for each server, the numbers of the
// epochs it is charged for, in order.
func (s *Server) chargedNumbers() map[peer.ID][]uint64 {
	out := map[peer.ID][]uint64{}
	for _, r := range s.ref.Records(true) {
		if p, err := peer.Decode(r.Peer); err == nil {
			out[p] = append(out[p], r.Number)
		}
	}
	return out
}

// heldEvidence is every piece of evidence s holds.
func (s *Server) heldEvidence() [][]byte {
	var out [][]byte
	for _, r := range s.ref.Records(false) {
		if r.Ev != nil && !r.Waived {
			out = append(out, r.Ev)
		}
	}
	return out
}

// TestReplayLogSameCharges: four servers run epochs in which one ends two
// epochs on private grounds (fault aborts), one passes nothing on for a
// round of two epochs (voids and aborts whose absence the others attest)
// and S_0 has a round not yet begun signed void (a claim nobody backs).
// The evidence of every server, taken together as one log, replayed on
// each server against its own certificates gives the same charges, equal
// to what each server counted, and the same exclusions.
func TestReplayLogSameCharges(t *testing.T) {
	t.Parallel()
	long(t)
	virtual(t, func(t *testing.T) {
		p := testParams(16)
		p.RoundLimitMs = 4000
		fn := startFounded(t, 4, 4, 2, p, nil)
		fn.waitEpochs(t, 0, 2*time.Minute)
		// By chain order (peer ids): the aborter last, the silent server
		// second, so that it stays a middle server once the aborter is out.
		byID := map[peer.ID]*Server{}
		for _, s := range fn.servers {
			byID[s.ID()] = s
		}
		var chain []peer.ID
		for n := fn.servers[0].cert.Top(); n > 0 && chain == nil; n-- {
			if c, ok := fn.servers[0].cert.Of(n); ok && len(c.Chain) == 4 {
				chain, _ = proto.CertChain(c)
			}
		}
		if chain == nil {
			t.Fatal("no certificate over the four servers")
		}
		aborter, silent := byID[chain[3]], byID[chain[1]]
		aborted := abortEpochs(t, aborter, 2)
		var mu sync.Mutex
		silenced := map[string]uint32{} // epoch → its silent round
		silent.hooks.Store(&serverHooks{silentOut: func(r uint32) bool {
			if r < 1 {
				return false
			}
			silent.mu.Lock()
			var cur string
			for id, e := range silent.epochs {
				if !e.ended && e.final != nil {
					cur = fmt.Sprintf("%x", id[:4])
				}
			}
			silent.mu.Unlock()
			mu.Lock()
			defer mu.Unlock()
			if at, ok := silenced[cur]; ok {
				return r == at
			}
			if len(silenced) >= 2 || cur == "" {
				return false
			}
			silenced[cur] = r
			return true
		}})
		if err := wait.Until(context.Background(), 3*time.Minute, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(aborted()) >= 2 && len(silenced) >= 2
		}); err != nil {
			t.Fatalf("the scenario did not run: aborted %v, silent rounds %v", aborted(), silenced)
		}
		// S_0 of a running epoch signs a round not yet begun void.
		if err := wait.Until(context.Background(), 2*time.Minute, func() bool {
			for _, s := range fn.servers {
				s.mu.Lock()
				var e *sepoch
				for _, x := range s.epochs {
					if x.final != nil && x.setupDone && !x.ended && x.pos == 0 && x.listHigh >= 1 && x.voids == 0 {
						e = x
					}
				}
				s.mu.Unlock()
				if e == nil {
					continue
				}
				s.mu.Lock()
				q := e.listHigh + uint32(e.final.Desc.Params.W) + roundsAhead - 1
				s.mu.Unlock()
				if q < e.final.Desc.Params.Rounds && s.voidRound(e, q) {
					return true
				}
			}
			return false
		}); err != nil {
			t.Fatal("no early void signed")
		}
		fn.waitEpochs(t, fn.epochs(), 2*time.Minute)
		// The clients leave, so that no epoch starts: the settle costs
		// only the relays of the evidence there is (in virtual time every
		// epoch run in it was CPU).
		for _, c := range fn.clients {
			c.Close()
		}
		time.Sleep(20 * time.Second) // relays settle
		var log [][]byte
		for _, s := range fn.servers {
			log = append(log, s.heldEvidence()...)
		}
		var first map[peer.ID][]uint64
		for i, s := range fn.servers {
			ctxOf := func(n uint64) (blame.Context, bool) {
				c, ok := s.cert.Of(n)
				if !ok {
					return blame.Context{}, false
				}
				ctx, err := blame.CertContext(c)
				return ctx, err == nil
			}
			got := blame.ReplayCharges(log, ctxOf)
			own := s.chargedNumbers()
			t.Logf("server %d: replayed %v, counted %v", i, short(got), short(own))
			if !reflect.DeepEqual(got, own) {
				t.Errorf("server %d counted %v, its replay of the log gives %v", i, short(own), short(got))
			}
			if i == 0 {
				first = got
			} else if !reflect.DeepEqual(got, first) {
				t.Errorf("server %d replays the log to %v, server 0 to %v", i, short(got), short(first))
			}
			for _, q := range fn.servers {
				if u, u0 := s.ref.OutUntil(q.ID()), fn.servers[0].ref.OutUntil(q.ID()); u != u0 {
					t.Errorf("server %d leaves %s out until %d, server 0 until %d", i, q.ID().ShortString(), u, u0)
				}
			}
		}
		if len(first[aborter.ID()]) < 2 {
			t.Errorf("the aborting server is charged %v, want its 2 aborts", first[aborter.ID()])
		}
		if len(first[silent.ID()]) < 1 {
			t.Errorf("the silent server is charged %v", first[silent.ID()])
		}
		if len(first) > 3 {
			t.Errorf("charges beyond the three that made claims or kept parts: %v", short(first))
		}
	})
}

func short(m map[peer.ID][]uint64) map[string][]uint64 {
	out := map[string][]uint64{}
	for p, n := range m {
		out[p.ShortString()] = n
	}
	return out
}
